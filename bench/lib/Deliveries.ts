/**
 * The `journal-scale` data set: webhook deliveries stored across many
 * schools, loaded with set-based SQL (`generate_series`, one statement per
 * million deliveries, no per-row round trips), as bench/lib/Datasets.ts loads
 * the students. The content is deterministic (hashes of the row number).
 *
 * - `schools` schools (plan pro), each with two active subscriptions to
 *   `lead.created` (a receiver on the example domain, a placeholder secret:
 *   nothing is sent to them).
 * - One outbox event per two deliveries: each event fanned out to both
 *   subscriptions of its school, the events going round the schools, created
 *   over the 29 days before the load (inside the 30-day DELIVERY_RETENTION,
 *   so the purge leaves them), in id order.
 * - Deliveries as the dispatcher leaves them: 98% delivered (one attempt,
 *   200; one in 32 of them after a 503 first), 1% failed (four attempts,
 *   500), 1% skipped (no body, no attempt); the body as the dispatcher
 *   builds it. Their attempts in `webhook_attempts`.
 *
 * Then `VACUUM (ANALYZE)` of the tables, as autovacuum would leave them.
 *
 * So that it loads in minutes rather than half an hour on two cores, the
 * load builds the tables' secondary indexes after the rows instead of
 * maintaining them row by row: the indexes of outbox_events,
 * webhook_deliveries and webhook_attempts that back no constraint are
 * dropped first and made again after, each with its definition as the
 * migrations left it (`pg_get_indexdef`: columns, predicate, storage
 * parameters), so the tables end with exactly the indexes the migrations
 * make, whatever they are. And its statements run with
 * `session_replication_role = replica`: the rows are consistent by
 * construction, so the foreign keys' per-row checks and the outbox's NOTIFY
 * trigger are skipped (the constraints themselves stay).
 */
import { Effect } from "effect"
import type { BenchDatabase } from "./Database.ts"
import { benchError, type BenchError } from "./Processes.ts"

export interface DeliveriesSpec {
  readonly deliveries: number
  readonly schools: number
}

export interface DeliveriesDataset {
  readonly spec: DeliveriesSpec
  /** The schools, and each one's two subscriptions. */
  readonly subscriptions: ReadonlyArray<{ readonly schoolId: number; readonly ids: readonly [number, number] }>
  readonly deliveries: number
  readonly attempts: number
  /** The INSERTs with the indexes built after them, and the VACUUM (ANALYZE) after that. */
  readonly loadSeconds: number
  readonly vacuumSeconds: number
}

/** Deliveries per INSERT statement. */
const CHUNK = 1_000_000
/** The spread of the events' creation times before the load. */
const SPAN_DAYS = 29

const describe = (error: unknown) => error instanceof Error ? error.message : String(error)

