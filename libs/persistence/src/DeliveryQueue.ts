/**
 * The webhook delivery queue (docs/integrators.md "Receiving webhooks";
 * docs/decisions.md "Webhooks"; docs/development.md "apps/dispatcher"): the dispatcher's every
 * statement, each one round trip for a whole batch.
 *
 * - `fanOut`: outbox events → one delivery per subscription of the school
 *   that ticked the event (`webhook.test`: the one subscription it names);
 *   a disabled subscription's delivery is journaled as `skipped` (finished,
 *   no attempt; docs/decisions.md "Events while disabled"). One statement
 *   inserts the deliveries and marks the events (`fanned_out_at`), so a
 *   crash cannot split the two, and the unique index (school, event,
 *   subscription, `resend_key` 0: migration 1300) with ON CONFLICT DO
 *   NOTHING makes a repeat harmless. An event no subscription
 *   takes is deleted there and then (the outbox is a queue, not an archive).
 * - `claim`: one round of libs/domain/src/FairShare.ts in one statement:
 *   the subscriptions with pending work (a loose index scan), what each
 *   one's in-flight cap leaves (`perSubscription` minus its live leases,
 *   but for the claimer's own whose attempts ended: `finished`),
 *   each one's due deliveries by due time (a retry due at T before a first
 *   attempt created after T), then the fair share between schools: a
 *   school's subscriptions take turns, a school's j-th pick is at level
 *   (what this dispatcher holds of it) + j, lower levels first, rotating
 *   among schools at the same level, and no school past its share of the
 *   capacity. `FOR UPDATE SKIP LOCKED`, each leased (`lease_until`) for a
 *   little longer than WEBHOOK_TIMEOUT, and a first attempt's body built and
 *   stored by the same `UPDATE`, before anything is sent (so a crash after
 *   sending cannot produce a second, different body; one row version per
 *   claim, not two). Deliveries of a disabled subscription are not claimed.
 *   Every part is keyed by `school_id` first: the form a database sharded by
 *   school routes (docs/operations.md "Past one database: distributing by `school_id` (Citus)").
 * - `record`: the attempts (journal rows), each delivery's next state
 *   (`delivered`, `failed`, or pending again at now + the retry plan's
 *   pause) and its lease cleared, only where the lease is still the one the
 *   claim gave; then the subscriptions' transitions: `active` →
 *   `problematic` on a delivery's final failure, with one notification per
 *   full-access employee (owner, administrator) per transition, and
 *   `problematic` → `active` on a success. A disabled subscription keeps its
 *   status. A `postponed` attempt (it failed on our side) only goes back to
 *   pending at now + its pause: no journal row, no attempt used.
 * - `release`: gives leases back (a dispatcher stopping with work unsent).
 * - `purge`: delivered and failed deliveries older than the retention, in
 *   small batches, keeping the last `keep` (50) per subscription and any
 *   delivery a resend names; an event goes with its last delivery.
 *
 * - `wakeups`: the outbox's NOTIFY (one per inserting statement, delivered
 *   at commit) as a Stream, on a connection of its own.
 *
 * SQL errors stay typed (`SqlError`): the dispatcher outlives a database
 * that goes away. Rows are decoded here; a row that does not decode is a
 * defect.
 */
import { PgClient } from "@effect/sql-pg"
import type { Scope } from "effect"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { SqlError } from "effect/sql"
import * as SqlClient from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import { DeliveryPublicId } from "@school/domain/WebhookSignature"
import { OUTBOX_CHANNEL } from "./Outbox.ts"

/** A claimed delivery: what one attempt needs. */
export const Claimed = Schema.Struct({
  school_id: Schema.Int,
  id: Schema.Int,
  /** The opaque id receivers see (`webhook-id`, `X-Service-Delivery`). */
  public_id: DeliveryPublicId,
  subscription_id: Schema.Int,
  event: Schema.String,
  /** This attempt's number (1 for the first). */
  attempt: Schema.Int,
  /** Attempts in a row that failed on the dispatcher's side since the last real one. */
  postponements: Schema.Int,
  /** The lease the claim gave, as PostgreSQL spells it: the token `record` checks. */
  lease: Schema.String,
  /** The stored body (built by the claim of the first attempt): every attempt sends these bytes. */
  body: Schema.String,
  url: Schema.String,
  secret_ciphertext: Schema.Uint8Array,
  /** Its school's level in the claim's fair share (libs/domain/src/FairShare.ts): where the rotation goes on. */
  level: Schema.Int,
  /** The W3C traceparent of the span that wrote the event (docs/operations.md "Traces"); never sent to the receiver. */
  traceparent: Schema.NullOr(Schema.String)
})
export type Claimed = typeof Claimed.Type

