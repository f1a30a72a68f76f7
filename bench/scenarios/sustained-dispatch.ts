/**
 * `sustained-dispatch` (docs/decisions.md "The webhook dispatcher"): the
 * dispatcher process (apps/dispatcher/src/main.ts, run as `npm run
 * start:dispatcher` runs it, on the server core) under 1,000 events/s
 * offered for 60 s, to healthy receivers: 8 schools with one subscription
 * each (the events go round them), the receiver in the harness answering 204
 * at once (bench/lib/Dispatch.ts, as in `dispatcher`). Each event is its own
 * transaction, as a business write commits its event; commit→arrival is the
 * receiver's arrival time minus the moment the inserter saw its commit (same
 * process, same clock).
 *
 * Every second of the round the backlog is sampled: outbox events not yet
 * fanned out plus deliveries pending. A dispatcher that keeps up holds it
 * flat; one that falls behind grows it by the shortfall every second.
 *
 * One round of 60 s (a 3 s warm-up at the same rate before it); a quick run
 * offers the same rate for 10 s. The tables are emptied before the warm-up;
 * the round starts on what the warm-up left, analyzed (`prepare`).
 * The counting pass streams 500 events: the statements per event.
 *
 * Goals: commit→arrival p99 ≤ 100 ms; no backlog growth (the mean backlog of
 * the last 10 s ≤ that of the first 10 s + 100, a tenth of a second of the
 * offered load); and the load itself held: every event committed at the
 * offered rate (≥ 98% of it over the round) and delivered within 10 s of the
 * last commit.
 */
import { Effect } from "effect"
import pg from "pg"
import * as Dispatch from "../lib/Dispatch.ts"
import { benchError, type BenchError } from "../lib/Processes.ts"
import { figuresOf, ms, type Scenario, type Target } from "../lib/Scenario.ts"
import { percentile, type RoundFigures } from "../lib/Stats.ts"

/** Events offered per second. */
const RATE = 1_000
/** The round's length (a quick run's: QUICK_SECONDS). */
const SECONDS = 60
const QUICK_SECONDS = 10
/** Schools the events go round (one subscription each). */
const SCHOOLS = 8
/** The backlog's windows compared: the first and the last this many seconds. */
const WINDOW = 10
/** How much higher the last window's mean backlog may be than the first's: a tenth of a second of the offered load. */
const ALLOWANCE = RATE / 10
/** The committed rate must reach this share of the offered one. */
const HELD = 0.98
/** After the last commit, how long the round waits for the last arrivals. */
const DRAIN_MS = 10_000
/** Events of the counting pass. */
const COUNTED_EVENTS = 500

/** One second of a round: the backlog sampled at its end. */
interface Second {
  readonly at: number
  readonly backlog: number
}

/** What a round measured beyond its RoundFigures (the goals and the table read the last one: the measured round). */
interface SustainedRound {
  readonly total: number
  readonly arrived: number
  readonly committedRate: number
  readonly seconds: ReadonlyArray<Second>
  /** Per 10 s of the stream: events committed in it, their p99 commit→arrival, the mean backlog. */
  readonly windows: ReadonlyArray<{ readonly from: number; readonly events: number; readonly p99: number; readonly backlog: number }>
}

const rounds: Array<SustainedRound> = []

const mean = (values: ReadonlyArray<number>) =>
  values.length === 0 ? Number.NaN : values.reduce((sum, v) => sum + v, 0) / values.length

const round2 = (value: number) => Math.round(value * 100) / 100

/** The mean backlog over the samples taken in [from, to) seconds of the stream. */
const backlogBetween = (seconds: ReadonlyArray<Second>, from: number, to: number) =>
  mean(seconds.filter((s) => s.at > from && s.at <= to).map((s) => s.backlog))

const lastRound = () => rounds[rounds.length - 1]

