/**
 * The per-key rate limiter, two scenarios:
 *
 * - `rate-limit-cost`: an authenticated GET on the real API with the limiter
 *   (the default: every request is counted in the statement that looks the key
 *   up) against the same API with `RATE_LIMIT_WINDOW=off` (the plain key
 *   lookup, nothing counted), every key past its first request: at
 *   saturation (throughput) and at a fixed 500 req/s (latency at the same
 *   offered load). Goal: the limiter adds no round trip (at most one was
 *   allowed); its latency and throughput costs are printed.
 * - `rate-limit-flood`: the other keys' requests (the data set's keys, each far
 *   under its budget) while one key of the same school is flooded at 20x its
 *   budget from 16 connections, against the same load with no flood; and the
 *   flooded key itself, whose requests the API rejects without the database
 *   once it knows the key is over budget. Goals: the others' p99 within 1.5x of
 *   quiet; the flood costs the database (almost) nothing per request.
 */
import { Effect, Fiber } from "effect"
import { ApiKey, Plans } from "@school/domain"
import { randomBytes } from "node:crypto"
import { benchError } from "../lib/Processes.ts"
import { figuresOf, httpTarget, ms, ratio, type Scenario, type Target, times } from "../lib/Scenario.ts"
import { runHttp } from "../lib/Load.ts"

/** A light authenticated GET (the school's 5 filials), so the limiter's share of the work shows. */
const PATH = "/api/public/v1/filials?per_page=5"

/** The data sets' schools are on `pro`. */
const FLOODED_BUDGET = Plans.budgetPerMinute("pro")
const FLOOD_FACTOR = 20
const FLOOD_CONNECTIONS = 16
/** An offered load both sides carry easily, for the latency comparison. */
const FIXED_RATE = 500
/** Few connections, so the paced requests arrive spread out rather than in bursts of 32. */
const FIXED_RATE_CONNECTIONS = 4

const warm = (baseUrl: string, key: string) =>
  Effect.tryPromise({
    try: () => fetch(baseUrl + PATH, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.arrayBuffer()),
    catch: (error) => benchError(`warming the limiter failed: ${String(error)}`)
  })

export const rateLimitCost: Scenario = {
  id: "rate-limit-cost",
  title: "Rate limiter cost on an authenticated GET (with vs without)",
  datasets: ["10k"],
  sameBody: true,
  setup: (context) =>
    Effect.gen(function*() {
      const data = context.dataset("10k")
      const { connections } = context.settings
      const load = { paths: [PATH], keys: data.keys }
      const limited = yield* context.start.api()
      const unlimited = yield* context.start.api({ RATE_LIMIT_WINDOW: "off" })
      // Steady state: every key has made its first request (which creates its
      // limiter rows) before the rounds, as an integrator's keys have.
      yield* Effect.forEach(data.keys, (key) => warm(limited.baseUrl, key), { concurrency: 16, discard: true })
      const atRate = (id: string, label: string, server: typeof limited): Target => ({
        ...httpTarget({ id, label, server, load, connections }),
        round: (seconds) => runAtRate(server.baseUrl, data.keys, FIXED_RATE, FIXED_RATE_CONNECTIONS, seconds)
      })
      return [
        httpTarget({ id: "api", label: "API, limiter on", server: limited, load, connections, api: true }),
        httpTarget({ id: "api-off", label: "API, RATE_LIMIT_WINDOW=off", server: unlimited, load, connections, api: true }),
        atRate("api-rate", `API, limiter on, ${FIXED_RATE} req/s`, limited),
        atRate("api-off-rate", `API, off, ${FIXED_RATE} req/s`, unlimited)
      ]
    }),
  ratios: [["api", "api-off"]],
  goals: (figures) => {
    const on = figuresOf(figures, "api")
    const off = figuresOf(figures, "api-off")
    const onRate = figuresOf(figures, "api-rate")
    const offRate = figuresOf(figures, "api-off-rate")
    const extra = on.roundTrips === undefined || off.roundTrips === undefined
      ? Number.NaN
      : on.roundTrips - off.roundTrips
    return [
      {
        goal: "the limiter costs at most one round trip",
        measured: `${on.roundTrips ?? "n/a"} vs ${off.roundTrips ?? "n/a"} per request (${
          Number.isFinite(extra) ? `+${extra.toFixed(2)}` : "n/a"
        })`,
        pass: extra <= 1
      },
      {
        goal: `latency cost at ${FIXED_RATE} req/s printed`,
        measured: `p50 ${ms(onRate.p50)} vs ${ms(offRate.p50)} (+${(onRate.p50 - offRate.p50).toFixed(2)} ms), p99 ${
          ms(onRate.p99)
        } vs ${ms(offRate.p99)}`,
        pass: Number.isFinite(onRate.p50) && Number.isFinite(offRate.p50)
      },
      {
        goal: "throughput cost at saturation printed",
        measured: `${on.rps} vs ${off.rps} req/s (${times(ratio(on.rps, off.rps))}); p50 ${ms(on.p50)} vs ${ms(off.p50)}`,
        pass: Number.isFinite(on.rps) && Number.isFinite(off.rps)
      }
    ]
  }
}

