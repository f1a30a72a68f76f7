/**
 * The dispatcher's indexes (docs/decisions.md "Webhooks"): what
 * the delivery queue's claim reads (libs/persistence/src/DeliveryQueue.ts).
 *
 * - `webhook_deliveries_pending`: pending deliveries by subscription, then
 *   due time. The claim walks the subscriptions that have pending work (a
 *   loose index scan: one probe per subscription, however long its backlog)
 *   and takes each one's due deliveries in due order, so a subscription with
 *   a backlog (a hanging receiver) never hides another's work behind it.
 * - `webhook_deliveries_leased`: the deliveries held by a dispatcher, by
 *   subscription, to count a subscription's in-flight attempts (the
 *   per-subscription cap). The dispatcher clears `lease_until` when it
 *   records an attempt, so this index holds only the work in flight (and
 *   the leases of a dispatcher that died, until they are taken over).
 * - `webhook_deliveries_finished`: delivered and failed deliveries by the
 *   time they ended, for the purge (DELIVERY_RETENTION).
 * - `webhook_deliveries_event`: the deliveries of an event, so deleting an
 *   event (the purge) checks its foreign key with an index, not a scan.
 * - `webhook_deliveries_resends`: the resends of a delivery (few), so the
 *   purge keeps a delivery a resend still names and the foreign key
 *   `resend_of` is checked with an index.
 */
export const statements: ReadonlyArray<string> = [
  `CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (school_id, subscription_id, next_attempt_at)
     WHERE status = 'pending'`,
  `CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (school_id, subscription_id)
     WHERE lease_until IS NOT NULL`,
  `CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending'`,
  `CREATE INDEX webhook_deliveries_event ON webhook_deliveries (school_id, event_id)`,
  `CREATE INDEX webhook_deliveries_resends ON webhook_deliveries (school_id, resend_of) WHERE resend_of IS NOT NULL`
]
