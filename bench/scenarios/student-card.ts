/**
 * GET /students/{id}: the student card with its active groups, over 1 000
 * enrolled students of the 10 000-student school in turn, against a `peer`
 * version of it (Fastify + pg: the student, then their groups).
 */
import { Effect } from "effect"
import { PEER } from "../lib/Paths.ts"
import { httpTarget, type Scenario, throughputGoal } from "../lib/Scenario.ts"

export const studentCard: Scenario = {
  id: "student-card",
  title: "GET /students/{id} with active_groups",
  datasets: ["10k"],
  sameBody: true,
  setup: (context) =>
    Effect.gen(function*() {
      const data = context.dataset("10k")
      const { connections } = context.settings
      const load = { paths: data.cardStudentIds.map((id) => `/api/public/v1/students/${id}`), keys: data.keys }
      const api = yield* context.start.api()
      const peer = yield* context.start.server("peer", PEER)
      return [
        httpTarget({ id: "api", label: "API", server: api, load, connections, api: true }),
        httpTarget({ id: "peer", label: "peer (Fastify + pg)", server: peer, load, connections })
      ]
    }),
  goals: (figures) => [throughputGoal(figures, "api", "peer", 1.5, "peer")]
}
