/**
 * A database that answers the connection with no (docs/operations.md
 * "Database away"; libs/runtime/src/DatabaseStatus.ts): a wrong password, a
 * database that does not exist, a role over its connection limit. The real
 * API and the real dispatcher keep running and say so in ONE ERROR line
 * each, in words and without a stack trace (not one per request, not one
 * per second); `/health/ready` is 503 `database_refused`; every request gets
 * 503 `service_unavailable` with `Retry-After`, never 500. Once the
 * database lets them in, both are ready without a restart.
 */
import { assert, describe, it } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import {
  adminUrl,
  asAdmin,
  emptyDatabase,
  logLines,
  loginRole,
  migrate,
  request,
  type Spawned,
  spawnProcess,
  uniqueName,
  waitForOutput,
  withDatabase
} from "../support/DatabaseStates.ts"
import { entryPoints } from "../support/Processes.ts"

/** A well-formed key nobody issued, new each time (an answer for a known prefix may be kept in memory). */
const aKey = () => `svc_${randomBytes(4).toString("hex")}_${randomBytes(16).toString("hex")}`
const UNAVAILABLE = { error: { code: "service_unavailable", message: "The database is unavailable. Try again later." } }

const errorLines = (output: string) => logLines(output).filter((line) => line.level === "ERROR")

/** The API and the dispatcher against `url`, on free ports. */
const both = (url: string) =>
  Effect.gen(function*() {
    const apiPort = yield* freePort
    const dispatcherPort = yield* freePort
    const api = yield* spawnProcess(entryPoints.api, { DATABASE_URL: url, PORT: String(apiPort), HOST: "127.0.0.1" })
    const dispatcher = yield* spawnProcess(entryPoints.dispatcher, {
      DATABASE_URL: url,
      DISPATCHER_PORT: String(dispatcherPort),
      HOST: "127.0.0.1"
    })
    return { api, apiPort, dispatcher, dispatcherPort }
  })

/** GET `path` with a key on the API: status, Retry-After and body. */
const getWithKey = (port: number, path: string) =>
  Effect.map(request(`http://127.0.0.1:${port}${path}`, 5_000, { headers: { authorization: `Bearer ${aKey()}` } }), (answer) =>
    typeof answer === "string" ? answer : [answer.status, answer.headers.get("retry-after"), JSON.parse(answer.text)])

const readiness = (port: number) =>
  Effect.map(request(`http://127.0.0.1:${port}/health/ready`, 5_000), (answer) =>
    typeof answer === "string" ? answer : [answer.status, JSON.parse(answer.text)])

/** Both processes refused: one ERROR line each (`line`, the dispatcher's with its label), 503s, no stack trace. */
const assertRefused = (
  processes: { readonly api: Spawned; readonly apiPort: number; readonly dispatcher: Spawned; readonly dispatcherPort: number },
  line: string,
  body: unknown
) =>
  Effect.gen(function*() {
    const { api, apiPort, dispatcher, dispatcherPort } = processes
    yield* waitForOutput(api, "the API's ERROR line", (output) => errorLines(output).length > 0)
    yield* waitForOutput(dispatcher, "the dispatcher's ERROR line", (output) => errorLines(output).length > 0)
    assert.deepStrictEqual(yield* readiness(apiPort), [503, body])
    assert.deepStrictEqual(yield* readiness(dispatcherPort), [503, body])
    for (let i = 0; i < 5; i++) {
      assert.deepStrictEqual(yield* getWithKey(apiPort, "/api/public/v1/students"), [503, "2", UNAVAILABLE])
    }
    // Checked again every 2 s meanwhile: still the one line, and no stack trace.
    yield* Effect.sleep("4500 millis")
    for (const [process, label] of [[api, ""], [dispatcher, "dispatcher: "]] as const) {
      assert.deepStrictEqual(errorLines(process.output()).map((entry) => entry.message), [`${label}${line}`], process.output())
      assert.notInclude(process.output(), "    at ", "no stack trace")
      assert.isFalse(process.exited(), "it keeps running")
    }
  })

