/**
 * `npm start` (docs/operations.md "Commands") against DATABASE_URL: on an empty
 * database it seeds the demo school and prints its keys, the API answers with
 * them, and a SIGTERM stops the API, the dispatcher and itself with exit 0.
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { rawClient, V1 } from "../support/Clients.ts"
import { entryPoints, runUntil } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const field = (output: string, label: string): string => {
  const match = new RegExp(`^\\s*${label}\\s+(\\S+)`, "m").exec(output)
  return match?.[1] ?? ""
}

layer(TestDatabase.layer, { excludeTestServices: true })("npm start", (it) => {
  it.effect("seeds an empty database, prints base URL, keys, login and a curl; serves; SIGTERM stops all with 0", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* freePort
      const result = yield* runUntil(
        entryPoints.start,
        { DATABASE_URL: database.url, PORT: String(port), DISPATCHER_PORT: "0", LOG_FORMAT: "json" },
        "Ctrl-C stops everything",
        "SIGTERM",
        (output) =>
          rawClient(`http://127.0.0.1:${port}`).get(`${V1}/students?per_page=2`, field(output, "Read key")).pipe(
            Effect.orDie
          )
      )
      assert.isTrue(result.becameReady, result.stderr)
      assert.strictEqual(result.code, 0, result.stderr)

      const out = result.stdout
      assert.include(out, `http://127.0.0.1:${port}/api/public/v1`)
      assert.match(field(out, "Read key"), /^svc_[a-z0-9]{8}_[A-Za-z0-9]{32}$/)
      assert.match(field(out, "Write key"), /^svc_[a-z0-9]{8}_[A-Za-z0-9]{32}$/)
      assert.match(out, /Owner login\s+\S+@\S+ \/ \S+/)
      assert.include(
        out,
        `curl -H "Authorization: Bearer ${field(out, "Read key")}" "http://127.0.0.1:${port}/api/public/v1/students?per_page=2"`
      )

      // The printed key works against the API it started.
      const answer = Option.getOrThrow(result.result)
      assert.strictEqual(answer.status, 200, answer.text)

      // Both children logged their start and their stop.
      assert.include(result.stderr, "dispatcher ready")
      assert.include(result.stderr, "dispatcher: stopping")

      const sql = yield* SqlClient.SqlClient
      const [schools] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM schools`
      assert.strictEqual(schools?.n, 1)
    }))
})
