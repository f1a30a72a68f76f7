/**
 * Webhook delivery shared fairly between schools, and bounded per school
 * (docs/decisions.md "Fair delivery", "Events while disabled", "Delivery
 * ids"; docs/back-office.md "Webhook limits"):
 *
 * - `webhook_deliveries.status` gains `skipped`: an event a disabled
 *   subscription would have received, journaled by the fan-out with no
 *   attempt (finished at once, so the purge and the journal's 50 treat it
 *   like any finished delivery). `recover` with `which: "skipped"` queues
 *   them again.
 * - `webhook_deliveries.public_id`: the delivery's opaque id, `msg_` and
 *   32 hex digits of a random UUID (122 random bits), sent as `webhook-id`
 *   and `X-Service-Delivery` on every attempt. The numeric `id` stays the
 *   back office's handle; it is never sent to a receiver. No index: nothing
 *   looks a delivery up by it, and 122 random bits do not collide in any
 *   volume this table will hold.
 * - `webhook_deliveries.postponements`: how many attempts in a row failed
 *   on the dispatcher's side (no descriptor or socket, its resolver down),
 *   each retried a second later without using up an attempt; past a bound
 *   such a failure counts as an attempt after all, so a receiver whose own
 *   name server fails in a way that looks like ours is not retried forever.
 * - `webhook_subscriptions.action_times`: when the last `test`, `resend`
 *   and `recover` calls on the subscription were accepted (at most
 *   WEBHOOK_ACTIONS_PER_MINUTE of them within the last minute are kept), for
 *   the per-subscription limit. Written under the subscription's row lock,
 *   which every such call takes anyway; trimmed on every write, so it never
 *   grows past the limit.
 * - `webhook_deliveries_skipped`: a subscription's skipped deliveries by the
 *   time they were journaled, for `skipped_events` and `recover` with
 *   `which: "skipped"` (a range of skipped rows, not the subscription's
 *   whole journal).
 * - `notifications_subscription`, `outbox_events_subscription`: the rows
 *   naming a subscription, so deleting one (`DELETE /webhooks/{id}`) finds
 *   them, and checks its foreign keys, with an index.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check`,
  `ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check
     CHECK (status IN ('pending', 'delivered', 'failed', 'skipped'))`,
  `ALTER TABLE webhook_deliveries ADD COLUMN public_id text NOT NULL
     DEFAULT 'msg_' || replace(gen_random_uuid()::text, '-', '')`,
  `ALTER TABLE webhook_deliveries ADD COLUMN postponements smallint NOT NULL DEFAULT 0 CHECK (postponements >= 0)`,
  `ALTER TABLE webhook_subscriptions ADD COLUMN action_times timestamptz[] NOT NULL DEFAULT '{}'`,
  `CREATE INDEX webhook_deliveries_skipped ON webhook_deliveries (school_id, subscription_id, finished_at)
     WHERE status = 'skipped'`,
  `CREATE INDEX notifications_subscription ON notifications (school_id, subscription_id) WHERE subscription_id IS NOT NULL`,
  `CREATE INDEX outbox_events_subscription ON outbox_events (school_id, subscription_id) WHERE subscription_id IS NOT NULL`
]
