/**
 * The outbox (docs/integrators.md "Event catalog", docs/development.md
 * "apps/dispatcher"): the table
 * `outbox_events` that business writes append their webhook events to, in
 * their own transaction, and that the dispatcher reads. A statement trigger
 * sends NOTIFY on `OUTBOX_CHANNEL` with every insert; PostgreSQL delivers it
 * when the transaction commits (and drops it on rollback), so the dispatcher
 * wakes at once and never for an event that does not exist.
 *
 * Row: `school_id` (the webhook's account_id), `id` (bigint, increasing),
 * `event` (an `Events.EventName`), `payload` (json, the event's fields
 * in the catalog's order, exactly `Events.payloads[event]`), `created_at`,
 * `fanned_out_at` (NULL until the dispatcher has made its deliveries),
 * `traceparent` (the W3C `traceparent` of the span that wrote the event, or
 * NULL; docs/operations.md "Traces").
 */
import type { Events, Ids } from "@school/domain"
import * as Context from "effect/Context"
import * as Fiber from "effect/Fiber"
import type { SqlClient, Statement } from "effect/sql"
import * as Tracer from "effect/Tracer"

export const OUTBOX_CHANNEL = "outbox_events"

const TRACE_ID = /^[0-9a-f]{32}$/
const SPAN_ID = /^[0-9a-f]{16}$/

/**
 * The W3C `traceparent` of the span the running fiber is in
 * (docs/operations.md "Traces"): the trace a business write carries to its
 * deliveries. Null when no span leaves the process (Effect's in-memory
 * default tracer, or tracing off: a no-op span has no ids), when the span is
 * not sampled, or outside a fiber. Read synchronously, so a writer calls it
 * where it builds its statement, inside its Effect: no round trip, no
 * change to the writer's signature.
 */
export const currentTraceparent = (): string | null => {
  const fiber = Fiber.getCurrent()
  if (fiber === undefined || fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer) return null
  const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  if (span === undefined || !span.sampled) return null
  const traceId = span.traceId.padStart(32, "0")
  return TRACE_ID.test(traceId) && SPAN_ID.test(span.spanId) ? `00-${traceId}-${span.spanId}-01` : null
}

/**
 * An `INSERT … SELECT` appending one `event` per row of `from`, for use as a
 * member of a data-modifying CTE, so a write and its event are one
 * statement. `payload` is a json expression over `from`'s columns. The
 * events carry the `traceparent` of the span that builds the statement
 * (`currentTraceparent`).
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
  sql`INSERT INTO outbox_events (school_id, event, payload, traceparent)
      SELECT ${options.schoolId}, ${options.event}, ${options.payload}, ${currentTraceparent()}::text FROM ${options.from}
      RETURNING id`
