/**
 * Readiness tells the truth about the migrations (docs/operations.md
 * "Process endpoints"): against a database that lacks migrations this code
 * expects, the real API and the real dispatcher start and say so, but are
 * not ready: `/health/ready` is 503 `migrations_missing` with the missing
 * names, each process logs one ERROR line naming them and `npm run
 * migrate`, the API answers every request 503 `service_unavailable` with
 * `Retry-After`, the dispatcher claims nothing. Once the database is
 * migrated, both become ready without a restart.
 */
import { assert, describe, it } from "@effect/vitest"
import { migrations, missingMigrations } from "@school/persistence/Migrations"
import { freePort } from "@school/runtime/Ports"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import {
  emptyDatabase,
  logLines,
  migrate,
  onDatabase,
  request,
  spawnProcess,
  waitForOutput
} from "../support/DatabaseStates.ts"
import { entryPoints } from "../support/Processes.ts"

const ALL = Object.keys(migrations)
/** Migrated up to all but the last two: the state of a database an older version migrated. */
const APPLIED = ALL.length - 2
const MISSING = ALL.slice(APPLIED)
const KEY = "svc_abcdefgh_0123456789abcdef0123456789abcdef"

const errorLines = (output: string) => logLines(output).filter((line) => line.level === "ERROR")

describe("a database without every migration", () => {
  it.effect("missingMigrations: all of them on an empty database, the rest on a partly migrated one, none once migrated", () =>
    Effect.gen(function*() {
      const database = yield* emptyDatabase()
      assert.deepStrictEqual(yield* onDatabase(database.url, missingMigrations), ALL)
      yield* migrate(database.url, APPLIED)
      assert.deepStrictEqual(yield* onDatabase(database.url, missingMigrations), MISSING)
      yield* migrate(database.url)
      assert.deepStrictEqual(yield* onDatabase(database.url, missingMigrations), [])
      // The migrator's own record: one row per migration.
      const rows = yield* onDatabase(database.url, Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT count(*)::int AS n FROM effect_sql_migrations`))
      assert.deepStrictEqual(rows, [{ n: ALL.length }])
    }).pipe(Effect.scoped))

  it.live("API and dispatcher: 503 naming the missing migrations, one ERROR line each, 503 to requests; ready once migrated, without a restart", () =>
    Effect.gen(function*() {
      const database = yield* emptyDatabase()
      yield* migrate(database.url, APPLIED)
      const apiPort = yield* freePort
      const dispatcherPort = yield* freePort
      const api = yield* spawnProcess(entryPoints.api, { DATABASE_URL: database.url, PORT: String(apiPort), HOST: "127.0.0.1" })
      const dispatcher = yield* spawnProcess(entryPoints.dispatcher, {
        DATABASE_URL: database.url,
        DISPATCHER_PORT: String(dispatcherPort),
        HOST: "127.0.0.1"
      })
      const saysBehind = (output: string) => errorLines(output).some((line) => line.message.includes("lacks"))
      yield* waitForOutput(api, "the API's ERROR line", saysBehind)
      yield* waitForOutput(dispatcher, "the dispatcher's ERROR line", saysBehind)

      const body = {
        error: {
          code: "migrations_missing",
          message: "The database lacks 2 migrations: run npm run migrate.",
          missing: MISSING
        }
      }
      for (const port of [apiPort, dispatcherPort]) {
        const ready = yield* request(`http://127.0.0.1:${port}/health/ready`, 5_000)
        assert.deepStrictEqual(typeof ready === "string" ? ready : [ready.status, JSON.parse(ready.text)], [503, body])
        const live = yield* request(`http://127.0.0.1:${port}/health/live`, 5_000)
        assert.deepStrictEqual(typeof live === "string" ? live : live.status, 200)
      }
      // Every request to the API: 503 in the envelope of its API, with Retry-After.
      const students = yield* request(`http://127.0.0.1:${apiPort}/api/public/v1/students`, 5_000, {
        headers: { authorization: `Bearer ${KEY}` }
      })
      assert.deepStrictEqual(typeof students === "string" ? students : [students.status, students.headers.get("retry-after"), JSON.parse(students.text)], [
        503,
        "2",
        { error: { code: "service_unavailable", message: "The database is unavailable. Try again later." } }
      ])
      const signIn = yield* request(`http://127.0.0.1:${apiPort}/api/crm/v1/sessions`, 5_000, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "owner@behind.test", password: "a long password" })
      })
      assert.deepStrictEqual(typeof signIn === "string" ? signIn : [signIn.status, signIn.headers.get("retry-after"), JSON.parse(signIn.text)], [
        503,
        "2",
        { success: false, code: "SERVICE_UNAVAILABLE", message: "The database is unavailable. Try again later." }
      ])

      // Checked again every 2 s meanwhile, and still one line each.
      yield* Effect.sleep("4500 millis")
      for (const [process, label] of [[api, ""], [dispatcher, "dispatcher: "]] as const) {
        const errors = errorLines(process.output())
        assert.strictEqual(errors.length, 1, process.output())
        assert.strictEqual(
          errors[0]?.message,
          `${label}the database lacks 2 migrations this version needs: ${MISSING.join(", ")} (127.0.0.1:${new URL(database.url).port}/${database.name}); run npm run migrate; checking again every 2s`
        )
        assert.notInclude(process.output(), "    at ", "no stack trace")
      }
      assert.notInclude(api.output(), "Listening on")
      assert.notInclude(dispatcher.output(), "dispatcher ready")
      assert.notInclude(dispatcher.output(), "dispatcher: running")

      // npm run migrate: both become ready by themselves.
      yield* migrate(database.url)
      yield* waitForOutput(api, "the API listening", (output) => output.includes("Listening on"))
      yield* waitForOutput(dispatcher, "the dispatcher ready", (output) => output.includes("dispatcher ready"))
      for (const port of [apiPort, dispatcherPort]) {
        const ready = yield* request(`http://127.0.0.1:${port}/health/ready`, 5_000)
        assert.deepStrictEqual(typeof ready === "string" ? ready : [ready.status, ready.text], [200, `{"status":"ready"}`])
      }
      // The routes serve: an unknown key is the contract's 401 now.
      const served = yield* request(`http://127.0.0.1:${apiPort}/api/public/v1/students`, 5_000, {
        headers: { authorization: `Bearer ${KEY}` }
      })
      assert.strictEqual(typeof served === "string" ? served : served.status, 401)
      for (const process of [api, dispatcher]) {
        assert.include(
          logLines(process.output()).filter((line) => line.level === "INFO").map((line) => line.message).join("\n"),
          `the database has every migration this version needs (127.0.0.1:${new URL(database.url).port}/${database.name}); ready`
        )
        assert.strictEqual(errorLines(process.output()).length, 1, process.output())
      }
    }).pipe(Effect.scoped), 90_000)
})