/** What the flood's own responses were, over every round of the last run (for the goals table). */
const flood = { requests: 0, statuses: {} as Record<string, number> }

/**
 * `keys` (taken in turn) at `rate` requests per second from `connections`
 * connections, for `seconds`: an open load, so latencies compare at the same
 * offered load rather than at saturation. `tally` adds up the responses.
 */
const runAtRate = (
  baseUrl: string,
  keys: ReadonlyArray<string>,
  rate: number,
  connections: number,
  seconds: number,
  tally?: { requests: number; statuses: Record<string, number> }
) =>
  runHttp({ baseUrl, paths: [PATH], keys }, { connections, seconds, rate }).pipe(
    Effect.tap((figures) =>
      Effect.sync(() => {
        if (tally === undefined) return
        tally.requests += figures.requests
        for (const [status, count] of Object.entries(figures.statuses)) {
          tally.statuses[status] = (tally.statuses[status] ?? 0) + count
        }
      })
    )
  )

/** One key at `rate` requests per second from many connections. */
const runFlood = (baseUrl: string, key: string, rate: number, seconds: number) =>
  runAtRate(baseUrl, [key], rate, FLOOD_CONNECTIONS, seconds, flood)

/** A key of its own for the flood, so the data set's keys stay under budget for every other scenario. */
const issueFloodKey = (context: Parameters<Scenario["setup"]>[0], schoolId: number) =>
  Effect.gen(function*() {
    const key = ApiKey.generateApiKey((n) => randomBytes(n))
    yield* context.db.sql`
      WITH k AS (
        INSERT INTO api_keys (school_id, name, prefix, secret_hash, scope)
        VALUES (${schoolId}, 'bench flood', ${key.prefix}, ${ApiKey.hashSecret(key.secret)}, 'read')
        RETURNING school_id, prefix
      )
      INSERT INTO api_key_prefixes (prefix, school_id) SELECT prefix, school_id FROM k`.pipe(
      Effect.mapError((error) => benchError(`issuing the flood key failed: ${String(error)}`))
    )
    return ApiKey.formatApiKey(key)
  })

export const rateLimitFlood: Scenario = {
  id: "rate-limit-flood",
  title: `Other keys while one key is flooded at ${FLOOD_FACTOR}x its budget`,
  datasets: ["10k"],
  sameBody: false,
  setup: (context) =>
    Effect.gen(function*() {
      flood.requests = 0
      flood.statuses = {}
      const data = context.dataset("10k")
      const { connections } = context.settings
      const load = { paths: [PATH], keys: data.keys }
      const floodKey = yield* issueFloodKey(context, data.schoolId)
      const rate = Math.round((FLOOD_FACTOR * FLOODED_BUDGET) / 60)
      const api = yield* context.start.api()
      const quiet = httpTarget({ id: "quiet", label: "other keys, no flood", server: api, load, connections, api: true })
      const others = httpTarget({ id: "flooded", label: "other keys, one key flooded", server: api, load, connections })
      const withFlood: Target = {
        ...others,
        round: (seconds) =>
          Effect.gen(function*() {
            const background = yield* Effect.forkChild(runFlood(api.baseUrl, floodKey, rate, seconds))
            const figures = yield* others.round(seconds)
            yield* Fiber.join(background)
            return figures
          })
      }
      const floodAlone = httpTarget({
        id: "flood-key",
        label: `the flooded key (${rate} req/s)`,
        server: api,
        load: { paths: [PATH], keys: [floodKey] },
        connections: FLOOD_CONNECTIONS
      })
      const floodTarget: Target = {
        ...floodAlone,
        // It answers 429 by design: no 200 preflight.
        probe: undefined,
        round: (seconds) => runFlood(api.baseUrl, floodKey, rate, seconds)
      }
      return [withFlood, quiet, floodTarget]
    }),
  ratios: [["flooded", "quiet"]],
  goals: (figures) => {
    const flooded = figuresOf(figures, "flooded")
    const quiet = figuresOf(figures, "quiet")
    const floodKey = figuresOf(figures, "flood-key")
    const p99 = ratio(flooded.p99, quiet.p99)
    const rejected = flood.statuses["429"] ?? 0
    return [
      {
        goal: "other keys' p99 within 1.5x of quiet",
        measured: `${ms(flooded.p99)} vs ${ms(quiet.p99)} (${times(p99)})`,
        pass: p99 <= 1.5
      },
      {
        goal: "a flooded key costs the database nothing per rejected request",
        measured: `${floodKey.roundTrips ?? "n/a"} round trips per flood request; flood answered 429 ${rejected} of ${flood.requests}`,
        pass: floodKey.roundTrips !== undefined && floodKey.roundTrips < 0.05
      }
    ]
  }
}
