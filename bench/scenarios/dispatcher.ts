/**
 * `dispatcher` (docs/decisions.md "The webhook
 * dispatcher"): the webhook dispatcher process (apps/dispatcher/src/main.ts,
 * run as `npm run start:dispatcher` runs it, on the server core) against a
 * receiver in the harness that answers 204 at once, every delivery signed
 * and recorded. Targets, each run alone (the others are SIGSTOPped: they
 * share the tables and the claim):
 *
 * - `dispatcher`: throughput. Before each round the tables are emptied and
 *   N outbox events (a lead.created payload, spread over 16 schools with one
 *   subscription each, so the per-subscription cap of 4 leaves the
 *   concurrency of 32 usable) are inserted in one transaction; the round is
 *   the time from that commit until every delivery is recorded (receiver
 *   saw N, nothing pending). Fan-out, body storage, signing, POST, journal.
 * - `graphile`: graphile-worker (bench/peer/graphile-worker.ts), the same N
 *   POSTs as one job each, added with `addJobs` in one call; drained when
 *   its job table is empty.
 * - `bare`: the floor (bench/anchors/bare-dispatch.ts): N deliveries loaded
 *   with their bodies; the dispatcher's claim statement, sign, POST, mark
 *   delivered; drained when nothing is pending.
 * - `latency`: a second dispatcher process (WEBHOOK_TIMEOUT=2s) while the
 *   harness inserts outbox events at a steady 200/s, each in its own
 *   transaction; commit→arrival is the receiver's arrival time minus the
 *   moment the inserter saw its commit (same process, same clock).
 * - `isolation`: the same, with a second subscription of the same school
 *   (every event goes to both) whose receiver never answers.
 * - `noisy`: the same dispatcher process and steady 200 events/s, spread
 *   over 4 other schools (one subscription each, to the healthy receiver),
 *   while a noisy school floods `webhook.test` events (outbox rows naming
 *   one subscription, as the back office's test call writes them) at 16
 *   subscriptions whose receivers accept the connection and never answer:
 *   before the stream starts, 100 per subscription are inserted, and the
 *   stream waits until they are fanned out and the noisy school holds every
 *   slot it may (the slots less the reserve). Commit→arrival of the others'
 *   events. After the round the noisy subscriptions are disabled, their
 *   receiver answers 503 at once and its held requests are cut, until the
 *   dispatcher holds none of the noisy school's deliveries; then the tables
 *   are emptied.
 *
 * Throughput targets report deliveries/s (p50/p99 n/a); latency targets
 * report commit→arrival p50/p99. The counting pass gives the statements per
 * delivery (or per event). The receiver checks both signatures of one
 * request in 16 (and of the first of each round) with the subscription's
 * secret; a bad one is counted as non-2xx.
 *
 * The claim statement (DeliveryQueue `claim`, known by its text: it starts
 * with `WITH RECURSIVE subs AS`) is measured from pg_stat_statements in
 * each round of `dispatcher` (from the load's insert to the drain) and of
 * `noisy` (from the stream's start, the flood in place, to the last
 * arrival): its calls and mean execution time, the medians of the measured
 * rounds printed as a goal row.
 *
 * The receivers, the subscriptions, the dispatcher's start, the arrivals and
 * the steady inserter are bench/lib/Dispatch.ts, shared with
 * `sustained-dispatch`.
 */
import { Effect } from "effect"
import { makeWorkerUtils, type WorkerUtils } from "graphile-worker"
import pg from "pg"
import * as FairShare from "@school/domain/FairShare"
import * as Signature from "@school/domain/WebhookSignature"
import { TEST_MESSAGE } from "@school/persistence/Webhooks"
import type { DeliverPayload } from "../peer/graphile-worker.ts"
import * as Database from "../lib/Database.ts"
import * as Dispatch from "../lib/Dispatch.ts"
import { CONCURRENCY, describe, EVENT, payloadText, PER_SUBSCRIPTION, sleep } from "../lib/Dispatch.ts"
import { BARE_DISPATCH, GRAPHILE_WORKER } from "../lib/Paths.ts"
import { benchError, type BenchError } from "../lib/Processes.ts"
import { cpuGoal, figuresOf, ms, ratio, type Scenario, type Target, throughputGoal, times } from "../lib/Scenario.ts"
import { median, type RoundFigures } from "../lib/Stats.ts"

