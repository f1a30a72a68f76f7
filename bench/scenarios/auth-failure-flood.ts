/**
 * `auth-failure-flood` (docs/decisions.md "Rate limits"): the other
 * keys' requests (the data set's keys, each far under its budget) while one
 * address floods the API with credentials that fail authentication, against
 * the same load with no flood. The flood is well-formed keys nobody issued,
 * each one different (so no answer can be remembered), at ~1,900 req/s from
 * 16 connections: the probe that found the problem sent 3,000 at that rate
 * and raised another key's p95 from 5.8 ms to 40.9 ms.
 *
 * Flood and other keys come from the same address (the load generator's),
 * which is the hard case for the guard: the NAT an attacker shares with an
 * integrator. The other keys have all authenticated before the rounds, as an
 * integrator's keys have.
 *
 * The other keys run at a fixed 300 req/s from 4 connections (an open
 * load, as an integrator sends), so their latency is compared at the same
 * offered load, not at saturation, where queueing would hide the flood.
 *
 * Printed: the others' p95 and p99 with and without the flood and their
 * ratios, what the flood was answered (401 from the database, 429 from the
 * guard), and the database round trips per flood request.
 */
import { Effect, Fiber } from "effect"
import { ApiKey } from "@school/domain"
import { randomBytes } from "node:crypto"
import { runHttp } from "../lib/Load.ts"
import { benchError } from "../lib/Processes.ts"
import { figuresOf, httpTarget, ms, ratio, type Scenario, type Target, times } from "../lib/Scenario.ts"
import { median, type RoundFigures } from "../lib/Stats.ts"

/** A light authenticated GET (the school's 5 filials), as in rate-limit-flood. */
const PATH = "/api/public/v1/filials?per_page=5"
const FLOOD_RATE = 1_900
const FLOOD_CONNECTIONS = 16
/** Distinct bad keys, more than a run sends, so none repeats. */
const FLOOD_KEYS = 100_000
/** The other keys' offered load. */
const OTHERS_RATE = 300
const OTHERS_CONNECTIONS = 4

/** Per target, the p95 of each measured round (the table shows p50 and p99 only); and the flood's answers. */
const p95s = new Map<string, Array<number>>()
const flood = { requests: 0, statuses: {} as Record<string, number> }

const recordP95 = (id: string) => (figures: RoundFigures) =>
  Effect.sync(() => {
    if (figures.p95 === undefined) return
    const list = p95s.get(id) ?? []
    list.push(figures.p95)
    p95s.set(id, list)
  })

const p95Of = (id: string): number => Math.round(median(p95s.get(id) ?? []) * 100) / 100

const warm = (baseUrl: string, key: string) =>
  Effect.tryPromise({
    try: () => fetch(baseUrl + PATH, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.arrayBuffer()),
    catch: (error) => benchError(`warming the keys failed: ${String(error)}`)
  })

const badKeys = (): ReadonlyArray<string> =>
  Array.from({ length: FLOOD_KEYS }, () => ApiKey.formatApiKey(ApiKey.generateApiKey((n) => randomBytes(n))))

export const authFailureFlood: Scenario = {
  id: "auth-failure-flood",
  title: `Other keys while one address floods failed authentications at ~${FLOOD_RATE} req/s`,
  datasets: ["10k"],
  sameBody: false,
  setup: (context) =>
    Effect.gen(function*() {
      p95s.clear()
      flood.requests = 0
      flood.statuses = {}
      const data = context.dataset("10k")
      const { connections } = context.settings
      const load = { paths: [PATH], keys: data.keys }
      const keys = badKeys()
      let offset = 0
      const api = yield* context.start.api()
      yield* Effect.forEach(data.keys, (key) => warm(api.baseUrl, key), { concurrency: 16, discard: true })

      /** The flood for `seconds`, each round on keys not sent before. */
      const runFlood = (seconds: number) =>
        Effect.suspend(() => {
          const start = offset
          offset = (offset + Math.ceil(FLOOD_RATE * seconds * 1.2)) % FLOOD_KEYS
          return runHttp({ baseUrl: api.baseUrl, paths: [PATH], keys: [...keys.slice(start), ...keys.slice(0, start)] }, {
            connections: FLOOD_CONNECTIONS,
            seconds,
            rate: FLOOD_RATE
          })
        }).pipe(Effect.tap((figures) =>
          Effect.sync(() => {
            flood.requests += figures.requests
            for (const [status, count] of Object.entries(figures.statuses)) {
              flood.statuses[status] = (flood.statuses[status] ?? 0) + count
            }
          })
        ))

      const atRate = (seconds: number) =>
        runHttp({ ...load, baseUrl: api.baseUrl }, { connections: OTHERS_CONNECTIONS, seconds, rate: OTHERS_RATE })
      const quietBase = httpTarget({ id: "quiet", label: `other keys, quiet (${OTHERS_RATE}/s)`, server: api, load, connections, api: true })
      const quiet: Target = { ...quietBase, round: (seconds) => atRate(seconds).pipe(Effect.tap(recordP95("quiet"))) }
      const others: Target = {
        ...httpTarget({
          id: "flooded",
          label: `other keys (${OTHERS_RATE}/s), bad-key flood at ~${FLOOD_RATE}/s`,
          server: api,
          load,
          connections
        }),
        round: atRate
      }
      const flooded: Target = {
        ...others,
        round: (seconds) =>
          Effect.gen(function*() {
            const background = yield* Effect.forkChild(runFlood(seconds))
            const figures = yield* others.round(seconds)
            yield* Fiber.join(background)
            return figures
          }).pipe(Effect.tap(recordP95("flooded")))
      }
      const floodAlone = httpTarget({
        id: "flood",
        label: `the bad-key flood (${FLOOD_RATE} req/s)`,
        server: api,
        // Counting round trips: keys the rounds never reach (they start at the front).
        load: { paths: [PATH], keys: keys.slice(-5_000) },
        connections: FLOOD_CONNECTIONS
      })
      const floodTarget: Target = {
        ...floodAlone,
        // It answers 401 or 429 by design: no 200 preflight.
        probe: undefined,
        round: runFlood
      }
      return [flooded, quiet, floodTarget]
    }),
  ratios: [["flooded", "quiet"]],
  goals: (figures) => {
    const flooded = figuresOf(figures, "flooded")
    const quiet = figuresOf(figures, "quiet")
    const floodFigures = figuresOf(figures, "flood")
    const p95 = { flooded: p95Of("flooded"), quiet: p95Of("quiet") }
    const p95Ratio = ratio(p95.flooded, p95.quiet)
    const p99Ratio = ratio(flooded.p99, quiet.p99)
    return [
      {
        goal: "other keys' p95 within 1.5x of quiet",
        measured: `p95 ${ms(p95.flooded)} vs ${ms(p95.quiet)} (${times(p95Ratio)})`,
        pass: p95Ratio <= 1.5
      },
      {
        goal: "other keys' p99 within 1.5x of quiet",
        measured: `p99 ${ms(flooded.p99)} vs ${ms(quiet.p99)} (${times(p99Ratio)})`,
        pass: p99Ratio <= 1.5
      },
      {
        goal: "a blocked address costs the database nothing per rejected request",
        measured: `${floodFigures.roundTrips ?? "n/a"} round trips per flood request; flood answered 401 ${
          flood.statuses["401"] ?? 0
        }, 429 ${flood.statuses["429"] ?? 0} of ${flood.requests}`,
        pass: floodFigures.roundTrips !== undefined && floodFigures.roundTrips < 0.05
      }
    ]
  }
}
