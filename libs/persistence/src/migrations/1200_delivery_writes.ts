/**
 * Fewer index entries per webhook delivery (docs/decisions.md "Webhooks"),
 * and none the dispatcher's hot statements can be misled by:
 *
 * - `webhook_deliveries_due` (next_attempt_at of every pending delivery)
 *   goes. Every delivery put an entry in it at the fan-out and another at its
 *   claim, for one reader that wants the future only (DeliveryQueue
 *   `nextDue`: when the next waiting delivery falls due); and a planner whose
 *   statistics say pending deliveries are rare (the steady state: most rows
 *   are delivered) walked it whole inside the claim when a backlog came. The
 *   claim reads `webhook_deliveries_pending` (by subscription); the gauges'
 *   count of due work is a range of the same index.
 * - `webhook_deliveries_waiting`: the pending deliveries due later than they
 *   were made (a retry, a postponed attempt, a row written with a later due
 *   time), by due time. A first attempt, a resend and a recovery are due when
 *   they are made (`next_attempt_at = created_at`) and never enter it, so the
 *   fan-out's insert and the claim's update add nothing to it; `nextDue` is
 *   its first entry past now (one probe).
 */
export const statements: ReadonlyArray<string> = [
  `DROP INDEX webhook_deliveries_due`,
  `CREATE INDEX webhook_deliveries_waiting ON webhook_deliveries (next_attempt_at)
     WHERE status = 'pending' AND next_attempt_at > created_at`
]
