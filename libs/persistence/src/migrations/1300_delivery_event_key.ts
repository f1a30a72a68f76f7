/**
 * One index per delivery fewer (docs/decisions.md "The delivery queue"): the
 * fan-out's uniqueness and the lookups by event share one unique index.
 *
 * Before, a delivery was in two indexes that both begin with its event:
 * `webhook_deliveries_fan_out` (school_id, event_id, subscription_id), unique
 * over the fan-out's rows only (`WHERE resend_of IS NULL`: a resend repeats its
 * event and subscription), and `webhook_deliveries_event` (school_id,
 * event_id) over every row, which the foreign key from outbox_events, the
 * purge, the fan-out's dropped events and recovery read. The partial index
 * cannot serve them (it leaves resends out). Every row version of a delivery
 * (its insert, its claim, its record: none is HOT) wrote an entry to each.
 *
 * `resend_key` tells the rows apart instead of a predicate: 0 for the
 * delivery the fan-out makes, a number of its own sequence for each resend
 * and recovery. `webhook_deliveries_event_key` (school_id, event_id,
 * subscription_id, resend_key) is then unique over every row, and its prefix
 * is the event's. `resend_key` is set at insert and never changes, so unlike
 * `resend_of` (set to NULL if the delivery it names were deleted) it cannot
 * turn two resends into two fan-out rows.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE webhook_deliveries ADD COLUMN resend_key bigint NOT NULL DEFAULT 0 CHECK (resend_key >= 0)`,
  `CREATE SEQUENCE webhook_deliveries_resend_key`,
  `UPDATE webhook_deliveries SET resend_key = nextval('webhook_deliveries_resend_key') WHERE resend_of IS NOT NULL`,
  `CREATE UNIQUE INDEX webhook_deliveries_event_key ON webhook_deliveries (school_id, event_id, subscription_id, resend_key)`,
  `DROP INDEX webhook_deliveries_fan_out`,
  `DROP INDEX webhook_deliveries_event`
]