/** What became of one attempt. */
export interface AttemptRecord {
  readonly schoolId: number
  readonly id: number
  readonly lease: string
  readonly attempt: number
  /** When the attempt started. */
  readonly at: Date
  readonly responseCode: number | null
  readonly error: string | null
  readonly durationMs: number
  /** Up to 4 KiB of the response body. */
  readonly responseBody: string | null
  /**
   * `retry`: pending again, due `pauseMs` after the record is written.
   * `postponed`: the attempt failed on our side (docs/decisions.md "Fair
   * delivery"): no journal entry, the attempt not counted, the subscription
   * untouched; pending again, due `pauseMs` after the record is written.
   */
  readonly outcome: "delivered" | "retry" | "failed" | "postponed"
  readonly pauseMs: number
}

export interface Recorded {
  /** Attempts written (an attempt whose lease was lost meanwhile is not). */
  readonly recorded: number
  /** Subscriptions that became problematic. */
  readonly problematic: number
  /** Notifications written for them. */
  readonly notified: number
  /** Subscriptions back to active. */
  readonly recovered: number
}

/** A claim round (libs/domain/src/FairShare.ts: the SQL applies `allocate` with `shareOf`). */
/** A delivery whose attempt has ended and whose record has not come back yet (its lease still stands). */
export interface EndedLease {
  readonly school: number
  readonly id: number
}

export interface ClaimOptions {
  /** Deliveries this round may take. */
  readonly limit: number
  readonly perSubscription: number
  readonly leaseMs: number
  /** What the dispatcher may hold in all (its slots and its claim-ahead), shared between active schools. */
  readonly capacity: number
  /** Slots no one school may take (FairShare.reserveOf). */
  readonly reserve: number
  /** Schools active lately beside those with due work: they count in the share. */
  readonly active: ReadonlyArray<number>
  /** What the dispatcher holds per school (claimed and not yet recorded). */
  readonly holding: ReadonlyArray<{ readonly school: number; readonly holds: number }>
  /** The school served last (0: none): the rotation starts after it. */
  readonly after: number
  /**
   * This dispatcher's leases whose attempts have ended and wait for their
   * record: no longer in flight, so they do not count against their
   * subscription's cap (absent: none).
   */
  readonly finished?: ReadonlyArray<EndedLease>
}

export interface PurgeOptions {
  readonly retentionMs: number
  readonly keep: number
  readonly batch: number
}

const decodeClaimed = Schema.decodeUnknownEffect(Schema.Array(Claimed))
const FanOutRow = Schema.Struct({
  events: Schema.Int,
  deliveries: Schema.Int,
  skipped: Schema.Int,
  traceparents: Schema.optionalKey(Schema.Array(Schema.String))
})
const decodeFanOut = Schema.decodeUnknownEffect(Schema.Array(FanOutRow))
const RecordedRow = Schema.Struct({
  recorded: Schema.Int,
  problematic: Schema.Int,
  notified: Schema.Int,
  recovered: Schema.Int
})
const decodeRecorded = Schema.decodeUnknownEffect(Schema.Array(RecordedRow))
const PurgedRow = Schema.Struct({ deliveries: Schema.Int, events: Schema.Int })
const decodePurged = Schema.decodeUnknownEffect(Schema.Array(PurgedRow))
const NextDueRow = Schema.Struct({ wait_ms: Schema.NullOr(Schema.Number) })
const decodeNextDue = Schema.decodeUnknownEffect(Schema.Array(NextDueRow))
const GaugesRow = Schema.Struct({
  due: Schema.Int,
  oldest_due_age_s: Schema.Number,
  problematic: Schema.Int,
  fan_out_lag_s: Schema.Number
})
const decodeGauges = Schema.decodeUnknownEffect(Schema.Array(GaugesRow))
const decodeNow = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ ms: Schema.Number })))
const decodeCount = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ n: Schema.Int })))

