/**
 * `journal-scale` (docs/back-office.md "Webhooks"; docs/operations.md
 * "Settings", DELIVERY_RETENTION): the back office's webhook reads and the
 * dispatcher's purge on a large journal. 10,000,000 deliveries stored across
 * 1,000 schools (bench/lib/Deliveries.ts; a quick run: 1,000,000 across 100),
 * on the schema the migrations build, whatever its indexes are.
 *
 * - `journal`: the 50-entry journal of one subscription (Webhooks `journal`,
 *   libs/persistence/src/Webhooks.ts, called through the repository as the
 *   back office calls it), a random subscription of a random school each
 *   time, 1,000 calls one after another.
 * - `detail`: one delivery with its attempts (Webhooks `delivery`), a random
 *   delivery each time (drawn from a sample of the table), 1,000 calls.
 *   For both, p50/p99 are the time of each call in the harness: the
 *   statement's round trip and its decoding, an upper bound of its database
 *   time. The mean execution time from pg_stat_statements is printed beside.
 * - `purge`: the dispatcher process (as `npm run start:dispatcher` runs it,
 *   DELIVERY_RETENTION at its default of 30 days), started before the reads
 *   and so idle when the round begins, while the harness inserts finished
 *   deliveries already past the retention at 1,000 per second (100 every
 *   100 ms, each with its event and its attempt, over 10 subscriptions of
 *   their own): the purge, as the dispatcher schedules it, must keep up with
 *   them. The round lasts 125 s (a quick one 65 s), so the purge's idle
 *   pause of a minute ends inside it. Printed: the removal rate (inserted
 *   less what is left past the retention at the end, per second), the purge
 *   statement's calls and mean time per batch (pg_stat_statements), and the
 *   backlog, the deliveries past the retention, sampled about once a second.
 *
 *   The goal is keeping up, judged on the backlog: PASS when the mean of the
 *   samples of the round's last third ≤ the mean of its first third + what
 *   arrives in 2 s (2,000: the backlog does not grow), and the backlog at the
 *   end ≤ what arrives in one purge pause after a run that found work (1 s,
 *   PURGE_SOON in apps/dispatcher/src/Dispatcher.ts) and one run (1 s):
 *   2,000. The samples' first-third and last-third means, maximum and end
 *   are printed. The first third includes the wait for a purge that was idle
 *   (up to its minute), so the maximum is that wait's worth, not a fault.
 *   The score this replaces, "(inserted − left) / seconds ≥ 1,000", could not
 *   pass for any purge that runs from time to time: what arrives after its
 *   last run is left at the end, so the rate is 1,000 less that part spread
 *   over the round even when every run removes everything there is.
 *
 * The load's time is printed. At the end the webhook tables are emptied and
 * the scenario's subscriptions disabled, so a scenario after it starts clean.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import pg from "pg"
import * as Ids from "@school/domain/Ids"
import { DeliveryId, WebhookId } from "@school/domain/WebhookSubscriptions"
import { Webhooks } from "@school/persistence/Webhooks"
import * as Database from "../lib/Database.ts"
import * as Deliveries from "../lib/Deliveries.ts"
import * as Dispatch from "../lib/Dispatch.ts"
import { benchError, type BenchError } from "../lib/Processes.ts"
import { figuresOf, ms, type Scenario, type Target } from "../lib/Scenario.ts"
import { percentile, type RoundFigures } from "../lib/Stats.ts"

const FULL = { deliveries: 10_000_000, schools: 1_000 }
const QUICK = { deliveries: 1_000_000, schools: 100 }
/** Calls per measured round of each read. */
const RUNS = 1_000
/** Calls of a warm-up round. */
const WARM_RUNS = 100
/** Finished deliveries past the retention inserted per second during the purge round… */
const PURGE_RATE = 1_000
/** … in this many inserts a second, … */
const PURGE_TICKS = 10
/** … over this many subscriptions of their own. */
const PURGE_SUBSCRIPTIONS = 10
/** The purge round: long enough for the purge's idle pause of a minute to end inside it, and to settle after. */
const PURGE_SECONDS = 125
const QUICK_PURGE_SECONDS = 65
/** Keeping up: how far the last third's mean backlog may be above the first third's (what arrives in 2 s). */
const GROWTH_ALLOWANCE = PURGE_RATE * 2
/** Keeping up: the backlog at the end, at most what arrives in one purge pause after work (1 s) and one run (1 s). */
const END_ALLOWANCE = PURGE_RATE * (1 + 1)
/** DELIVERY_RETENTION's default (apps/dispatcher/src/Dispatcher.ts); the rows inserted are older by a day. */
const RETENTION_DAYS = 30
/**
 * The statements, known in pg_stat_statements by their text (on one line; its
 * constants are shown as $n there): DeliveryQueue `purge`, Webhooks `journal`
 * and `delivery`.
 */