/** Subscriptions the throughput load is spread over (one school each). */
const SUBSCRIPTIONS = 16
/** The steady rate of the latency targets (events/s). */
const RATE = 200
/** Deliveries counted for the statements per delivery. */
const COUNTED_DELIVERIES = 2_000
/** `noisy`: the schools the steady rate is spread over (one subscription each), … */
const OTHER_SCHOOLS = 4
/** … the noisy school's subscriptions (their receivers never answer), … */
const NOISY_SUBSCRIPTIONS = 16
/** … and its `webhook.test` events per subscription, inserted before each round. */
const NOISY_PER_SUBSCRIPTION = 100
/** What one school may have in flight: the slots less the reserve (libs/domain/src/FairShare.ts). */
const NOISY_HELD = CONCURRENCY - FairShare.reserveOf(CONCURRENCY)
/** The claim statement (DeliveryQueue `claim`), known in pg_stat_statements by how it starts. */
const CLAIM_TEXT = "WITH RECURSIVE subs AS"

// -- The scenario -------------------------------------------------------------

/**
 * Deliveries per throughput round: this many per second of the run's round
 * setting (a default round 10 000, its warm-up 7 500; a quick one 5 000).
 */
const DELIVERIES_PER_ROUND_SECOND = 5_000
const ARRIVAL_TIMEOUT_MS = 60_000

/** The claim statement in one round: its calls and their execution time (pg_stat_statements). */
interface ClaimRound {
  readonly calls: number
  readonly totalMs: number
  /** Deliveries the round made (throughput), or undefined. */
  readonly deliveries: number | undefined
}

/** Per target, the claim statement of each round it ran, the warm-up first; filled by `setup`, read by `goals`. */
const claimRounds = new Map<string, Array<ClaimRound>>()

const claimBetween = (
  before: Database.StatementSnapshot,
  after: Database.StatementSnapshot,
  deliveries: number | undefined
): ClaimRound => {
  let calls = 0
  let totalMs = 0
  for (const statement of Database.difference(before, after)) {
    if (!statement.query.replace(/\s+/g, " ").trim().startsWith(CLAIM_TEXT)) continue
    calls += statement.calls
    totalMs += statement.totalMs
  }
  return { calls, totalMs, deliveries }
}

/** The medians of a target's measured rounds (the warm-up left out): calls per round, mean ms, deliveries per claim. */
const claimFigures = (id: string) => {
  const measured = (claimRounds.get(id) ?? []).slice(1)
  const called = measured.filter((r) => r.calls > 0)
  if (called.length === 0) return undefined
  const perClaim = called.flatMap((r) => r.deliveries === undefined ? [] : [r.deliveries / r.calls])
  return {
    calls: median(measured.map((r) => r.calls)),
    meanMs: median(called.map((r) => r.totalMs / r.calls)),
    perClaim: perClaim.length === 0 ? undefined : median(perClaim)
  }
}

const claimText = (name: string, id: string): string => {
  const figures = claimFigures(id)
  if (figures === undefined) return `${name} not measured`
  const perClaim = figures.perClaim === undefined ? "" : `, ${figures.perClaim.toFixed(0)} deliveries per claim`
  return `${name} ${figures.meanMs.toFixed(2)} ms mean × ${figures.calls.toFixed(0)} calls/round${perClaim}`
}

