/**
 * Our whole middleware stack on GET /students when the handler itself does
 * no database work (the page is read once at start): what envelope,
 * validation, authentication with its rate limit, and the request logger cost,
 * against `bare-httpapi-1rt` (an Effect HttpApi route with no middleware that
 * makes one trivial database round trip per request: the floor for a limiter
 * shared through the database; the goal is against it),
 * `bare-httpapi` (the same route without the round trip) and `raw-http`
 * (node:http), all answering the same bytes.
 */
import { Effect } from "effect"
import { BARE_HTTPAPI, BARE_HTTPAPI_1RT, FULL_MIDDLEWARE, RAW_HTTP } from "../lib/Paths.ts"
import { benchError } from "../lib/Processes.ts"
import { cpuGoal, httpTarget, type Scenario, throughputGoal } from "../lib/Scenario.ts"

const PATH = "/api/public/v1/students?page=1&per_page=20"

export const middleware: Scenario = {
  id: "middleware",
  title: "Our full middleware on a route with no database work",
  datasets: ["10k"],
  sameBody: true,
  setup: (context) =>
    Effect.gen(function*() {
      const data = context.dataset("10k")
      const { connections } = context.settings
      const load = { paths: [PATH], keys: data.keys }
      const subject = yield* context.start.server("full-middleware", FULL_MIDDLEWARE, {
        env: { BENCH_SCHOOL_ID: String(data.schoolId) },
        readyPath: "/health/live"
      })
      // The anchors answer exactly what our stack answers.
      const body = yield* Effect.tryPromise({
        try: () =>
          fetch(subject.baseUrl + PATH, { headers: { authorization: `Bearer ${data.keys[0]}` } }).then((r) => r.text()),
        catch: (error) => benchError(`full-middleware did not answer: ${String(error)}`)
      })
      const bodyFile = yield* context.writeFile("students-page.json", body)
      const bare1rt = yield* context.start.server("bare-httpapi-1rt", BARE_HTTPAPI_1RT, {
        env: { BENCH_BODY_FILE: bodyFile }
      })
      const bare = yield* context.start.server("bare-httpapi", BARE_HTTPAPI, { env: { BENCH_BODY_FILE: bodyFile } })
      const raw = yield* context.start.server("raw-http", RAW_HTTP, { env: { BENCH_BODY_FILE: bodyFile } })
      return [
        httpTarget({ id: "full-middleware", label: "our middleware, no-DB handler", server: subject, load, connections }),
        httpTarget({ id: "bare-httpapi-1rt", label: "bare-httpapi-1rt (one SELECT 1)", server: bare1rt, load, connections }),
        httpTarget({ id: "bare-httpapi", label: "bare-httpapi", server: bare, load, connections }),
        httpTarget({ id: "raw-http", label: "raw-http", server: raw, load, connections })
      ]
    }),
  goals: (figures) => [
    cpuGoal(
      figures,
      "full-middleware",
      "bare-httpapi-1rt",
      2.0,
      "server",
      "CPU µs per request ≤ 2.0x bare-httpapi-1rt's"
    ),
    throughputGoal(figures, "full-middleware", "bare-httpapi-1rt", 0.5, "bare-httpapi-1rt")
  ]
}