/** The dispatcher's backlog at one moment, for /metrics (docs/operations.md "Metrics"). */
export interface Gauges {
  /** Deliveries due and not leased: waiting for a dispatcher. */
  readonly due: number
  /** Seconds since the oldest of them fell due (0: none). */
  readonly oldestDueAgeSeconds: number
  /** Subscriptions in status `problematic`. */
  readonly problematic: number
  /** Seconds since the oldest outbox event not yet fanned out was written (0: none). */
  readonly fanOutLagSeconds: number
}

/**
 * A delivery's body (docs/decisions.md "Webhooks"), the one definition:
 * `{"event":…,"account_id":…,"payload":…,"timestamp":…}` as one SQL
 * expression over the given expressions (the event's name as text, the
 * school's id, the payload as stored, the first attempt's time as `api_ts`
 * writes it). The payload's stored JSON text is spliced in unchanged, so
 * its numbers keep their exact text. The claim builds the body with it in
 * the statement that leases the delivery: no extra statement, and no
 * payload sent to the dispatcher and back. `WebhookSignature.deliveryBody`
 * (libs/domain) spells the same bytes for tests and benchmarks;
 * test/dispatcher/delivery-body.test.ts holds the two equal.
 */
export const deliveryBodySql = (sql: SqlClient.SqlClient, of: {
  readonly event: Fragment
  readonly accountId: Fragment
  readonly payload: Fragment
  readonly timestamp: Fragment
  /** A boolean expression: true for a sample event (`webhooks trigger`), whose body ends with `"sample":true`. */
  readonly sample?: Fragment
}): Fragment =>
  sql`'{"event":' || to_json(${of.event})::text || ',"account_id":' || (${of.accountId})::text ||
    ',"payload":' || (${of.payload})::text || ',"timestamp":' || to_json(${of.timestamp})::text || ${
    of.sample === undefined ? sql`` : sql`CASE WHEN ${of.sample} THEN ',"sample":true' ELSE '' END ||`
  } '}'`

/**
 * A first attempt's body as a claim stores it, over the claimed delivery `d` and its event `e`: the
 * first attempt's time as the API writes times. Shared by the dispatcher's claim and a local
 * listener's (Listeners.ts).
 */
export const firstBodySql = (sql: SqlClient.SqlClient): Fragment =>
  deliveryBodySql(sql, {
    event: sql.literal("d.event"),
    accountId: sql.literal("d.school_id"),
    payload: sql.literal("e.payload"),
    timestamp: sql.literal("api_ts(now())"),
    sample: sql.literal("e.sample")
  })

/**
 * A claim's lease, over the CTE `picked` (`school_id`, `id`) of the deliveries it takes: each leased
 * for `leaseMs`, a first attempt's body built and stored (`firstBodySql`), joined to its
 * subscription `w` and event `e` for the RETURNING the caller adds (`claimedColumnsSql`). Shared
 * by the dispatcher's claim and a local listener's (Listeners.ts).
 */
export const leasePickedSql = (sql: SqlClient.SqlClient, leaseMs: number): Fragment =>
  sql`
    UPDATE webhook_deliveries d
    SET lease_until = now() + ${leaseMs}::int * interval '1 millisecond',
        -- The body, built once (deliveryBodySql): the payload's stored JSON text spliced in
        -- unchanged (exact numbers), the first attempt's time (api_ts: microseconds, Z).
        body = coalesce(d.body, ${firstBodySql(sql)})
    FROM picked p, webhook_subscriptions w, outbox_events e
    WHERE d.school_id = p.school_id AND d.id = p.id
      AND w.school_id = d.school_id AND w.id = d.subscription_id
      AND e.school_id = d.school_id AND e.id = d.event_id`

/** What a claim returns of a delivery `d` (leased), its subscription `w` and its event `e`: a `Claimed` but its level. */
export const claimedColumnsSql = (sql: SqlClient.SqlClient): Fragment =>
  sql.literal(`d.school_id, d.id::float8 AS id, d.public_id, d.subscription_id, d.event, d.attempts + 1 AS attempt,
            d.postponements::int AS postponements,
            d.lease_until::text AS lease, d.body,
            w.url, w.secret_ciphertext, e.traceparent`)