export const load = (
  db: BenchDatabase,
  spec: DeliveriesSpec,
  progress: (line: string) => Effect.Effect<void>
): Effect.Effect<DeliveriesDataset, BenchError> =>
  Effect.gen(function*() {
    const sql = db.sql
    const started = Date.now()
    const schools = yield* sql<{ id: number }>`
      INSERT INTO schools (name, plan)
      SELECT 'bench journal ' || g, 'pro' FROM generate_series(1, ${spec.schools}) g
      RETURNING id`
    const schoolIds = schools.map((row) => row.id).sort((a, b) => a - b)
    /** The school ids as one `int[]` parameter. */
    const schoolArray = `{${schoolIds.join(",")}}`
    const subscribed = yield* sql<{ school_id: number; id: number }>`
      INSERT INTO webhook_subscriptions (school_id, url, events, secret_ciphertext, status)
      SELECT s, 'https://receiver.example/school/' || s || '/' || k, ARRAY['lead.created'], '\\x00'::bytea, 'active'
      FROM unnest(${schoolArray}::int[]) s, generate_series(1, 2) k
      ORDER BY s, k
      RETURNING school_id, id`
    const bySchool = new Map<number, Array<number>>()
    for (const row of subscribed) bySchool.set(row.school_id, [...(bySchool.get(row.school_id) ?? []), row.id])
    const subscriptions = schoolIds.map((schoolId) => {
      const [a = 0, b = 0] = (bySchool.get(schoolId) ?? []).sort((x, y) => x - y)
      return { schoolId, ids: [a, b] as const }
    })
    const events = Math.ceil(spec.deliveries / 2)
    let deliveries = 0
    let attempts = 0
    const indexes = yield* sql<{ name: string; definition: string }>`
      SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
      FROM pg_index i
      WHERE i.indrelid IN ('outbox_events'::regclass, 'webhook_deliveries'::regclass, 'webhook_attempts'::regclass)
        AND NOT EXISTS (
          SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x')
        )
      ORDER BY i.indexrelid`
    for (const index of indexes) yield* sql.unsafe(`DROP INDEX ${index.name}`)
    for (let from = 1; from <= events; from += CHUNK / 2) {
      const to = Math.min(events, from + CHUNK / 2 - 1)
      const [row] = yield* sql.withTransaction(Effect.andThen(
        sql`SET LOCAL session_replication_role = replica`,
        sql<{ deliveries: number; attempts: number }>`
        WITH e AS (
          INSERT INTO outbox_events (school_id, event, payload, created_at, fanned_out_at)
          SELECT sch[1 + g % ${spec.schools}], 'lead.created',
                 json_build_object('lead_id', g, 'name', 'Bench lead ' || g,
                   'phone', '+7900' || lpad((g % 10000000)::text, 7, '0'), 'source', 'website'),
                 t, t + interval '20 milliseconds'
          FROM generate_series(${from}::int, ${to}::int) g,
               (SELECT ${schoolArray}::int[] AS sch) s,
               LATERAL (SELECT now() - make_interval(days => ${SPAN_DAYS}) * (1 - g::float8 / ${events}) AS t) x
          ORDER BY g
          RETURNING school_id, id, payload, created_at
        ), d AS (
          INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, body, status, attempts,
                                          next_attempt_at, response_code, last_attempt_at, finished_at, created_at)
          SELECT e.school_id, w.id, e.id, 'lead.created',
                 CASE WHEN k.kind <> 'skipped' THEN
                   '{"event":"lead.created","account_id":' || e.school_id || ',"payload":' || e.payload::text ||
                   ',"timestamp":' || to_json(to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text || '}'
                 END,
                 k.kind, k.tries, e.created_at, k.code,
                 CASE WHEN k.tries > 0 THEN e.created_at + make_interval(mins => 36 * (k.tries - 1)) END,
                 e.created_at + make_interval(mins => 36 * greatest(k.tries - 1, 0)) + interval '50 milliseconds',
                 e.created_at
          FROM e
          JOIN webhook_subscriptions w ON w.school_id = e.school_id
          CROSS JOIN LATERAL (SELECT hashint8(e.id * 2 + w.id) & 1023 AS h) hh
          CROSS JOIN LATERAL (
            SELECT CASE WHEN hh.h < 10 THEN 'failed' WHEN hh.h < 20 THEN 'skipped' ELSE 'delivered' END AS kind,
                   CASE WHEN hh.h < 10 THEN 4 WHEN hh.h < 20 THEN 0 WHEN hh.h % 32 = 0 THEN 2 ELSE 1 END AS tries,
                   CASE WHEN hh.h < 10 THEN 500 WHEN hh.h < 20 THEN NULL ELSE 200 END AS code
          ) k
          ORDER BY e.id, w.id
          RETURNING school_id, id, status, attempts, created_at
        ), a AS (
          INSERT INTO webhook_attempts (school_id, delivery_id, attempt, at, response_code, error, duration_ms, response_body)
          SELECT d.school_id, d.id, n, d.created_at + make_interval(mins => 36 * (n - 1)),
                 CASE WHEN d.status = 'failed' THEN 500 WHEN n < d.attempts THEN 503 ELSE 200 END,
                 NULL, 20 + (hashint8(d.id) & 255)::int,
                 CASE WHEN d.status = 'failed' OR n < d.attempts THEN '{"error":"unavailable"}' ELSE '' END
          FROM d, generate_series(1, d.attempts) n
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM d)::int AS deliveries, (SELECT count(*) FROM a)::int AS attempts`
      ))
      deliveries += row?.deliveries ?? 0
      attempts += row?.attempts ?? 0
      yield* progress(`  ${deliveries} deliveries, ${attempts} attempts (${((Date.now() - started) / 1000).toFixed(0)} s)`)
    }
    const rowsSeconds = (Date.now() - started) / 1000
    for (const index of indexes) {
      yield* sql.withTransaction(Effect.andThen(sql`SET LOCAL maintenance_work_mem = '1GB'`, sql.unsafe(index.definition)))
    }
    yield* progress(
      `  rows in ${rowsSeconds.toFixed(0)} s, ${indexes.length} indexes built in ${((Date.now() - started) / 1000 - rowsSeconds).toFixed(0)} s`
    )
    const loadSeconds = (Date.now() - started) / 1000
    const vacuumStarted = Date.now()
    yield* sql.unsafe("VACUUM (ANALYZE) schools, webhook_subscriptions, outbox_events, webhook_deliveries, webhook_attempts")
    return {
      spec,
      subscriptions,
      deliveries,
      attempts,
      loadSeconds,
      vacuumSeconds: (Date.now() - vacuumStarted) / 1000
    } satisfies DeliveriesDataset
  }).pipe(Effect.mapError((error) => benchError(`loading the deliveries failed: ${describe(error)}`)))
