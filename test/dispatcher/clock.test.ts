/**
 * The dispatcher's clock check (apps/dispatcher/src/ClockCheck.ts;
 * docs/operations.md "Clock"), with a wrong clock injected into the
 * dispatcher process alone (test/support/offset-clock.mjs shifts its
 * Date.now; the machine's clock is untouched):
 *
 * - 2 minutes ahead: one ERROR line that says so, /health/ready 503
 *   `clock_skewed` (live still 200), and still delivering: the attempt's
 *   time in the journal and its `webhook-timestamp` are the database's
 *   clock, so the receiver's Standard Webhooks check passes;
 * - a clock within the limit: ready.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { fileURLToPath } from "node:url"
import { Webhook } from "standardwebhooks"
import { httpGet, startDispatcher } from "../support/Processes.ts"
import { startReceiver } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

const OFFSET_CLOCK = fileURLToPath(new URL("../support/offset-clock.mjs", import.meta.url))

const withClock = (offsetMs: number) => ({
  WEBHOOK_ALLOW_INSECURE_URLS: "true",
  WEBHOOK_TIMEOUT: "1s",
  NODE_OPTIONS: `--import ${OFFSET_CLOCK}`,
  TEST_CLOCK_OFFSET_MS: String(offsetMs)
})

layer(TestDatabase.layer, { excludeTestServices: true })("the dispatcher's clock", (it) => {
  it.effect("2 minutes ahead: one ERROR line, not ready, attempt times from the database's clock", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const database = yield* TestDatabase
      const { schoolId } = yield* T.school("Clock school")
      const receiver = yield* startReceiver()
      const sub = yield* T.subscription(schoolId, receiver.url)
      const dispatcher = yield* startDispatcher(database.url, withClock(120_000))
      const health = `http://127.0.0.1:${dispatcher.port}/health`

      const ready = yield* httpGet(`${health}/ready`)
      assert.strictEqual(ready.status, 503)
      assert.include(ready.body, "clock_skewed")
      assert.strictEqual((yield* httpGet(`${health}/live`)).status, 200)
      const errors = dispatcher.log().split("\n").filter((line) => line.includes("clock is"))
      assert.strictEqual(errors.length, 1, dispatcher.log())
      assert.match(errors[0] ?? "", /"level":"ERROR"/)
      assert.match(errors[0] ?? "", /clock is 120 s ahead of the database's/)

      yield* T.leads(schoolId, 1, "Clock")
      const [request] = yield* receiver.waitFor(1)
      // The receiver's clock is the real one: the signature and its timestamp pass its check.
      new Webhook(sub.secret).verify(request?.body ?? "", request?.headers as Record<string, string>)
      const stamp = Number(request?.headers["webhook-timestamp"])
      assert.approximately(stamp, Date.now() / 1000, 5)
      const [attempt] = yield* T.eventually(
        "recorded",
        sql<{ skew_s: number }>`
          SELECT extract(epoch FROM now() - a.at)::float8 AS skew_s FROM webhook_attempts a
          WHERE a.school_id = ${schoolId}`,
        (rows) => rows.length === 1
      )
      assert.approximately(attempt?.skew_s ?? Number.NaN, 0, 5, "the journal's time is the database's")
      yield* T.setStatus(schoolId, sub.id, "disabled")
    }).pipe(Effect.orDie), { timeout: 30_000 })

  it.effect("a clock 10 s off: ready, no ERROR line", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const dispatcher = yield* startDispatcher(database.url, withClock(-10_000))
      const ready = yield* httpGet(`http://127.0.0.1:${dispatcher.port}/health/ready`)
      assert.strictEqual(ready.status, 200, ready.body)
      assert.notMatch(dispatcher.log(), /clock is/)
    }), { timeout: 30_000 })
})