export const sustainedDispatch: Scenario = {
  id: "sustained-dispatch",
  title: `Webhook dispatcher: ${RATE} events/s offered for ${SECONDS} s, commit→arrival and backlog`,
  datasets: [],
  sameBody: false,
  rounds: (settings) => ({ warmupSeconds: settings.quick ? 1 : 3, roundSeconds: settings.quick ? QUICK_SECONDS : SECONDS, rounds: 1 }),
  setup: (context) =>
    Effect.gen(function*() {
      rounds.length = 0
      const receivers = yield* Dispatch.startReceivers
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => new pg.Pool({ connectionString: context.db.url, max: 8, application_name: "school-bench-sustained" })),
        (p) => Effect.promise(() => p.end())
      )
      const query: Dispatch.Query = <R extends pg.QueryResultRow>(text: string, values: ReadonlyArray<unknown> = []) =>
        pool.query<R>(text, [...values])
      // Its own connection: the samples are not queued behind the inserts.
      const sampler = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: async () => {
            const client = new pg.Client({ connectionString: context.db.url, application_name: "school-bench-backlog" })
            await client.connect()
            return client
          },
          catch: (error) => benchError(`sustained-dispatch: the sampler cannot connect: ${Dispatch.describe(error)}`)
        }),
        (client) => Effect.promise(() => client.end())
      )
      const subscriptions = yield* Effect.tryPromise({
        try: async () => {
          const { rows } = await query<{ id: number }>(
            `INSERT INTO schools (name, plan) SELECT 'bench sustained ' || g, 'pro' FROM generate_series(1, $1::int) g RETURNING id`,
            [SCHOOLS]
          )
          const subscribe = Dispatch.subscribe(query)
          const made: Array<Dispatch.Subscription> = []
          for (const [i, row] of rows.entries()) made.push(await subscribe(row.id, `${receivers.baseUrl}/sustained/${i}`, "active"))
          return made
        },
        catch: (error) => benchError(`sustained-dispatch: loading the subscriptions failed: ${Dispatch.describe(error)}`)
      })
      const arrivals = new Dispatch.Arrivals(
        receivers,
        new Map(subscriptions.map((s) => [new URL(s.url).pathname, s.secret]))
      )
      const dispatcher = yield* Dispatch.startDispatcher(context, "sustained-dispatcher", {})

      const backlog = async () => {
        const { rows } = await sampler.query<{ n: string }>(
          `SELECT (SELECT count(*) FROM outbox_events WHERE fanned_out_at IS NULL)
                + (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') AS n`
        )
        return Number(rows[0]?.n ?? 0)
      }

      /**
       * The tables are emptied before the first stream (the warm-up) only. A later one starts on what
       * the streams before it left, with the statistics autovacuum keeps on a running service
       * (ANALYZE): on tables just emptied, the dispatcher's prepared statements get generic plans made
       * for an empty table (sequential scans), and PostgreSQL keeps them until the table is analyzed,
       * which a 60-s round on a busy core does not reach; the record statement then went from 3.5 to
       * 14 ms a call as the table grew (bench/README.md "The `sustained-dispatch` scenario (`--full`)").
       */
      let emptied = false
      const prepare = async () => {
        if (emptied) {
          await query("ANALYZE webhook_deliveries, webhook_attempts, outbox_events")
          return
        }
        await Dispatch.clean(query)
        emptied = true
      }

      const stream = (seconds: number, record: boolean): Effect.Effect<RoundFigures, BenchError> =>
        Effect.tryPromise({
          try: async () => {
            await prepare()
            const total = Math.max(1, Math.round(RATE * seconds))
            const committed = new Float64Array(total).fill(Number.NaN)
            const arrivedAt = new Float64Array(total).fill(Number.NaN)
            arrivals.reset((arrival) => {
              const seq = Dispatch.leadOf(arrival.body)
              if (seq >= 0 && seq < total && Number.isNaN(arrivedAt[seq])) arrivedAt[seq] = arrival.at
            })
            const started = performance.now()
            const backlogs = Dispatch.everySecond(started, backlog)
            const schoolOf = (i: number) => subscriptions[i % SCHOOLS]?.schoolId ?? 0
            const sent = await Dispatch.streamEvents({ query, total, rate: RATE, schoolOf, committed })
            await backlogs.stop()
            const samples: Array<Second> = backlogs.samples.map((s) => ({ at: s.second, backlog: s.value }))
            await arrivals.wait(total, DRAIN_MS)
            const wall = (performance.now() - started) / 1000
            const latencies: Array<number> = []
            const windows: Array<SustainedRound["windows"][number]> = []
            for (let from = 0; from < seconds; from += WINDOW) {
              const inWindow: Array<number> = []
              const first = Math.round(from * RATE)
              const last = Math.min(total, Math.round((from + WINDOW) * RATE))
              for (let i = first; i < last; i++) {
                const at = arrivedAt[i] ?? Number.NaN
                const commit = committed[i] ?? Number.NaN
                if (!Number.isNaN(at) && !Number.isNaN(commit)) inWindow.push(at - commit)
              }
              inWindow.sort((a, b) => a - b)
              latencies.push(...inWindow)
              windows.push({
                from,
                events: last - first,
                p99: round2(percentile(inWindow, 99)),
                backlog: round2(backlogBetween(samples, from, from + WINDOW))
              })
            }
            latencies.sort((a, b) => a - b)
            if (record) {
              rounds.push({
                total,
                arrived: latencies.length,
                committedRate: total / sent,
                seconds: samples,
                windows
              })
            }
            // Let the dispatcher record the last attempts before the next round empties the tables.
            await Dispatch.sleep(50)
            // The round's wall time, the drain included (the CPU shares are over it); the rate is over the stream.
            return Dispatch.latencyFigures({ latencies, total, sent, seconds: wall, badSignatures: arrivals.badSignatures })
          },
          catch: (error) => benchError(`sustained-dispatch: ${Dispatch.describe(error)}`)
        })

      const target: Target = {
        id: "sustained",
        label: `dispatcher, ${RATE} events/s over ${SCHOOLS} schools: commit→arrival`,
        process: { pid: dispatcher.pid, api: false, readyRssMiB: dispatcher.readyRssMiB },
        round: (seconds) => stream(seconds, true),
        counted: () => Effect.map(stream(COUNTED_EVENTS / RATE, false), (figures) => figures.requests)
      }
      return [target]
    }),
  goals: (figures) => {
    const subject = figuresOf(figures, "sustained")
    const measured = lastRound()
    const first = measured === undefined ? Number.NaN : backlogBetween(measured.seconds, 0, WINDOW)
    const lastAt = measured?.seconds[measured.seconds.length - 1]?.at ?? 0
    const last = measured === undefined ? Number.NaN : backlogBetween(measured.seconds, lastAt - WINDOW, lastAt)
    return [
      {
        goal: `commit→arrival p99 ≤ 100 ms at ${RATE} events/s sustained`,
        measured: `p99 ${ms(subject.p99)}, p50 ${ms(subject.p50)}`,
        pass: subject.p99 <= 100
      },
      {
        goal: `no backlog growth: mean backlog of the last ${WINDOW} s ≤ the first ${WINDOW} s' + ${ALLOWANCE}`,
        measured: measured === undefined
          ? "not measured"
          : `${last.toFixed(1)} vs ${first.toFixed(1)} (outbox events not fanned out + deliveries pending, sampled every second)`,
        pass: Number.isFinite(first) && Number.isFinite(last) && last <= first + ALLOWANCE
      },
      {
        goal: `the load held: ≥ ${HELD * 100}% of ${RATE} events/s committed, every event delivered`,
        measured: measured === undefined
          ? "not measured"
          : `${measured.committedRate.toFixed(0)} events/s committed; ${measured.arrived} of ${measured.total} arrived within ${
            DRAIN_MS / 1000
          } s of the last commit`,
        pass: measured !== undefined && measured.committedRate >= HELD * RATE && measured.arrived === measured.total
      }
    ]
  },
  table: () => {
    const measured = lastRound()
    if (measured === undefined) return { markdown: [], rows: [] }
    return {
      markdown: [
        `| sustained-dispatch: seconds of the stream | events | commit→arrival p99 ms | mean backlog |`,
        "|---|---:|---:|---:|",
        ...measured.windows.map((w) =>
          `| ${w.from}–${w.from + WINDOW} s | ${w.events} | ${Number.isFinite(w.p99) ? w.p99.toFixed(2) : "n/a"} | ${
            Number.isFinite(w.backlog) ? w.backlog.toFixed(1) : "n/a"
          } |`
        )
      ],
      rows: [
        ...measured.windows.map((w) => ({ window: `${w.from}-${w.from + WINDOW}`, events: w.events, p99: w.p99, backlog: w.backlog })),
        ...measured.seconds.map((s) => ({ second: s.at, backlog: s.backlog }))
      ]
    }
  }
}
