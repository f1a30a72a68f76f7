/**
 * Local webhook listeners and sample events (docs/integrators.md "Receiving
 * webhooks on your machine"; docs/operations.md "Operator CLI"):
 *
 * - `webhook_subscriptions.listener_seen_at`: NULL for a subscription of the
 *   back office; set, the subscription is the local listener of a running
 *   `webhooks listen`, which delivers its deliveries itself and refreshes
 *   this time while it runs. The dispatcher never claims a listener's
 *   deliveries; a listener not seen for a while (its CLI died) is removed.
 * - `outbox_events.sample`: an event `webhooks trigger` made up (sample
 *   values), addressed to one subscription like `webhook.test`; its
 *   delivery body says `"sample":true`.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE webhook_subscriptions ADD COLUMN listener_seen_at timestamptz`,

  `CREATE INDEX webhook_subscriptions_listeners ON webhook_subscriptions (listener_seen_at)
     WHERE listener_seen_at IS NOT NULL`,

  `ALTER TABLE outbox_events ADD COLUMN sample boolean NOT NULL DEFAULT false`,

  // A sample is addressed to one subscription, like webhook.test; every other event to none.
  `ALTER TABLE outbox_events DROP CONSTRAINT outbox_events_check`,

  `ALTER TABLE outbox_events ADD CONSTRAINT outbox_events_check
     CHECK (((event = 'webhook.test') OR sample) = (subscription_id IS NOT NULL))`
]