describe("a database that refuses the connection", () => {
  it.live("a wrong password: one ERROR line that says so, 503s, no stack trace; ready once the password is right", () =>
    Effect.gen(function*() {
      const role = yield* loginRole("right password")
      const database = yield* emptyDatabase(role)
      yield* migrate(withDatabase(adminUrl(), database.name, { user: role, password: "right password" }))
      const url = withDatabase(adminUrl(), database.name, { user: role, password: "wrong password" })
      const where = `127.0.0.1:${new URL(url).port}/${database.name}`
      const processes = yield* both(url)
      yield* assertRefused(
        processes,
        `the database refused the login: password authentication failed for user "${role}" (${where}); ` +
          "check the user and password in DATABASE_URL; checking again every 2s",
        { error: { code: "database_refused", message: "The database refused the login." } }
      )
      assert.notInclude(processes.api.output(), "wrong password")

      // The password the processes send becomes the role's: they get in by themselves.
      yield* asAdmin([`ALTER ROLE ${role} PASSWORD 'wrong password'`])
      yield* waitForOutput(processes.api, "the API listening", (output) => output.includes("Listening on"))
      yield* waitForOutput(processes.dispatcher, "the dispatcher ready", (output) => output.includes("dispatcher ready"))
      assert.deepStrictEqual(yield* readiness(processes.apiPort), [200, { status: "ready" }])
      assert.deepStrictEqual(yield* readiness(processes.dispatcherPort), [200, { status: "ready" }])
      assert.strictEqual((yield* getWithKey(processes.apiPort, "/api/public/v1/students"))[0], 401)
      assert.include(processes.api.output(), "the database answers again (")
    }).pipe(Effect.scoped), 90_000)

  it.live("no such database: one ERROR line that says so, 503s, no stack trace; ready once it exists", () =>
    Effect.gen(function*() {
      const name = uniqueName("school_missing")
      const url = withDatabase(adminUrl(), name)
      const where = `127.0.0.1:${new URL(url).port}/${name}`
      const processes = yield* both(url)
      yield* assertRefused(
        processes,
        `the database refused the connection: database "${name}" does not exist (${where}); ` +
          "check the database name in DATABASE_URL; checking again every 2s",
        { error: { code: "database_refused", message: "The database refused the connection: no such database." } }
      )

      // A migrated database takes the name at once (a rename), so the processes find it ready.
      const made = yield* emptyDatabase()
      yield* migrate(made.url)
      yield* asAdmin([`ALTER DATABASE ${made.name} RENAME TO ${name}`])
      yield* Effect.addFinalizer(() => asAdmin([`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]))
      yield* waitForOutput(processes.api, "the API listening", (output) => output.includes("Listening on"))
      yield* waitForOutput(processes.dispatcher, "the dispatcher ready", (output) => output.includes("dispatcher ready"))
      assert.deepStrictEqual(yield* readiness(processes.apiPort), [200, { status: "ready" }])
      assert.deepStrictEqual(yield* readiness(processes.dispatcherPort), [200, { status: "ready" }])
    }).pipe(Effect.scoped), 90_000)

  it.live("a role over its connection limit while both serve: 503, never 500, the line in words; back once it may connect", () =>
    Effect.gen(function*() {
      const role = yield* loginRole("a password")
      const database = yield* emptyDatabase(role)
      const url = withDatabase(adminUrl(), database.name, { user: role, password: "a password" })
      yield* migrate(url)
      const port = yield* freePort
      const api = yield* spawnProcess(entryPoints.api, { DATABASE_URL: url, PORT: String(port), HOST: "127.0.0.1" })
      const dispatcherPort = yield* freePort
      const dispatcher = yield* spawnProcess(entryPoints.dispatcher, {
        DATABASE_URL: url,
        DISPATCHER_PORT: String(dispatcherPort),
        HOST: "127.0.0.1"
      })
      yield* waitForOutput(api, "the API listening", (output) => output.includes("Listening on"))
      yield* waitForOutput(dispatcher, "the dispatcher ready", (output) => output.includes("dispatcher ready"))
      assert.strictEqual((yield* getWithKey(port, "/api/public/v1/students"))[0], 401)

      // No new connection for the role, and its open ones cut.
      yield* asAdmin([
        `ALTER ROLE ${role} CONNECTION LIMIT 0`,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${role}'`
      ])
      for (let i = 0; i < 10; i++) {
        const answer = yield* getWithKey(port, "/api/public/v1/students")
        assert.deepStrictEqual(answer, [503, "2", UNAVAILABLE])
      }
      assert.deepStrictEqual(yield* readiness(port), [503, {
        error: { code: "database_refused", message: "The database refused the connection: too many clients." }
      }])
      const refused = errorLines(api.output())
      assert.deepStrictEqual(refused.map((entry) => entry.message), [
        `the database refused the connection: too many connections for role "${role}" (127.0.0.1:${new URL(url).port}/${database.name}); ` +
        "it has as many connections as it allows (max_connections, or the database's or the role's CONNECTION LIMIT); checking again every 2s"
      ], api.output())
      assert.notMatch(api.output(), /request failed"/, "no 500")
      // The dispatcher's loop meets it too: its line says so in words (after one for the cut connections, maybe).
      const dispatcherRefused = `dispatcher: the database refused the connection: too many connections for role "${role}"`
      yield* waitForOutput(dispatcher, "the dispatcher's refusal", (output) =>
        errorLines(output).some((line) => line.message.startsWith(dispatcherRefused)))
      assert.deepStrictEqual(yield* readiness(dispatcherPort), [503, {
        error: { code: "database_refused", message: "The database refused the connection: too many clients." }
      }])

      yield* asAdmin([`ALTER ROLE ${role} CONNECTION LIMIT -1`])
      yield* waitForOutput(api, "the return", (output) => output.includes("the database answers again ("))
      assert.deepStrictEqual(yield* readiness(port), [200, { status: "ready" }])
      assert.strictEqual((yield* getWithKey(port, "/api/public/v1/students"))[0], 401)
      assert.strictEqual(errorLines(api.output()).length, 1, api.output())
      yield* waitForOutput(dispatcher, "the dispatcher's return", (output) => output.includes("dispatcher: the database answers again; resuming"))
      assert.deepStrictEqual(yield* readiness(dispatcherPort), [200, { status: "ready" }])
      assert.isAtMost(errorLines(dispatcher.output()).length, 2, dispatcher.output())
    }).pipe(Effect.scoped), 90_000)
})
