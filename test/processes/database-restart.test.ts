/**
 * PostgreSQL restarts under both processes at once
 * (docs/operations.md "Database away"): the real API and the real dispatcher
 * run against an embedded PostgreSQL of the test's own, with deliveries
 * pending (leads written through the API, a subscription whose receiver
 * refuses each delivery's first attempt, so retries are due). PostgreSQL
 * stops: both processes keep running, both `/health/ready` answer 503
 * `not_ready`, the API answers a data request with 503
 * `service_unavailable` in its envelope. PostgreSQL starts again on the
 * same port and data: both are ready again without a restart, writes
 * succeed, and every event reaches the receiver with a 2xx at least once.
 * The dispatcher says once that its outbox listen connection was lost, and
 * once that it listens again.
 */
import { assert, describe, it } from "@effect/vitest"
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { freePort } from "@school/runtime/Ports"
import { Effect } from "effect"
import { errorOf, rawClient, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { httpGet, pollUntil, startApi, startDispatcher } from "../support/Processes.ts"
import { ok, startReceiver, status } from "../support/Receivers.ts"
import { restartableDatabase } from "../support/RestartableDatabase.ts"
import * as T from "../dispatcher/support.ts"

/** Waits until `check` holds (fails the test after `deadline` ms). */
const waitUntil = (what: string, check: () => boolean, deadline: number) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (!check()) {
      if (Date.now() - started > deadline) return assert.fail(`not within ${deadline} ms: ${what}`)
      yield* Effect.sleep("50 millis")
    }
  })

const NOT_READY = { error: { code: "not_ready", message: "The database does not answer." } }

const database = { DATABASE_ACQUIRE_TIMEOUT: "1s", DATABASE_STATEMENT_TIMEOUT: "2s" }

describe("PostgreSQL restarts under the API and the dispatcher", () => {
  it.live("both say not ready meanwhile, recover without a restart, and every event arrives", () =>
    Effect.gen(function*() {
      const { start: startDatabase } = yield* restartableDatabase("school-restart-")
      const first = yield* startDatabase

      // The receiver refuses each delivery's first attempt (a retry is then due) and accepts the rest.
      const seen = new Set<string>()
      const accepted = new Map<string, string>()
      const receiver = yield* startReceiver((_index, request) => {
        const id = String(request.headers["webhook-id"])
        if (!seen.has(id)) {
          seen.add(id)
          return status(500)
        }
        accepted.set(id, request.body)
        return ok
      })
      const key = yield* Effect.gen(function*() {
        yield* Effect.orDie(runMigrations)
        const { schoolId } = yield* Fixtures.school("pro", "Restart school")
        yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
        yield* T.subscription(schoolId, receiver.url, ["lead.created"])
        return yield* Fixtures.key(schoolId, { scope: "write" })
      }).pipe(Effect.provide(Sql.layer({ url: first.url, maxConnections: 1 })))

      const apiPort = yield* freePort
      yield* startApi(first.url, apiPort, database)
      const dispatcher = yield* startDispatcher(first.url, {
        ...database,
        WEBHOOK_ALLOW_INSECURE_URLS: "true",
        WEBHOOK_TIMEOUT: "1s",
        WEBHOOK_RETRY_DELAYS: "1s,1s,1s,1s,1s"
      })
      const api = rawClient(`http://127.0.0.1:${apiPort}`)
      const apiReady = `http://127.0.0.1:${apiPort}/health/ready`
      const dispatcherReady = `http://127.0.0.1:${dispatcher.port}/health/ready`
      const writeLead = (name: string) =>
        api.post(`${V1}/leads`, { key, idempotencyKey: `restart-${name}`, body: { phone: "+7 900 000-00-00", name } })

      const before = ["Before 1", "Before 2", "Before 3"]
      for (const name of before) {
        const created = yield* writeLead(name)
        assert.strictEqual(created.status, 201, created.text)
      }
      // Each delivery's first attempt was refused: three retries are pending when PostgreSQL stops.
      yield* waitUntil("three first attempts", () => seen.size === 3, 10_000)
      yield* first.stop

      assert.deepStrictEqual(yield* pollUntil(apiReady, (status) => status === 503, 10_000, 100), { status: 503, body: JSON.stringify(NOT_READY) })
      assert.deepStrictEqual(yield* pollUntil(dispatcherReady, (status) => status === 503, 10_000, 100), { status: 503, body: JSON.stringify(NOT_READY) })
      const away = yield* api.get(`${V1}/students`, key)
      assert.strictEqual(away.status, 503, away.text)
      assert.match(away.headers.get("retry-after") ?? "", /^[1-9]\d*$/)
      assert.deepStrictEqual(errorOf(away), {
        code: "service_unavailable",
        message: "The database is unavailable. Try again later."
      })
      assert.strictEqual(accepted.size, 0, "nothing was accepted before the outage")
      // Away long enough for the retries (1 s) to fall due and for the delivery loop to meet the outage.
      yield* Effect.sleep("2500 millis")
      assert.strictEqual((yield* httpGet(`http://127.0.0.1:${dispatcher.port}/health/live`)).status, 200)
      assert.strictEqual((yield* httpGet(`http://127.0.0.1:${apiPort}/health/live`)).status, 200)

      // The same data on the same port: the processes find it again by themselves.
      yield* startDatabase
      assert.strictEqual((yield* pollUntil(apiReady, (status) => status === 200, 15_000, 100)).status, 200)
      assert.strictEqual((yield* pollUntil(dispatcherReady, (status) => status === 200, 15_000, 100)).status, 200)
      const after = ["After 1", "After 2"]
      for (const name of after) {
        const created = yield* writeLead(name)
        assert.strictEqual(created.status, 201, created.text)
      }
      assert.strictEqual((yield* api.get(`${V1}/students`, key)).status, 200)

      yield* waitUntil("every event accepted", () => accepted.size === 5, 20_000)
      const bodies = [...accepted.values()]
      for (const name of [...before, ...after]) {
        assert.strictEqual(bodies.filter((body) => body.includes(`"${name}"`)).length, 1, `${name} was accepted (at least once; one delivery per event)`)
      }
      assert.match(dispatcher.log(), /the database does not answer/)
      // The outbox's listen connection: one warning for the outage, not one a second while it lasted, and one
      // line when it is back.
      assert.strictEqual(dispatcher.log().split("outbox listen connection was lost").length - 1, 1, dispatcher.log())
      assert.match(dispatcher.log(), /listening to the outbox again/)
    }).pipe(Effect.scoped), 60_000)
})