/** The first row a statement always returns one of; its absence is a defect. */
const single = <A>(rows: ReadonlyArray<A>): Effect.Effect<A> =>
  rows[0] === undefined ? Effect.die(new Error("expected one row")) : Effect.succeed(rows[0])

/**
 * The notification a full-access employee gets when a subscription becomes
 * problematic (docs/back-office.md "Webhooks"), as a `format()` template: the subscription's id,
 * then its URL.
 */
export const PROBLEMATIC_MESSAGE = "Webhook subscription %s (%s) is problematic: a delivery failed on every attempt. " +
  "It keeps receiving new events; check the receiver, then resend or recover the failed deliveries."

export class DeliveryQueue extends Context.Service<DeliveryQueue, {
  /**
   * Fans out up to `limit` events: how many events, deliveries to make, and deliveries journaled as skipped;
   * with `traceparents`, also the events' traceparents, for the fan-out's span to link to
   * (docs/operations.md "Traces").
   */
  fanOut(limit: number, options?: { readonly traceparents: boolean }): Effect.Effect<{
    readonly events: number
    readonly deliveries: number
    readonly skipped: number
    readonly traceparents?: ReadonlyArray<string>
  }, SqlError.SqlError>
  claim(options: ClaimOptions): Effect.Effect<ReadonlyArray<Claimed>, SqlError.SqlError>
  record(attempts: ReadonlyArray<AttemptRecord>): Effect.Effect<Recorded, SqlError.SqlError>
  release(leases: ReadonlyArray<{ readonly schoolId: number; readonly id: number; readonly lease: string }>): Effect.Effect<number, SqlError.SqlError>
  /** Milliseconds until the next pending delivery falls due (None: nothing waits), at most `cap`. */
  nextDue(capMs: number): Effect.Effect<number | null, SqlError.SqlError>
  purge(options: PurgeOptions): Effect.Effect<{ readonly deliveries: number; readonly events: number }, SqlError.SqlError>
  /** The database's clock, epoch milliseconds (`clock_timestamp()`: the moment the statement reads it). */
  databaseNow(): Effect.Effect<number, SqlError.SqlError>
  /** The backlog's gauges, in ONE statement (each part an index probe or range: see the comment there). */
  gauges(): Effect.Effect<Gauges, SqlError.SqlError>
  /**
   * Succeeds once PostgreSQL has confirmed the `LISTEN` on the outbox's
   * channel, with one element per notification; the stream fails when the
   * connection is lost. Never succeeds without a `PgClient`.
   */
  readonly wakeups: Effect.Effect<Stream.Stream<void, SqlError.SqlError>, SqlError.SqlError, Scope.Scope>
}>()("school/persistence/DeliveryQueue") {
  static readonly layer = Layer.effect(
    DeliveryQueue,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pg = yield* Effect.serviceOption(PgClient.PgClient)

      const wakeups = Option.match(pg, {
        onNone: () => Effect.never,
        onSome: (client) => Effect.map(client.listen(OUTBOX_CHANNEL), (queue) => Stream.fromQueue(queue).pipe(Stream.as(undefined)))
      })

      const fanOut = (limit: number, options?: { readonly traceparents: boolean }) =>
        sql`
          WITH events AS (
            SELECT e.school_id, e.id, e.event, e.subscription_id, e.traceparent
            FROM outbox_events e
            WHERE e.fanned_out_at IS NULL
            ORDER BY e.id
            LIMIT ${limit}
            FOR UPDATE SKIP LOCKED
          ), targets AS (
            -- KEY SHARE: a subscription being deleted meanwhile is waited for and then left out,
            -- instead of failing the batch on the deliveries' foreign key.
            SELECT e.school_id, e.id AS event_id, e.event, s.id AS subscription_id, s.status = 'disabled' AS skipped
            FROM events e
            JOIN webhook_subscriptions s
              ON s.school_id = e.school_id
             AND CASE WHEN e.subscription_id IS NULL THEN e.event = ANY (s.events) ELSE s.id = e.subscription_id END
            FOR KEY SHARE OF s
          ), made AS (
            -- A disabled subscription's delivery is journaled as skipped: finished, never attempted.
            INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, status, finished_at)
            SELECT school_id, subscription_id, event_id, event,
                   CASE WHEN skipped THEN 'skipped' ELSE 'pending' END, CASE WHEN skipped THEN now() END
            FROM targets ORDER BY event_id, subscription_id
            -- resend_key 0: the fan-out's delivery of this event to this subscription (migration 1300).
            ON CONFLICT (school_id, event_id, subscription_id, resend_key) DO NOTHING
            RETURNING status
          ), marked AS (
            -- Driven by the targets (a primary-key probe each) and the events without one found in a
            -- hashed list: never a scan of one CTE per row of the other, which is quadratic in the batch
            -- when the planner takes a CTE for one row (a generic plan, a table just emptied).
            UPDATE outbox_events o SET fanned_out_at = now()
            FROM (SELECT DISTINCT school_id, event_id FROM targets) t
            WHERE o.school_id = t.school_id AND o.id = t.event_id
            RETURNING 1
          ), dropped AS (
            DELETE FROM outbox_events o
            USING events e
            WHERE o.school_id = e.school_id AND o.id = e.id
              AND (e.school_id, e.id) NOT IN (SELECT t.school_id, t.event_id FROM targets t)
              AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.school_id = e.school_id AND d.event_id = e.id)
            RETURNING 1
          )
          SELECT (SELECT count(*) FROM events)::int AS events,
                 (SELECT count(*) FROM made WHERE status = 'pending')::int AS deliveries,
                 (SELECT count(*) FROM made WHERE status = 'skipped')::int AS skipped
                 ${
          options?.traceparents === true
            ? sql`, (SELECT coalesce(json_agg(traceparent), '[]'::json) FROM events WHERE traceparent IS NOT NULL) AS traceparents`
            : sql``
        }`.pipe(
          Effect.flatMap((rows) => Effect.orDie(decodeFanOut(rows))),
          Effect.flatMap(single)
        )

      const claim = (options: ClaimOptions) => {
        const finished = options.finished ?? []
        return sql`
          WITH RECURSIVE subs AS (
            -- The subscriptions with pending work: one index probe each (a loose index scan).
            (SELECT d.school_id, d.subscription_id FROM webhook_deliveries d
             WHERE d.status = 'pending'
             ORDER BY d.school_id, d.subscription_id LIMIT 1)
            UNION ALL
            SELECT n.school_id, n.subscription_id
            FROM subs s CROSS JOIN LATERAL (
              SELECT d.school_id, d.subscription_id FROM webhook_deliveries d
              WHERE d.status = 'pending' AND (d.school_id, d.subscription_id) > (s.school_id, s.subscription_id)
              ORDER BY d.school_id, d.subscription_id LIMIT 1
            ) n
          ), open AS MATERIALIZED (
            -- What each subscription's cap leaves (counted once: MATERIALIZED, where an inlined CTE would
            -- count it again for the LIMIT below); disabled subscriptions wait; a local listener's
            -- deliveries are its CLI's (Listeners.ts), never a dispatcher's.
            SELECT s.school_id, s.subscription_id, greatest(0, ${options.perSubscription}::int - (
              -- webhook_deliveries_leased (only a pending delivery holds a lease: no status condition, which
              -- would let the planner walk the subscription's whole backlog in webhook_deliveries_pending).
              SELECT count(*) FROM webhook_deliveries l
              WHERE l.school_id = s.school_id AND l.subscription_id = s.subscription_id
                AND l.lease_until IS NOT NULL AND l.lease_until > now()
                -- The cap bounds requests in flight: an attempt that ended and waits for its record is not
                -- one. Named by the dispatcher that holds it, so another's leases always count.
                AND NOT EXISTS (
                  SELECT 1 FROM unnest(${finished.map((f) => f.school)}::int[], ${finished.map((f) => f.id)}::int8[])
                    AS f(school_id, id)
                  WHERE f.school_id = l.school_id AND f.id = l.id
                )
            ))::int AS room
            FROM subs s
            JOIN webhook_subscriptions w
              ON w.school_id = s.school_id AND w.id = s.subscription_id AND w.status <> 'disabled'
             AND w.listener_seen_at IS NULL
          ), candidates AS (
            -- Each subscription's due work by due time, retries and first attempts alike, within its room.
            SELECT o.school_id, o.subscription_id, c.id, c.next_attempt_at,
                   row_number() OVER (PARTITION BY o.school_id, o.subscription_id ORDER BY c.next_attempt_at, c.id) AS turn
            FROM open o CROSS JOIN LATERAL (
              SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
              WHERE d.school_id = o.school_id AND d.subscription_id = o.subscription_id
                AND d.status = 'pending' AND d.next_attempt_at <= now()
                AND (d.lease_until IS NULL OR d.lease_until <= now())
              ORDER BY d.next_attempt_at
              LIMIT least(o.room, ${options.limit}::int)
              FOR UPDATE SKIP LOCKED
            ) c
            WHERE o.room > 0
          ), share AS (
            -- libs/domain/src/FairShare.ts shareOf: the capacity over the active schools.
            SELECT greatest(1, least(${options.capacity}::int - ${options.reserve}::int,
                                     ceil(${options.capacity}::numeric / greatest(1, count(*)))))::int AS share
            FROM (SELECT school_id FROM candidates UNION SELECT unnest(${options.active}::int[])) a
          ), ranked AS (
            -- FairShare.allocate: a school's subscriptions take turns; its j-th pick is at level holds + j.
            SELECT c.school_id, c.id, coalesce(h.holds, 0) + row_number() OVER (
                     PARTITION BY c.school_id ORDER BY c.turn, c.next_attempt_at, c.id) AS level
            FROM candidates c
            LEFT JOIN unnest(${options.holding.map((h) => h.school)}::int[], ${options.holding.map((h) => h.holds)}::int[])
              AS h(school_id, holds) ON h.school_id = c.school_id
          ), picked AS (
            SELECT r.school_id, r.id, r.level FROM ranked r, share
            WHERE r.level <= share.share
            ORDER BY r.level, r.school_id <= ${options.after}::int, r.school_id
            LIMIT ${options.limit}
          )
          ${leasePickedSql(sql, options.leaseMs)}
          RETURNING ${claimedColumnsSql(sql)}, p.level::int AS level`.pipe(
          Effect.flatMap((rows) => Effect.orDie(decodeClaimed(rows)))
        )
      }

      const record = (attempts: ReadonlyArray<AttemptRecord>) =>
        attempts.length === 0
          ? Effect.succeed<Recorded>({ recorded: 0, problematic: 0, notified: 0, recovered: 0 })
          : sql`
              WITH r AS (
                SELECT * FROM unnest(
                  ${attempts.map((a) => a.schoolId)}::int[],
                  ${attempts.map((a) => a.id)}::int8[],
                  ${attempts.map((a) => a.lease)}::text[],
                  ${attempts.map((a) => a.attempt)}::int[],
                  ${attempts.map((a) => a.at.toISOString())}::text[],
                  ${attempts.map((a) => a.responseCode ?? -1)}::int[],
                  ${attempts.map((a) => a.error ?? "")}::text[],
                  ${attempts.map((a) => a.durationMs)}::int[],
                  ${attempts.map((a) => a.responseBody ?? "")}::text[],
                  ${attempts.map((a) => a.responseBody === null)}::bool[],
                  ${attempts.map((a) => a.outcome)}::text[],
                  ${attempts.map((a) => a.pauseMs)}::int[]
                ) AS r(school_id, id, lease, attempt, at, code, error, duration_ms, body, no_body, outcome, pause_ms)
              ), done AS (
                UPDATE webhook_deliveries d
                SET attempts = CASE WHEN r.outcome = 'postponed' THEN d.attempts ELSE r.attempt END,
                    postponements = CASE WHEN r.outcome = 'postponed' THEN d.postponements + 1 ELSE 0 END,
                    status = CASE WHEN r.outcome IN ('retry', 'postponed') THEN 'pending' ELSE r.outcome END,
                    next_attempt_at = CASE WHEN r.outcome IN ('retry', 'postponed')
                      THEN now() + r.pause_ms * interval '1 millisecond' ELSE d.next_attempt_at END,
                    finished_at = CASE WHEN r.outcome IN ('retry', 'postponed') THEN NULL ELSE now() END,
                    lease_until = NULL,
                    response_code = CASE WHEN r.outcome = 'postponed' THEN d.response_code ELSE nullif(r.code, -1) END,
                    last_attempt_at = CASE WHEN r.outcome = 'postponed' THEN d.last_attempt_at ELSE r.at::timestamptz END
                FROM r
                -- The primary key, then the lease (only a pending delivery holds one: a claim leases
                -- pending deliveries, and every record and release clears the lease). No status
                -- condition: it would let the planner walk a school's pending entries instead of
                -- probing the key when the table's statistics are off (a table just emptied).
                WHERE d.school_id = r.school_id AND d.id = r.id
                  AND d.lease_until = r.lease::timestamptz
                RETURNING d.school_id, d.id, d.subscription_id, r.attempt, r.at, r.code, r.error, r.duration_ms,
                          r.body, r.no_body, r.outcome
              ), journal AS (
                INSERT INTO webhook_attempts (school_id, delivery_id, attempt, at, response_code, error, duration_ms, response_body)
                SELECT school_id, id, attempt, at::timestamptz, nullif(code, -1), nullif(error, ''), duration_ms,
                       CASE WHEN no_body THEN NULL ELSE body END
                FROM done WHERE outcome <> 'postponed'
                ON CONFLICT DO NOTHING
                RETURNING 1
              ), outcomes AS (
                -- Per subscription, the last final outcome of this batch.
                SELECT DISTINCT ON (school_id, subscription_id) school_id, subscription_id, outcome
                FROM done WHERE outcome IN ('delivered', 'failed')
                ORDER BY school_id, subscription_id, at DESC, outcome
              ), moved AS (
                UPDATE webhook_subscriptions s
                SET status = CASE o.outcome WHEN 'failed' THEN 'problematic' ELSE 'active' END, updated_at = now()
                FROM outcomes o
                WHERE s.school_id = o.school_id AND s.id = o.subscription_id AND s.listener_seen_at IS NULL
                  AND ((o.outcome = 'failed' AND s.status = 'active') OR (o.outcome = 'delivered' AND s.status = 'problematic'))
                RETURNING s.school_id, s.id, s.url, s.status
              ), notified AS (
                INSERT INTO notifications (school_id, employee_id, kind, message, subscription_id)
                SELECT m.school_id, e.id, 'subscription_problematic',
                       format(${PROBLEMATIC_MESSAGE}::text, m.id, m.url),
                       m.id
                FROM moved m
                JOIN employees e ON e.school_id = m.school_id AND e.role IN ('owner', 'administrator')
                WHERE m.status = 'problematic'
                RETURNING 1
              )
              SELECT (SELECT count(*) FROM journal)::int AS recorded,
                     (SELECT count(*) FROM moved WHERE status = 'problematic')::int AS problematic,
                     (SELECT count(*) FROM notified)::int AS notified,
                     (SELECT count(*) FROM moved WHERE status = 'active')::int AS recovered`.pipe(
            Effect.flatMap((rows) => Effect.orDie(decodeRecorded(rows))),
            Effect.flatMap(single)
          )

      const release = (leases: ReadonlyArray<{ readonly schoolId: number; readonly id: number; readonly lease: string }>) =>
        leases.length === 0
          ? Effect.succeed(0)
          : sql`
              WITH r AS (
                SELECT * FROM unnest(${leases.map((l) => l.schoolId)}::int[], ${leases.map((l) => l.id)}::int8[],
                                     ${leases.map((l) => l.lease)}::text[]) AS r(school_id, id, lease)
              ), released AS (
                UPDATE webhook_deliveries d SET lease_until = NULL
                FROM r WHERE d.school_id = r.school_id AND d.id = r.id AND d.lease_until = r.lease::timestamptz
                RETURNING 1
              )
              SELECT count(*)::int AS n FROM released`.pipe(
            Effect.flatMap((rows) => Effect.orDie(decodeCount(rows))),
            Effect.flatMap(single),
            Effect.map((row) => row.n)
          )

      const nextDue = (capMs: number) =>
        sql`
          -- The first entry of webhook_deliveries_waiting past now (min() over the index: one probe). A
          -- delivery due when it was made (next_attempt_at = created_at) is due already, so the index leaves
          -- it out. A disabled subscription's waiting retry may be that entry: it only wakes the loop for a
          -- pass that claims nothing, which costs less than checking each entry's subscription on every pass.
          SELECT least(${capMs}::float8,
                       extract(epoch FROM (min(next_attempt_at) - now())) * 1000)::float8 AS wait_ms
          FROM webhook_deliveries
          WHERE status = 'pending' AND next_attempt_at > created_at AND next_attempt_at > now()`.pipe(
          Effect.flatMap((rows) => Effect.orDie(decodeNextDue(rows))),
          Effect.flatMap(single),
          Effect.map((row) => row.wait_ms)
        )

      const purge = (options: PurgeOptions) =>
        sql`
          WITH old AS (
            SELECT d.school_id, d.id, d.event_id FROM webhook_deliveries d
            WHERE d.status <> 'pending'
              AND d.finished_at < now() - ${options.retentionMs}::float8 * interval '1 millisecond'
              -- A delivery a resend names stays: the resend's journal entry names what it repeated.
              AND NOT EXISTS (
                SELECT 1 FROM webhook_deliveries r WHERE r.school_id = d.school_id AND r.resend_of = d.id
              )
              -- The journal keeps the last ones of each subscription.
              AND d.id < (
                SELECT j.id FROM webhook_deliveries j
                WHERE j.school_id = d.school_id AND j.subscription_id = d.subscription_id
                ORDER BY j.id DESC OFFSET ${options.keep - 1}::int LIMIT 1
              )
            ORDER BY d.finished_at
            LIMIT ${options.batch}
            FOR UPDATE SKIP LOCKED
          ), gone AS (
            DELETE FROM webhook_deliveries d USING old o
            WHERE d.school_id = o.school_id AND d.id = o.id
            RETURNING d.school_id, d.event_id
          ), events AS (
            -- An event goes with the last delivery that names it.
            DELETE FROM outbox_events e
            USING (SELECT DISTINCT school_id, event_id FROM gone) g
            WHERE e.school_id = g.school_id AND e.id = g.event_id
              AND NOT EXISTS (
                SELECT 1 FROM webhook_deliveries d
                WHERE d.school_id = g.school_id AND d.event_id = g.event_id
                  AND NOT EXISTS (SELECT 1 FROM old o WHERE o.school_id = d.school_id AND o.id = d.id)
              )
            RETURNING 1
          )
          SELECT (SELECT count(*) FROM gone)::int AS deliveries, (SELECT count(*) FROM events)::int AS events`.pipe(
          Effect.flatMap((rows) => Effect.orDie(decodePurged(rows))),
          Effect.flatMap(single)
        )

      // Due work is read from `webhook_deliveries_pending` (every pending delivery, its due time in the entry), each
      // joined to its subscription (a primary-key probe) so a disabled one's waiting work is not counted: it is
      // not due until the school enables it (docs/operations.md "What to watch"). The outbox's oldest pending
      // event is the first of `outbox_events_pending`. Subscriptions are few per school; their count is
      // a scan of a small table.
      const gauges = () =>
        sql`
          WITH due AS (
            SELECT d.next_attempt_at FROM webhook_deliveries d
            JOIN webhook_subscriptions s ON s.school_id = d.school_id AND s.id = d.subscription_id AND s.status <> 'disabled'
              AND s.listener_seen_at IS NULL
            WHERE d.status = 'pending' AND d.next_attempt_at <= now()
              AND (d.lease_until IS NULL OR d.lease_until <= now())
          )
          SELECT
            (SELECT count(*) FROM due)::int AS due,
            coalesce(extract(epoch FROM now() - (SELECT min(next_attempt_at) FROM due)), 0)::float8 AS oldest_due_age_s,
            (SELECT count(*) FROM webhook_subscriptions WHERE status = 'problematic')::int AS problematic,
            coalesce(extract(epoch FROM now() - (
              SELECT created_at FROM outbox_events WHERE fanned_out_at IS NULL ORDER BY id LIMIT 1
            )), 0)::float8 AS fan_out_lag_s`.pipe(
          Effect.flatMap((rows) => Effect.orDie(decodeGauges(rows))),
          Effect.flatMap(single),
          Effect.map((row): Gauges => ({
            due: row.due,
            oldestDueAgeSeconds: Math.max(0, row.oldest_due_age_s),
            problematic: row.problematic,
            fanOutLagSeconds: Math.max(0, row.fan_out_lag_s)
          }))
        )

      const databaseNow = () =>
        sql`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`.pipe(
          Effect.flatMap((rows) => Effect.orDie(decodeNow(rows))),
          Effect.flatMap(single),
          Effect.map((row) => row.ms)
        )

      return DeliveryQueue.of({ fanOut, claim, record, release, nextDue, purge, wakeups, gauges, databaseNow })
    })
  )
}
