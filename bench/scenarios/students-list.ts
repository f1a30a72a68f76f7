/**
 * GET /students, page 1 of 20, on the 10 000-student school: the request an
 * integrator's sync makes most. The API (authentication, rate limit, list
 * and total) against `peer` (Fastify + pg, the same job) and `sql-only` (the
 * same statements from a bare loop, no HTTP).
 */
import { Effect } from "effect"
import { PEER, SQL_ONLY } from "../lib/Paths.ts"
import { cpuGoal, figuresOf, httpTarget, ms, ratio, type Scenario, throughputGoal, times } from "../lib/Scenario.ts"

export const studentsList: Scenario = {
  id: "students-list",
  title: "GET /students (per_page 20, auth + rate limit)",
  datasets: ["10k"],
  sameBody: true,
  setup: (context) =>
    Effect.gen(function*() {
      const data = context.dataset("10k")
      const { connections } = context.settings
      const load = { paths: ["/api/public/v1/students?page=1&per_page=20"], keys: data.keys }
      const api = yield* context.start.api()
      const peer = yield* context.start.server("peer", PEER)
      const keysFile = yield* context.writeFile("keys-10k.json", JSON.stringify(data.keys))
      const sqlOnly = yield* context.start.loop("sql-only", SQL_ONLY, {
        BENCH_KEYS_FILE: keysFile,
        BENCH_CONCURRENCY: String(connections)
      })
      return [
        httpTarget({ id: "api", label: "API", server: api, load, connections, api: true }),
        httpTarget({ id: "peer", label: "peer (Fastify + pg)", server: peer, load, connections }),
        sqlOnly
      ]
    }),
  goals: (figures) => {
    const api = figuresOf(figures, "api")
    const peer = figuresOf(figures, "peer")
    const p99 = ratio(api.p99, peer.p99)
    const tail = ratio(api.p99, api.p50)
    return [
      throughputGoal(figures, "api", "peer", 1.0, "peer"),
      throughputGoal(figures, "api", "sql-only", 1.0, "sql-only"),
      cpuGoal(figures, "api", "sql-only", 2.0, "server", "API CPU µs per request ≤ 2.0x sql-only's"),
      { goal: "p99 ≤ peer's", measured: `${ms(api.p99)} vs ${ms(peer.p99)} (${times(p99)})`, pass: p99 <= 1 },
      { goal: "p99 ≤ 2.5x its own p50", measured: `${ms(api.p99)} vs p50 ${ms(api.p50)} (${times(tail)})`, pass: tail <= 2.5 },
      {
        goal: "round trips per request printed",
        measured: `API ${api.roundTrips ?? "n/a"}, peer ${peer.roundTrips ?? "n/a"}, sql-only ${
          figuresOf(figures, "sql-only").roundTrips ?? "n/a"
        }`,
        pass: api.roundTrips !== undefined
      }
    ]
  }
}
