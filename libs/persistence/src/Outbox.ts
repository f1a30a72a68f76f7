/**
 * The outbox (spec 6.3, docs/development.md "apps/dispatcher"): the table
 * `outbox_events` that business writes append their webhook events to, in
 * their own transaction, and that the dispatcher reads. A statement trigger
 * sends NOTIFY on `OUTBOX_CHANNEL` with every insert; PostgreSQL delivers it
 * when the transaction commits (and drops it on rollback), so the dispatcher
 * wakes at once and never for an event that does not exist.
 *
 * Row: `school_id` (the webhook's account_id), `id` (bigint, increasing),
 * `event` (an `Events.EventName`), `payload` (json, the fields of spec 6.3
 * in its order, exactly `Events.payloads[event]`), `created_at`,
 * `fanned_out_at` (NULL until the dispatcher has made its deliveries).
 */
import type { Events, Ids } from "@school/domain"
import type { SqlClient, Statement } from "effect/sql"

export const OUTBOX_CHANNEL = "outbox_events"

/**
 * An `INSERT … SELECT` appending one `event` per row of `from`, for use as a
 * member of a data-modifying CTE, so a write and its event are one
 * statement. `payload` is a json expression over `from`'s columns.
 */
export const insertEvents = (
  sql: SqlClient.SqlClient,
  options: {
    readonly schoolId: Ids.SchoolId
    readonly event: Events.EventName
    readonly payload: Statement.Fragment
    readonly from: Statement.Fragment
  }
): Statement.Fragment =>
  sql`INSERT INTO outbox_events (school_id, event, payload)
      SELECT ${options.schoolId}, ${options.event}, ${options.payload} FROM ${options.from}
      RETURNING id`