const IS_PURGE = (text: string) => text.startsWith("WITH old AS (") && text.includes("DELETE FROM webhook_deliveries")
const IS_JOURNAL = (text: string) => text.startsWith("SELECT coalesce(( SELECT json_agg(json_build_object(")
const IS_DETAIL = (text: string) => text.startsWith("SELECT json_build_object(") && text.includes("FROM webhook_attempts a")

/** Filled by `setup`, read by `goals`. */
const state = {
  load: undefined as Deliveries.DeliveriesDataset | undefined,
  purge: undefined as
    | {
      readonly inserted: number
      readonly left: number
      readonly seconds: number
      readonly runs: number
      readonly backlog: Backlog
    }
    | undefined,
  meanMs: new Map<string, { readonly calls: number; readonly meanMs: number }>()
}

/** The backlog (deliveries past the retention) as sampled over the purge round. */
interface Backlog {
  readonly samples: number
  readonly firstThird: number
  readonly lastThird: number
  readonly max: number
  readonly end: number
}

const average = (values: ReadonlyArray<number>) =>
  values.length === 0 ? Number.NaN : values.reduce((sum, v) => sum + v, 0) / values.length

/** The figures of samples taken `at` seconds into a round of `seconds`, `end` the last. */
const backlogOf = (samples: ReadonlyArray<{ readonly at: number; readonly backlog: number }>, seconds: number, end: number): Backlog => ({
  samples: samples.length,
  firstThird: average(samples.filter((s) => s.at <= seconds / 3).map((s) => s.backlog)),
  lastThird: average(samples.filter((s) => s.at >= seconds * 2 / 3).map((s) => s.backlog)),
  max: Math.max(end, ...samples.map((s) => s.backlog)),
  end
})

const oneLine = (query: string) => query.replace(/\s+/g, " ").trim()

/** Calls and mean execution time of the statements `is` picks between two snapshots. */
const statementBetween = (
  before: Database.StatementSnapshot,
  after: Database.StatementSnapshot,
  is: (text: string) => boolean
) => {
  let calls = 0
  let totalMs = 0
  for (const statement of Database.difference(before, after)) {
    if (!is(oneLine(statement.query))) continue
    calls += statement.calls
    totalMs += statement.totalMs
  }
  return { calls, meanMs: calls === 0 ? Number.NaN : totalMs / calls }
}

const emptyRound: RoundFigures = {
  requests: 0,
  seconds: 0,
  rps: 0,
  p50: Number.NaN,
  p99: Number.NaN,
  non2xx: 0,
  errors: 0,
  statuses: {}
}

