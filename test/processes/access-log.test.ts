/**
 * The access log of the real API process (LOG_FORMAT=json, LOG_LEVEL=debug):
 * one line per request with the method, the route's template, the status and
 * the duration; never a key, whether the client put it in the path, the
 * query or the Authorization header, and whether the path matches a route
 * or not (docs/operations.md "Settings").
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Effect, Option } from "effect"
import { rawClient, V1 } from "../support/Clients.ts"
import { entryPoints, lines, runUntil } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const SECRET = "Zq7LoggedNowhereZq7LoggedNowhere"
const KEY = `svc_leakleak_${SECRET}`

layer(TestDatabase.layer, { excludeTestServices: true })("the access log", (it) => {
  it.effect("logs route templates and statuses, never a key from the path, the query or the header", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* Effect.orDie(freePort)
      const raw = rawClient(`http://127.0.0.1:${port}`)
      const requests: ReadonlyArray<readonly [path: string, route: string]> = [
        [`${V1}/students/${KEY}`, `${V1}/students/:id`],
        // A route of another method (405): no route matched.
        [`${V1}/students/${KEY}/groups`, "(no route)"],
        [`${V1}/students?key=${KEY}&per_page=1`, `${V1}/students`],
        [`${V1}/${KEY}`, "(no route)"],
        [`/${KEY}?${KEY}`, "(no route)"],
        ["/health/live", "/health/live"]
      ]
      const finished = yield* runUntil(
        entryPoints.api,
        { DATABASE_URL: database.url, PORT: String(port), HOST: "127.0.0.1", LOG_FORMAT: "json", LOG_LEVEL: "debug" },
        "listening on http",
        "SIGTERM",
        () =>
          Effect.gen(function*() {
            const statuses: Array<number> = []
            for (const [path] of requests) statuses.push((yield* raw.get(path, KEY)).status)
            statuses.push((yield* raw.post(`${V1}/leads`, { key: KEY, idempotencyKey: KEY, body: { key: KEY } })).status)
            // Let the last lines reach stderr before the process is stopped.
            yield* Effect.sleep("200 millis")
            return statuses
          }).pipe(Effect.orDie)
      )
      const statuses = Option.getOrThrow(finished.result)
      assert.strictEqual(finished.code, 0, finished.stderr)
      assert.notInclude(finished.stderr + finished.stdout, SECRET)
      assert.notInclude(finished.stderr + finished.stdout, "svc_leakleak")

      const entries = lines(finished.stderr).map((line): unknown => JSON.parse(line))
      const accessLines = entries.filter((entry): entry is { readonly message: unknown; readonly annotations: Record<string, unknown> } =>
        typeof entry === "object" && entry !== null && "annotations" in entry &&
        typeof entry.annotations === "object" && entry.annotations !== null && "http.route" in entry.annotations
      )
      const expected = [...requests.map(([, route]) => ["GET", route] as const), ["POST", `${V1}/leads`] as const]
      assert.deepStrictEqual(
        accessLines.map(({ annotations }) => [annotations["http.method"], annotations["http.route"], annotations["http.status"]]),
        expected.map(([method, route], i) => [method, route, statuses[i]])
      )
      for (const { annotations } of accessLines) {
        assert.isNumber(annotations["http.duration_ms"])
        assert.notProperty(annotations, "http.url")
      }
    }), 60_000)
})
