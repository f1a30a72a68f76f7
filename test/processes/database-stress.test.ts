/**
 * The API under a database that holds it up (docs/operations.md "Settings":
 * DATABASE_STATEMENT_TIMEOUT, DATABASE_ACQUIRE_TIMEOUT; docs/decisions.md
 * "Requests and responses"): with one table locked, requests to it get 503
 * service_unavailable with Retry-After within the bounds instead of holding
 * every pooled connection, and a request to another table is answered
 * promptly. The real API process, against this file's database, with a real
 * lock held by the test.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { DATABASE_ACQUIRE_TIMEOUT, DATABASE_STATEMENT_TIMEOUT } from "@school/runtime/Settings"
import { ConfigProvider, Deferred, Duration, Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import { rawClient } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const timed = (url: string, key: string) =>
  Effect.gen(function*() {
    const started = performance.now()
    const reply = yield* rawClient("").get(url, key)
    return { status: reply.status, retryAfter: reply.headers.get("retry-after"), text: reply.text, ms: performance.now() - started }
  })

const loadFrom = (env: Record<string, string>) =>
  Effect.all({ databaseStatementTimeout: DATABASE_STATEMENT_TIMEOUT, databaseAcquireTimeout: DATABASE_ACQUIRE_TIMEOUT }).pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

describe("database bounds: settings", () => {
  it.effect("DATABASE_STATEMENT_TIMEOUT 5s and DATABASE_ACQUIRE_TIMEOUT 2s by default; positive durations", () =>
    Effect.gen(function*() {
      const defaults = yield* loadFrom({})
      assert.strictEqual(Duration.toMillis(defaults.databaseStatementTimeout), 5_000)
      assert.strictEqual(Duration.toMillis(defaults.databaseAcquireTimeout), 2_000)
      const given = yield* loadFrom({ DATABASE_STATEMENT_TIMEOUT: "1.5s", DATABASE_ACQUIRE_TIMEOUT: "250ms" })
      assert.strictEqual(Duration.toMillis(given.databaseStatementTimeout), 1_500)
      assert.strictEqual(Duration.toMillis(given.databaseAcquireTimeout), 250)
      for (const [name, value] of [["DATABASE_STATEMENT_TIMEOUT", "0s"], ["DATABASE_ACQUIRE_TIMEOUT", "soon"]] as const) {
        const error = yield* Effect.flip(loadFrom({ [name]: value }))
        assert.strictEqual(error.setting, name)
        assert.match(error.message, /expected a positive duration/)
      }
    }))
})

layer(TestDatabase.layer, { excludeTestServices: true })("database bounds: a locked table", (it) => {
  it.effect("requests to the locked table get 503 within the bounds; another table answers promptly", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const database = yield* TestDatabase
      const { filialId, schoolId } = yield* Fixtures.school("pro", "Locked school")
      const key = yield* Fixtures.key(schoolId)
      const groupId = yield* Fixtures.group(schoolId, filialId, "G", 10)
      yield* Fixtures.lesson(schoolId, groupId, filialId, "2026-03-02T10:00:00Z")

      const port = yield* freePort
      yield* startApi(database.url, port, {
        DATABASE_STATEMENT_TIMEOUT: "1s",
        DATABASE_ACQUIRE_TIMEOUT: "500ms",
        RATE_LIMIT_WINDOW: "off"
      })
      const base = `http://127.0.0.1:${port}/api/public/v1`
      const lessons = `${base}/lessons?from=2026-03-01&to=2026-03-07`

      // The test holds ACCESS EXCLUSIVE on lessons until it says so.
      const locked = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE lessons IN ACCESS EXCLUSIVE MODE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      })).pipe(Effect.orDie, Effect.forkChild)
      yield* Deferred.await(locked)

      // More requests to the locked table than the API's pool has connections (10).
      const blocked = yield* Effect.forEach(Array.from({ length: 16 }), () => timed(lessons, key), {
        concurrency: "unbounded"
      }).pipe(Effect.forkChild)
      yield* Effect.sleep("200 millis")
      const other = yield* timed(`${base}/groups`, key)
      const answers = yield* Fiber.join(blocked)

      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)

      // Generous bounds: 1 s statement + 0.5 s acquire, plus a loaded machine.
      assert.isBelow(other.ms, 4_000, `another table waited ${Math.round(other.ms)} ms`)
      assert.include([200, 503], other.status, other.text)
      for (const answer of answers) {
        assert.strictEqual(answer.status, 503, answer.text)
        assert.isBelow(answer.ms, 6_000)
        assert.match(answer.retryAfter ?? "", /^[1-9]\d*$/)
        assert.strictEqual(JSON.parse(answer.text).error.code, "service_unavailable")
      }

      // The lock gone, the same request succeeds.
      const after = yield* timed(lessons, key)
      assert.strictEqual(after.status, 200, after.text)
    }).pipe(Effect.scoped), 60_000)
})
