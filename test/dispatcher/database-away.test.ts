/**
 * The dispatcher process while its PostgreSQL is away (docs/
 * operations.md "Database away"): it keeps running and logs the outage,
 * /health/ready answers 503 meanwhile (/health/live 200), and once the
 * database is back it resumes without a restart: an event written after the
 * return is delivered.
 *
 * The test starts its own embedded PostgreSQL (never the run's shared
 * server) and stops and restarts it.
 */
import { assert, describe, it } from "@effect/vitest"
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { Effect } from "effect"
import { httpGet, pollUntil, startDispatcher } from "../support/Processes.ts"
import { startReceiver } from "../support/Receivers.ts"
import { restartableDatabase } from "../support/RestartableDatabase.ts"
import * as T from "./support.ts"

describe("the dispatcher with the database away", () => {
  it.live("keeps running, not ready while away; resumes and delivers once it is back", () =>
    Effect.gen(function*() {
      const { start: startDatabase } = yield* restartableDatabase("school-dispatcher-away-")
      const withDatabase = (url: string) => Effect.provide(Sql.layer({ url, maxConnections: 1 }))

      const first = yield* startDatabase
      const receiver = yield* startReceiver()
      const { schoolId } = yield* Effect.gen(function*() {
        yield* Effect.orDie(runMigrations)
        const school = yield* T.school("Away school")
        yield* T.subscription(school.schoolId, receiver.url)
        yield* T.leads(school.schoolId, 1, "Before")
        return school
      }).pipe(withDatabase(first.url))

      const dispatcher = yield* startDispatcher(first.url, {
        WEBHOOK_ALLOW_INSECURE_URLS: "true",
        WEBHOOK_TIMEOUT: "1s",
        DATABASE_ACQUIRE_TIMEOUT: "1s",
        DATABASE_STATEMENT_TIMEOUT: "2s"
      })
      const health = `http://127.0.0.1:${dispatcher.port}/health`
      yield* receiver.waitFor(1)
      // Recorded before the database goes (else it is sent again once back: at least once).
      yield* T.eventually("the first attempt recorded", T.attempts(schoolId).pipe(withDatabase(first.url)), (rows) => rows.length === 1)

      yield* first.stop
      assert.strictEqual((yield* pollUntil(`${health}/ready`, (status) => status === 503, 10_000, 100)).status, 503)
      assert.strictEqual((yield* httpGet(`${health}/live`)).status, 200)
      yield* Effect.sleep("1500 millis")
      assert.match(dispatcher.log(), /the database does not answer/)

      const second = yield* startDatabase
      yield* T.leads(schoolId, 1, "After").pipe(withDatabase(second.url))
      const received = yield* receiver.waitFor(2, 20_000)
      assert.match(received[1]?.body ?? "", /After 1/)
      assert.strictEqual((yield* pollUntil(`${health}/ready`, (status) => status === 200, 10_000, 100)).status, 200)
      assert.match(dispatcher.log(), /the database answers again/)
    }).pipe(Effect.scoped), 120_000)
})