export const journalScale: Scenario = {
  id: "journal-scale",
  title: "Webhook journal at scale: the back office's reads and the purge over 10M stored deliveries",
  datasets: [],
  sameBody: false,
  ratios: [],
  // The warm-up: 100 calls of each read, none of the purge; then one round.
  rounds: (settings) => ({ warmupSeconds: 1, roundSeconds: settings.quick ? QUICK_PURGE_SECONDS : PURGE_SECONDS, rounds: 1 }),
  setup: (context) =>
    Effect.gen(function*() {
      state.load = undefined
      state.purge = undefined
      state.meanMs.clear()
      const spec = context.settings.quick ? QUICK : FULL
      const say = (line: string) => Effect.sync(() => process.stderr.write(`${line}\n`))
      yield* say(`  loading ${spec.deliveries} deliveries across ${spec.schools} schools …`)
      const data = yield* Deliveries.load(context.db, spec, say)
      state.load = data
      yield* say(`  loaded in ${data.loadSeconds.toFixed(0)} s, VACUUM (ANALYZE) ${data.vacuumSeconds.toFixed(0)} s`)

      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => new pg.Pool({ connectionString: context.db.url, max: 4, application_name: "school-bench-journal" })),
        (p) => Effect.promise(() => p.end())
      )
      const query: Dispatch.Query = <R extends pg.QueryResultRow>(text: string, values: ReadonlyArray<unknown> = []) =>
        pool.query<R>(text, [...values])
      // Whatever ran, the next scenario finds empty webhook tables and none of these subscriptions active.
      yield* Effect.addFinalizer(() =>
        Effect.promise(async () => {
          await Dispatch.clean(query).catch(() => undefined)
          await query(`UPDATE webhook_subscriptions SET status = 'disabled' WHERE url LIKE 'https://receiver.example/%'`)
            .catch(() => undefined)
        })
      )

      // The back office's repository on the harness's connection, as the API builds it.
      const webhooks = yield* Layer.build(Webhooks.layer).pipe(
        Effect.map((built) => Context.get(built, Webhooks)),
        Effect.provideService(SqlClient.SqlClient, context.db.sql)
      )
      // Deliveries to read one by one: a sample of the table's pages, enough to draw from at random.
      const sample = yield* Effect.tryPromise({
        try: () =>
          query<{ school_id: number; subscription_id: number; id: number }>(
            `SELECT school_id, subscription_id, id::float8 AS id
             FROM webhook_deliveries TABLESAMPLE SYSTEM ($1::float8)
             WHERE school_id = ANY($2::int[])`,
            [Math.min(100, 100 * 5_000 / spec.deliveries), `{${data.subscriptions.map((s) => s.schoolId).join(",")}}`]
          ).then((result) => result.rows),
        catch: (error) => benchError(`journal-scale: sampling deliveries failed: ${Dispatch.describe(error)}`)
      })
      if (sample.length === 0) return yield* benchError("journal-scale: the sample of deliveries is empty")
      const pick = <A>(list: ReadonlyArray<A>): A => list[Math.floor(Math.random() * list.length)] as A

      const read = (kind: "journal" | "detail", calls: number, record: boolean): Effect.Effect<RoundFigures, BenchError> =>
        Effect.gen(function*() {
          const before = record ? yield* Database.snapshot(context.db) : undefined
          const times: Array<number> = []
          let missing = 0
          const started = performance.now()
          for (let i = 0; i < calls; i++) {
            const at = performance.now()
            if (kind === "journal") {
              const school = pick(data.subscriptions)
              const found = yield* webhooks.journal(Ids.SchoolId.make(school.schoolId), WebhookId.make(pick(school.ids)))
              if (Option.isNone(found) || found.value.length === 0) missing++
            } else {
              const delivery = pick(sample)
              const found = yield* webhooks.delivery(
                Ids.SchoolId.make(delivery.school_id),
                WebhookId.make(delivery.subscription_id),
                DeliveryId.make(delivery.id)
              )
              if (Option.isNone(found)) missing++
            }
            times.push(performance.now() - at)
          }
          const seconds = (performance.now() - started) / 1000
          if (before !== undefined) {
            state.meanMs.set(
              kind,
              statementBetween(before, yield* Database.snapshot(context.db), kind === "journal" ? IS_JOURNAL : IS_DETAIL)
            )
          }
          times.sort((x, y) => x - y)
          return {
            requests: calls,
            seconds,
            rps: calls / seconds,
            p50: percentile(times, 50),
            p95: percentile(times, 95),
            p99: percentile(times, 99),
            non2xx: missing,
            errors: 0,
            statuses: { found: calls - missing, ...(missing > 0 ? { "not found": missing } : {}) }
          } satisfies RoundFigures
        })
      const readTarget = (kind: "journal" | "detail", label: string): Target => ({
        id: kind,
        label,
        round: (seconds) => seconds > 1 ? read(kind, RUNS, true) : read(kind, WARM_RUNS, false),
        counted: (n) => Effect.as(read(kind, n, false), n)
      })

      // -- The purge ------------------------------------------------------------
      const purgeSubscriptions = yield* Effect.tryPromise({
        try: async () => {
          const { rows } = await query<{ school_id: number; id: number }>(
            `INSERT INTO webhook_subscriptions (school_id, url, events, secret_ciphertext, status)
             SELECT s, 'https://receiver.example/purge/' || s, ARRAY['lead.created'], '\\x00'::bytea, 'active'
             FROM unnest($1::int[]) s
             RETURNING school_id, id`,
            [`{${data.subscriptions.slice(0, PURGE_SUBSCRIPTIONS).map((s) => s.schoolId).join(",")}}`]
          )
          return rows
        },
        catch: (error) => benchError(`journal-scale: the purge's subscriptions: ${Dispatch.describe(error)}`)
      })
      const purgeSchools = `{${purgeSubscriptions.map((s) => s.school_id).join(",")}}`
      const purgeIds = `{${purgeSubscriptions.map((s) => s.id).join(",")}}`
      /** `count` finished deliveries past the retention, each with its event and its attempt, in one statement. */
      const insertFinished = (count: number) =>
        query(
          `WITH e AS (
             INSERT INTO outbox_events (school_id, event, payload, created_at, fanned_out_at)
             SELECT ($1::int[])[1 + g % cardinality($1::int[])], 'lead.created',
                    json_build_object('lead_id', g, 'name', 'Bench lead ' || g, 'phone', '+79000000000', 'source', 'website'),
                    now() - make_interval(days => $3::int + 1), now() - make_interval(days => $3::int + 1)
             FROM generate_series(1, $4::int) g
             RETURNING school_id, id, payload, created_at
           ), d AS (
             INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, body, status, attempts,
                                             next_attempt_at, response_code, last_attempt_at, finished_at, created_at)
             SELECT e.school_id, p.id, e.id, 'lead.created',
                    '{"event":"lead.created","account_id":' || e.school_id || ',"payload":' || e.payload::text || '}',
                    'delivered', 1, e.created_at, 200, e.created_at, e.created_at, e.created_at
             FROM e JOIN unnest($1::int[], $2::int[]) AS p(school_id, id) ON p.school_id = e.school_id
             RETURNING school_id, id, created_at
           )
           INSERT INTO webhook_attempts (school_id, delivery_id, attempt, at, response_code, duration_ms, response_body)
           SELECT school_id, id, 1, created_at, 200, 30, '' FROM d`,
          [purgeSchools, purgeIds, RETENTION_DAYS, count]
        )
      const pastRetention = async () => {
        const { rows } = await query<{ n: string }>(
          `SELECT count(*) AS n FROM webhook_deliveries
           WHERE status <> 'pending' AND finished_at < now() - make_interval(days => $1::int)`,
          [RETENTION_DAYS]
        )
        return Number(rows[0]?.n ?? 0)
      }
      const dispatcher = yield* Dispatch.startDispatcher(context, "journal-scale-dispatcher", {})
      const purgeRound = (seconds: number): Effect.Effect<RoundFigures, BenchError> =>
        Effect.gen(function*() {
          const before = yield* Database.snapshot(context.db)
          const counted = yield* Effect.tryPromise({
            try: async () => {
              const left0 = await pastRetention()
              const started = performance.now()
              // The backlog about once a second, beside the inserts (its own connection of the pool).
              const sampler = Dispatch.everySecond(started, pastRetention)
              let inserted = 0
              try {
                const ticks = Math.round(seconds * PURGE_TICKS)
                const perTick = PURGE_RATE / PURGE_TICKS
                for (let tick = 0; tick < ticks; tick++) {
                  const wait = started + tick * 1000 / PURGE_TICKS - performance.now()
                  if (wait > 0) await Dispatch.sleep(wait)
                  await insertFinished(perTick)
                  inserted += perTick
                }
                const wait = started + seconds * 1000 - performance.now()
                if (wait > 0) await Dispatch.sleep(wait)
              } finally {
                await sampler.stop()
              }
              const samples = [{ at: 0, backlog: left0 }, ...sampler.samples.map((s) => ({ at: s.at, backlog: s.value }))]
              const elapsed = (performance.now() - started) / 1000
              const left = await pastRetention()
              return { inserted: inserted + left0, left, seconds: elapsed, backlog: backlogOf(samples, elapsed, left) }
            },
            catch: (error) => benchError(`journal-scale: the purge round: ${Dispatch.describe(error)}`)
          })
          const statement = statementBetween(before, yield* Database.snapshot(context.db), IS_PURGE)
          state.meanMs.set("purge", statement)
          state.purge = { ...counted, runs: statement.calls }
          const removed = counted.inserted - counted.left
          return {
            ...emptyRound,
            requests: removed,
            seconds: counted.seconds,
            rps: removed / counted.seconds
          } satisfies RoundFigures
        })
      const purgeTarget: Target = {
        id: "purge",
        label: `dispatcher's purge, ${PURGE_RATE} finished/s past the retention`,
        process: { pid: dispatcher.pid, api: false, readyRssMiB: dispatcher.readyRssMiB },
        // No warm-up (a round of it is minutes long).
        round: (seconds) => seconds > 1 ? purgeRound(seconds) : Effect.succeed(emptyRound),
        counted: () => Effect.succeed(0)
      }

      return [
        readTarget("journal", "journal: the last 50 of a subscription"),
        readTarget("detail", "a delivery with its attempts"),
        purgeTarget
      ]
    }),
  goals: (figures) => {
    const journal = figuresOf(figures, "journal")
    const detail = figuresOf(figures, "detail")
    const purge = figuresOf(figures, "purge")
    const mean = (id: string) => {
      const found = state.meanMs.get(id)
      return found === undefined || !Number.isFinite(found.meanMs) ? "n/a" : `${found.meanMs.toFixed(3)} ms`
    }
    const load = state.load
    const purged = state.purge
    const statement = state.meanMs.get("purge")
    const backlog = purged?.backlog
    /** What the purge statement removes per second when run back to back: deliveries per call over its mean time. */
    const backToBack = purged === undefined || statement === undefined || statement.calls === 0
      ? Number.NaN
      : (purged.inserted - purged.left) / statement.calls / statement.meanMs * 1000
    return [
      {
        goal: `the load: ${(load?.spec.deliveries ?? FULL.deliveries).toLocaleString("en")} deliveries across ${
          (load?.spec.schools ?? FULL.schools).toLocaleString("en")
        } schools, its time printed`,
        measured: load === undefined
          ? "not loaded"
          : `${load.deliveries} deliveries (${load.attempts} attempts) across ${load.spec.schools} schools in ${
            load.loadSeconds.toFixed(0)
          } s (${(load.deliveries / load.loadSeconds).toFixed(0)}/s), VACUUM (ANALYZE) ${load.vacuumSeconds.toFixed(0)} s`,
        pass: load !== undefined && load.deliveries === load.spec.deliveries
      },
      {
        goal: "the journal (50 entries of a subscription): p99 ≤ 10 ms",
        measured: `p99 ${ms(journal.p99)}, p50 ${ms(journal.p50)} per call; statement mean ${mean("journal")}`,
        pass: journal.p99 <= 10
      },
      {
        goal: "one delivery with its attempts: p99 ≤ 10 ms",
        measured: `p99 ${ms(detail.p99)}, p50 ${ms(detail.p50)} per call; statement mean ${mean("detail")}`,
        pass: detail.p99 <= 10
      },
      {
        goal: `the dispatcher's purge keeps up with ${PURGE_RATE} deliveries/s finishing past the retention: backlog's last-third mean ≤ first-third mean + ${GROWTH_ALLOWANCE}, end ≤ ${END_ALLOWANCE}`,
        measured: purged === undefined || backlog === undefined
          ? "not measured"
          : `backlog first third ${backlog.firstThird.toFixed(0)}, last third ${backlog.lastThird.toFixed(0)}, max ${backlog.max}, end ${backlog.end} (${backlog.samples} samples); removed ${
            purge.rps.toFixed(0)
          } deliveries/s (${purged.inserted - purged.left} of ${purged.inserted} in ${purged.seconds.toFixed(0)} s by ${purged.runs} purge statements, mean ${
            mean("purge")
          } each: ${Number.isFinite(backToBack) ? backToBack.toFixed(0) : "n/a"}/s if they ran back to back)`,
        pass: backlog !== undefined && Number.isFinite(backlog.firstThird) && Number.isFinite(backlog.lastThird) &&
          backlog.lastThird <= backlog.firstThird + GROWTH_ALLOWANCE && backlog.end <= END_ALLOWANCE
      }
    ]
  }
}
