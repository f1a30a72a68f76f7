/**
 * `npm start` (docs/operations.md "Commands") against DATABASE_URL: on an empty
 * database it seeds the demo school and prints its keys, the API answers with
 * them, and a SIGTERM stops the API, the dispatcher and itself with exit 0.
 * Its children run with the Node flags and the environment of
 * libs/runtime/src/NodeFlags.ts, read from /proc while they run.
 */
import { assert, layer } from "@effect/vitest"
import { NODE_FLAGS, PROCESS_ENV } from "@school/runtime/NodeFlags"
import { freePort } from "@school/runtime/Ports"
import { readdirSync, readFileSync } from "node:fs"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { rawClient, V1 } from "../support/Clients.ts"
import { entryPoints, runUntil } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

/** The processes running `file` whose environment has PORT=`port`: their arguments and environment, from /proc. */
const processesOf = (file: string, port: number) =>
  readdirSync("/proc").filter((name) => /^\d+$/.test(name)).flatMap((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((arg) => arg !== "")
      const env = Object.fromEntries(
        readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter((entry) => entry.includes("="))
          .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)])
      )
      return argv.some((arg) => arg.endsWith(file)) && env["PORT"] === String(port) ? [{ argv, env }] : []
    } catch {
      return [] // gone meanwhile, or not ours to read
    }
  })

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
            Effect.orDie,
            Effect.map((answer) => ({
              answer,
              api: processesOf("apps/api/src/main.ts", port),
              dispatcher: processesOf("apps/dispatcher/src/main.ts", port)
            }))
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
      const { answer, api, dispatcher } = Option.getOrThrow(result.result)
      assert.strictEqual(answer.status, 200, answer.text)

      // Each child runs with its Node flags and the processes' environment.
      for (const [name, found] of [["api", api], ["dispatcher", dispatcher]] as const) {
        assert.strictEqual(found.length, 1, `one ${name} process`)
        const [child] = found
        assert.deepStrictEqual(child?.argv.slice(1, 1 + NODE_FLAGS[name].length), [...NODE_FLAGS[name]], `${name}'s flags`)
        for (const [variable, value] of Object.entries(PROCESS_ENV)) assert.strictEqual(child?.env[variable], value, `${name}: ${variable}`)
      }

      // Both children logged their start and their stop.
      assert.include(result.stderr, "dispatcher ready")
      assert.include(result.stderr, "dispatcher: stopping")

      const sql = yield* SqlClient.SqlClient
      const [schools] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM schools`
      assert.strictEqual(schools?.n, 1)
    }))
})