export const dispatcher: Scenario = {
  id: "dispatcher",
  title: "Webhook dispatcher: deliveries/s, commit→arrival at 200 events/s, isolation, a noisy school",
  datasets: [],
  sameBody: false,
  setup: (context) =>
    Effect.gen(function*() {
      const n = DELIVERIES_PER_ROUND_SECOND * context.settings.roundSeconds
      claimRounds.clear()
      const receivers = yield* Dispatch.startReceivers
      // The harness's connections are kept for the whole run (pg closes idle ones after 10 s by default):
      // they sat idle through the throughput targets and were opened again at the start of each latency
      // round, and eight new backends starting on PostgreSQL's core delayed the dispatcher's statements
      // (bench/README.md "The `dispatcher` scenario": the load generator is not what is measured).
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() =>
          new pg.Pool({ connectionString: context.db.url, max: 8, idleTimeoutMillis: 0, application_name: "school-bench-dispatcher" })
        ),
        (p) => Effect.promise(() => p.end())
      )
      const query: Dispatch.Query = <R extends pg.QueryResultRow>(text: string, values: ReadonlyArray<unknown> = []) =>
        pool.query<R>(text, [...values])

      // Schools and subscriptions: 16 for the throughput load, one school with two for latency/isolation,
      // 4 with one each and the noisy one with 16 for `noisy`.
      const subscribe = Dispatch.subscribe(query)
      const data = yield* Effect.tryPromise({
        try: async () => {
          const { rows } = await query<{ id: number }>(
            `INSERT INTO schools (name, plan) SELECT 'bench dispatcher ' || g, 'pro' FROM generate_series(1, $1::int) g RETURNING id`,
            [SUBSCRIPTIONS + 1 + OTHER_SCHOOLS + 1]
          )
          const ids = rows.map((row) => row.id)
          const latencySchool = ids[SUBSCRIPTIONS] ?? 0
          const throughput: Array<Dispatch.Subscription> = []
          for (const [i, schoolId] of ids.slice(0, SUBSCRIPTIONS).entries()) {
            throughput.push(await subscribe(schoolId, `${receivers.baseUrl}/s/${i}`, "active"))
          }
          const healthy = await subscribe(latencySchool, `${receivers.baseUrl}/latency`, "active")
          const hanging = await subscribe(latencySchool, receivers.hangingUrl, "disabled")
          const others: Array<Dispatch.Subscription> = []
          for (const [i, schoolId] of ids.slice(SUBSCRIPTIONS + 1, SUBSCRIPTIONS + 1 + OTHER_SCHOOLS).entries()) {
            others.push(await subscribe(schoolId, `${receivers.baseUrl}/other/${i}`, "active"))
          }
          // Disabled but during `noisy` rounds.
          const noisySchool = ids[SUBSCRIPTIONS + 1 + OTHER_SCHOOLS] ?? 0
          const noisy: Array<Dispatch.Subscription> = []
          for (let i = 0; i < NOISY_SUBSCRIPTIONS; i++) {
            noisy.push(await subscribe(noisySchool, `${receivers.hangingBase}/noisy/${i}`, "disabled"))
          }
          return { throughput, healthy, hanging, others, noisySchool, noisy }
        },
        catch: (error) => benchError(`dispatcher: loading the subscriptions failed: ${describe(error)}`)
      })
      const secretOf = new Map<string, string>(
        [...data.throughput, data.healthy, ...data.others].map((s) => [new URL(s.url).pathname, s.secret])
      )

      // The processes, on the server core.
      const startDispatcher = (name: string, env: Record<string, string>) =>
        Dispatch.startDispatcher(context, `dispatcher-${name}`, env)
      const subject = yield* startDispatcher("throughput", {})
      const latencyProcess = yield* startDispatcher("latency", { WEBHOOK_TIMEOUT: "2s" })
      const graphileLoop = yield* context.start.loop("graphile", GRAPHILE_WORKER, { BENCH_CONCURRENCY: String(CONCURRENCY) })
      const bareLoop = yield* context.start.loop("bare", BARE_DISPATCH, {
        BENCH_CONCURRENCY: String(CONCURRENCY),
        BENCH_PER_SUBSCRIPTION: String(PER_SUBSCRIPTION),
        // The dispatcher's lease with its default 10 s time-out (Dispatcher.leaseOf).
        BENCH_LEASE_MS: "15000"
      })
      const pidOf = (target: Target) => target.process?.pid ?? 0
      const pids = [subject.pid, latencyProcess.pid, pidOf(graphileLoop), pidOf(bareLoop)]
      const signal = (pid: number, name: NodeJS.Signals) => {
        try {
          process.kill(pid, name)
        } catch {
          // Gone already: its scope reports it.
        }
      }
      /** Only `pid` runs; the others are stopped (they would claim each other's work). */
      const activate = (pid: number) => {
        signal(pid, "SIGCONT")
        for (const other of pids) if (other !== pid) signal(other, "SIGSTOP")
      }
      // Registered after the processes: runs before their stop, so SIGTERM reaches running processes.
      yield* Effect.addFinalizer(() => Effect.sync(() => pids.forEach((pid) => signal(pid, "SIGCONT"))))
      activate(0)

      const workerUtils = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () => makeWorkerUtils({ connectionString: context.db.url }),
          catch: (error) => benchError(`graphile-worker utils: ${describe(error)}`)
        }),
        (utils: WorkerUtils) => Effect.promise(async () => {
          await utils.release()
        })
      )

      // -- Helpers of the rounds ----------------------------------------------
      const clean = () => Dispatch.clean(query)
      /** The statement counters now (on the harness's own connection to another database: not counted). */
      const statementsNow = () => Effect.runPromise(Database.snapshot(context.db))
      const recordClaims = (id: string, round: ClaimRound) => {
        const rounds = claimRounds.get(id) ?? []
        rounds.push(round)
        claimRounds.set(id, rounds)
      }
      const arrivals = new Dispatch.Arrivals(receivers, secretOf)
      const resetReceiver = (extra: (arrival: Dispatch.Arrival) => void) => arrivals.reset(extra)
      const waitForArrivals = (count: number, timeoutMs: number) => arrivals.wait(count, timeoutMs)

      /** The throughput load spread over the 16 subscriptions. */
      const spread = (count: number) => {
        const schools: Array<number> = []
        const subscriptions: Array<number> = []
        const payloads: Array<string> = []
        for (let i = 0; i < count; i++) {
          const s = data.throughput[i % SUBSCRIPTIONS]
          if (s === undefined) continue
          schools.push(s.schoolId)
          subscriptions.push(s.id)
          payloads.push(payloadText(i + 1))
        }
        return { schools, subscriptions, payloads }
      }
      const pendingWork = () => Dispatch.pendingWork(query)
      let graphileDeliveryId = 0

      interface DrainTarget {
        readonly id: string
        readonly label: string
        readonly pid: number
        readonly readyRssMiB: number | undefined
        readonly preload: (count: number) => Promise<void>
        readonly busy: () => Promise<boolean>
        /** Its rounds' claim statements are measured. */
        readonly claims?: boolean
      }
      /** `claims`: measure the claim statement, from before the load is inserted to after it is drained. */
      const drain = (target: DrainTarget, count: number, claims = false): Effect.Effect<RoundFigures, BenchError> =>
        Effect.tryPromise({
          try: async () => {
            activate(target.pid)
            await clean()
            resetReceiver(() => {})
            const before = claims ? await statementsNow() : undefined
            await target.preload(count)
            const started = performance.now()
            const all = await waitForArrivals(count, ARRIVAL_TIMEOUT_MS)
            if (!all) {
              throw new Error(`${arrivals.arrived} of ${count} deliveries arrived within ${ARRIVAL_TIMEOUT_MS / 1000} s`)
            }
            while (await target.busy()) await sleep(2)
            const seconds = (performance.now() - started) / 1000
            // Stopped between rounds: its idle polling would keep the harness's quiesce waiting.
            activate(0)
            if (before !== undefined) recordClaims(target.id, claimBetween(before, await statementsNow(), count))
            return {
              requests: count,
              seconds,
              rps: count / seconds,
              p50: Number.NaN,
              p99: Number.NaN,
              non2xx: arrivals.badSignatures,
              errors: 0,
              statuses: {
                "204": arrivals.arrived - arrivals.badSignatures,
                ...(arrivals.badSignatures > 0 ? { "bad signature": arrivals.badSignatures } : {})
              }
            } satisfies RoundFigures
          },
          catch: (error) => benchError(`dispatcher: ${target.label}: ${describe(error)}`)
        })
      const drainTarget = (target: DrainTarget): Target => ({
        id: target.id,
        label: target.label,
        process: { pid: target.pid, api: false, readyRssMiB: target.readyRssMiB },
        round: (seconds) => drain(target, Math.round(DELIVERIES_PER_ROUND_SECOND * seconds), target.claims === true),
        counted: () => Effect.as(drain(target, COUNTED_DELIVERIES), COUNTED_DELIVERIES)
      })

      const dispatcherTarget = drainTarget({
        id: "dispatcher",
        label: `dispatcher (${n} events → deliveries)`,
        pid: subject.pid,
        readyRssMiB: subject.readyRssMiB,
        claims: true,
        preload: async (count) => {
          const { schools, payloads } = spread(count)
          await query(
            `INSERT INTO outbox_events (school_id, event, payload)
             SELECT s, $3, p::json FROM unnest($1::int[], $2::text[]) WITH ORDINALITY AS t(s, p, n) ORDER BY n`,
            [schools, payloads, EVENT]
          )
        },
        busy: pendingWork
      })
      const graphileTarget = drainTarget({
        id: "graphile",
        label: "graphile-worker (a job per delivery)",
        pid: pidOf(graphileLoop),
        readyRssMiB: undefined,
        preload: async (count) => {
          const timestamp = new Date().toISOString()
          const specs = Array.from({ length: count }, (_, i) => {
            const s = data.throughput[i % SUBSCRIPTIONS]
            if (s === undefined) throw new Error("no subscription")
            const payload: DeliverPayload = {
              deliveryId: ++graphileDeliveryId,
              subscriptionId: s.id,
              url: s.url,
              event: EVENT,
              body: Signature.deliveryBody({ event: EVENT, accountId: s.schoolId, payloadJson: payloadText(i + 1), timestamp })
            }
            return { identifier: "deliver", payload }
          })
          await workerUtils.addJobs(specs)
          // Statistics for the jobs just added, as autovacuum would give a table that grew by 10 000 rows: the
          // round's tables were emptied before it, and on an empty table's statistics graphile-worker's job fetch
          // was planned as a scan (2.8-3.3 ms a fetch; once 7 313 of 10 000 jobs in 60 s). The peer gets its best
          // conditions; our dispatcher's statements are written not to depend on them (docs/decisions.md "Webhooks").
          await query(`ANALYZE graphile_worker._private_jobs`)
        },
        busy: async () => {
          const { rows } = await query<{ busy: boolean }>(`SELECT EXISTS (SELECT 1 FROM graphile_worker._private_jobs) AS busy`)
          return rows[0]?.busy !== false
        }
      })
      const bareTarget = drainTarget({
        id: "bare",
        label: "bare loop (claim, POST, mark)",
        pid: pidOf(bareLoop),
        readyRssMiB: undefined,
        preload: async (count) => {
          const { schools, subscriptions, payloads } = spread(count)
          // The body the dispatcher builds (WebhookSignature.deliveryBody), stored up front.
          await query(
            `WITH t AS (
               SELECT * FROM unnest($1::int[], $2::int[], $3::text[]) WITH ORDINALITY AS t(school_id, subscription_id, payload, n)
             ), e AS (
               INSERT INTO outbox_events (school_id, event, payload, fanned_out_at)
               SELECT school_id, $4, payload::json, now() FROM t ORDER BY n
               RETURNING school_id, id, payload
             )
             INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, body)
             SELECT e.school_id, s.id, e.id, $4,
                    '{"event":' || to_json($4::text)::text || ',"account_id":' || e.school_id || ',"payload":' || e.payload::text ||
                    ',"timestamp":' || to_json($5::text)::text || '}'
             FROM e JOIN webhook_subscriptions s ON s.school_id = e.school_id
             ORDER BY e.id`,
            [schools, subscriptions, payloads, EVENT, new Date().toISOString()]
          )
        },
        busy: pendingWork
      })

      // -- Latency at a steady rate -------------------------------------------
      /** What runs beside the steady stream: nothing (`latency`), a hanging subscription (`isolation`), a noisy school. */
      type Beside = "nothing" | "hanging" | "noisy"
      const noisyIds = data.noisy.map((s) => s.id)
      /**
       * The noisy school's flood, in place before the stream starts: its
       * subscriptions enabled, its `webhook.test` events inserted (one outbox
       * row naming one subscription each, as Webhooks `queueTest` writes
       * them), then up to 2 s for them to be fanned out and for the school to
       * hold every slot it may.
       */
      const startFlood = async () => {
        await query(`UPDATE webhook_subscriptions SET status = 'active' WHERE school_id = $1`, [data.noisySchool])
        await query(
          `INSERT INTO outbox_events (school_id, event, payload, subscription_id)
           SELECT $1, 'webhook.test', json_build_object('subscription_id', s, 'message', $3::text), s
           FROM generate_series(1, $4::int) g CROSS JOIN unnest($2::int[]) s
           ORDER BY g, s`,
          [data.noisySchool, noisyIds, TEST_MESSAGE, NOISY_PER_SUBSCRIPTION]
        )
        const deadline = performance.now() + 2_000
        while (performance.now() < deadline) {
          if (receivers.held() >= NOISY_HELD) {
            const { rows } = await query<{ busy: boolean }>(
              `SELECT EXISTS (SELECT 1 FROM outbox_events WHERE fanned_out_at IS NULL) AS busy`
            )
            if (rows[0]?.busy === false) return
          }
          await sleep(10)
        }
      }
      /**
       * Ends the flood so the next round starts clean: the noisy
       * subscriptions disabled (nothing more is claimed for them), their
       * receiver answering 503 at once and its held requests cut, until the
       * dispatcher holds none of the school's deliveries (every lease
       * recorded or given back; at most 5 s), then the tables emptied.
       */
      const stopFlood = async () => {
        await query(`UPDATE webhook_subscriptions SET status = 'disabled' WHERE school_id = $1`, [data.noisySchool])
        receivers.refuse(true)
        receivers.releaseHanging()
        const deadline = performance.now() + 5_000
        while (performance.now() < deadline) {
          const { rows } = await query<{ held: boolean }>(
            `SELECT EXISTS (
               SELECT 1 FROM webhook_deliveries
               WHERE school_id = $1 AND status = 'pending' AND lease_until > now()
             ) AS held`,
            [data.noisySchool]
          )
          if (rows[0]?.held === false) break
          await sleep(20)
        }
        receivers.refuse(false)
        receivers.releaseHanging()
        await clean()
      }
      /** `onClaims`: the claim statement of the round, from the stream's start to the last arrival (`noisy`). */
      const steady = (
        beside: Beside,
        seconds: number,
        onClaims?: (round: ClaimRound) => void
      ): Effect.Effect<RoundFigures, BenchError> =>
        Effect.tryPromise({
          try: async () => {
            activate(latencyProcess.pid)
            await clean()
            await query(`UPDATE webhook_subscriptions SET status = $3 WHERE school_id = $1 AND id = $2`, [
              data.hanging.schoolId,
              data.hanging.id,
              beside === "hanging" ? "active" : "disabled"
            ])
            const total = Math.max(1, Math.round(RATE * seconds))
            const committed = new Float64Array(total).fill(Number.NaN)
            const arrivedAt = new Float64Array(total).fill(Number.NaN)
            resetReceiver((arrival) => {
              const seq = Dispatch.leadOf(arrival.body)
              if (seq >= 0 && seq < total && Number.isNaN(arrivedAt[seq])) arrivedAt[seq] = arrival.at
            })
            if (beside === "noisy") await startFlood()
            const before = onClaims === undefined ? undefined : await statementsNow()
            // `noisy`: the stream goes round the other schools; else to the latency school.
            const schoolOf = beside === "noisy"
              ? (i: number) => data.others[i % OTHER_SCHOOLS]?.schoolId ?? 0
              : () => data.healthy.schoolId
            const sent = await Dispatch.streamEvents({ query, total, rate: RATE, schoolOf, committed })
            await waitForArrivals(total, 5_000)
            if (before !== undefined) onClaims?.(claimBetween(before, await statementsNow(), undefined))
            if (beside === "noisy") await stopFlood()
            else receivers.releaseHanging()
            const latencies: Array<number> = []
            for (let i = 0; i < total; i++) {
              const at = arrivedAt[i] ?? Number.NaN
              const commit = committed[i] ?? Number.NaN
              if (!Number.isNaN(at) && !Number.isNaN(commit)) latencies.push(at - commit)
            }
            latencies.sort((a, b) => a - b)
            // Let the dispatcher record the attempts the release cut off before the tables are emptied.
            await sleep(beside === "hanging" ? 300 : 50)
            activate(0)
            return Dispatch.latencyFigures({ latencies, total, sent, seconds: sent, badSignatures: arrivals.badSignatures })
          },
          catch: (error) => benchError(`dispatcher: latency: ${describe(error)}`)
        })
      const steadyTarget = (id: string, label: string, beside: Beside, claims = false): Target => ({
        id,
        label,
        process: { pid: latencyProcess.pid, api: false, readyRssMiB: latencyProcess.readyRssMiB },
        round: (seconds) => steady(beside, seconds, claims ? (round) => recordClaims(id, round) : undefined),
        counted: (requests) => Effect.map(steady(beside, requests / RATE), (figures) => figures.requests)
      })

      return [
        dispatcherTarget,
        graphileTarget,
        bareTarget,
        steadyTarget("latency", `dispatcher, ${RATE} events/s: commit→arrival`, "nothing"),
        steadyTarget("isolation", `dispatcher, ${RATE} events/s, a hanging receiver beside`, "hanging"),
        steadyTarget("noisy", `dispatcher, ${RATE} events/s over ${OTHER_SCHOOLS} schools, a noisy school beside`, "noisy", true)
      ]
    }),
  ratios: [["dispatcher", "graphile"], ["dispatcher", "bare"]],
  goals: (figures) => {
    const latency = figuresOf(figures, "latency")
    const isolation = figuresOf(figures, "isolation")
    const subject = figuresOf(figures, "dispatcher")
    const isolationRatio = ratio(isolation.p99, latency.p99)
    const noisy = figuresOf(figures, "noisy")
    const noisyRatio = ratio(noisy.p99, latency.p99)
    const rss = subject.peakRssMiB
    const claims = [claimFigures("dispatcher"), claimFigures("noisy")]
    return [
      throughputGoal(figures, "dispatcher", "graphile", 1.2, "graphile-worker"),
      cpuGoal(
        figures,
        "dispatcher",
        "graphile",
        1.0,
        "postgres",
        "PostgreSQL CPU µs per delivery ≤ graphile-worker's"
      ),
      throughputGoal(figures, "dispatcher", "bare", 0.8, "bare loop"),
      { goal: "commit→arrival p50 ≤ 10 ms at 200 events/s", measured: ms(latency.p50), pass: latency.p50 <= 10 },
      { goal: "commit→arrival p99 ≤ 50 ms at 200 events/s", measured: ms(latency.p99), pass: latency.p99 <= 50 },
      {
        goal: "p99 with a hanging receiver beside ≤ 1.5x without",
        measured: `${ms(isolation.p99)} vs ${ms(latency.p99)} (${times(isolationRatio)})`,
        pass: isolationRatio <= 1.5
      },
      {
        goal: "other schools' p99 with a noisy school beside ≤ 1.5x without",
        measured: `${ms(noisy.p99)} vs ${ms(latency.p99)} (${times(noisyRatio)})`,
        pass: noisyRatio <= 1.5
      },
      { goal: "other schools' p99 with a noisy school beside ≤ 50 ms", measured: ms(noisy.p99), pass: noisy.p99 <= 50 },
      {
        goal: "dispatcher peak RSS ≤ 150 MiB under the throughput load",
        measured: rss === undefined ? "not measured" : `${rss} MiB`,
        pass: rss !== undefined && rss <= 150
      },
      {
        goal: "claim statement (one per batch): mean execution time and calls per round printed",
        measured: `${claimText("throughput", "dispatcher")}; ${claimText("noisy", "noisy")}`,
        pass: claims.every((figures) => figures !== undefined)
      }
    ]
  }
}
