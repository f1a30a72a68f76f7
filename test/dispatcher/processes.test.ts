/**
 * The dispatcher as a real process (docs/decisions.md "The webhook dispatcher";
 * docs/decisions.md "Webhooks": delivery is at least once):
 *
 * - /health/live and /health/ready on DISPATCHER_PORT;
 * - SIGTERM with an attempt in flight: the attempt finishes (here: times
 *   out), is recorded, and the process exits 0;
 * - SIGTERM with SHUTDOWN_DELAY (docs/operations.md "Shutdown"): /health/ready
 *   answers 503 shutting_down at once and until the process exits, while it
 *   goes on delivering for the delay; then the attempt in flight is
 *   recorded, nothing is left leased, and it exits 0;
 * - SIGKILL while deliveries are in flight, then a restart: every event
 *   arrives; the only duplicates are deliveries that were in flight, and a
 *   duplicate carries the same opaque `webhook-id` from the second
 *   dispatcher as from the first;
 * - two dispatchers on one database and 1,000 events: every event
 *   delivered, no attempt made twice.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { startDispatcher } from "../support/Processes.ts"
import { delay, hang, ok, startReceiver } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

const env = {
  WEBHOOK_ALLOW_INSECURE_URLS: "true",
  WEBHOOK_RETRY_DELAYS: "100ms,200ms,300ms",
  WEBHOOK_TIMEOUT: "1s"
}

const SHUTTING_DOWN = { error: { code: "shutting_down", message: "The process is stopping." } }

const get = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, body: await response.text() }
  })

/** The deliveries each request was, counted: id → requests received. */
const countById = (received: ReadonlyArray<{ readonly headers: Record<string, unknown> }>) => {
  const counts = new Map<string, number>()
  for (const request of received) {
    const id = String(request.headers["webhook-id"])
    counts.set(id, (counts.get(id) ?? 0) + 1)
  }
  return counts
}

layer(TestDatabase.layer, { excludeTestServices: true })("the dispatcher process", (it) => {
  it.effect("health routes; SIGTERM lets the attempt in flight finish, records it, exits 0", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const { schoolId } = yield* T.school("Sigterm school")
      const receiver = yield* startReceiver(() => hang)
      const sub = yield* T.subscription(schoolId, receiver.url)
      const dispatcher = yield* startDispatcher(database.url, env)
      const base = `http://127.0.0.1:${dispatcher.port}`
      assert.deepStrictEqual(yield* get(`${base}/health/live`), { status: 200, body: `{"status":"ok"}` })
      assert.deepStrictEqual(yield* get(`${base}/health/ready`), { status: 200, body: `{"status":"ready"}` })

      yield* T.leads(schoolId, 1)
      yield* receiver.waitFor(1)
      const signalled = Date.now()
      dispatcher.signal("SIGTERM")
      const code = yield* Effect.promise(() => dispatcher.exited)
      assert.strictEqual(code, 0, dispatcher.log())
      assert.isBelow(Date.now() - signalled, 4_000)
      const attempts = yield* T.attempts(schoolId)
      assert.deepStrictEqual(attempts.map((a) => [a.attempt, a.error]), [[1, "timeout"]])
      const sql = yield* SqlClient.SqlClient
      const leased = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM webhook_deliveries WHERE school_id = ${schoolId} AND lease_until IS NOT NULL`
      assert.strictEqual(leased[0]?.n, 0, "no lease left behind")
      yield* T.setStatus(schoolId, sub.id, "disabled")
    }))

  it.effect("SHUTDOWN_DELAY: readiness 503 shutting_down at once, deliveries go on for the delay, then the stop; exit 0", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const { schoolId } = yield* T.school("Delay school")
      const receiver = yield* startReceiver()
      const sub = yield* T.subscription(schoolId, receiver.url)
      const dispatcher = yield* startDispatcher(database.url, { ...env, WEBHOOK_TIMEOUT: "2s", SHUTDOWN_DELAY: "1500ms" })
      const base = `http://127.0.0.1:${dispatcher.port}`
      yield* T.leads(schoolId, 1, "Before")
      yield* receiver.waitFor(1)

      const signalled = Date.now()
      dispatcher.signal("SIGTERM")
      const ready = yield* T.eventually("readiness turns", get(`${base}/health/ready`), (answer) => answer.status !== 200, 1_000)
      assert.deepStrictEqual(ready, { status: 503, body: JSON.stringify(SHUTTING_DOWN) })
      assert.deepStrictEqual(yield* get(`${base}/health/live`), { status: 200, body: `{"status":"ok"}` })
      // Still delivering during the delay; the last attempt hangs past its end.
      yield* T.leads(schoolId, 1, "During")
      yield* receiver.waitFor(2, 1_000)
      receiver.setBehaviour(() => hang)
      yield* T.leads(schoolId, 1, "Last")
      yield* receiver.waitFor(3, 1_000)
      assert.isBelow(Date.now() - signalled, 1_500, "all three arrived within the delay")

      // After the delay the loop stops; the health routes answer until the attempt in flight is recorded.
      yield* Effect.sleep(Math.max(0, signalled + 1_700 - Date.now()))
      assert.deepStrictEqual(yield* get(`${base}/health/ready`), { status: 503, body: JSON.stringify(SHUTTING_DOWN) })
      const code = yield* Effect.promise(() => dispatcher.exited)
      assert.strictEqual(code, 0, dispatcher.log())
      assert.isAtLeast(Date.now() - signalled, 1_500)

      const attempts = yield* T.attempts(schoolId)
      assert.deepStrictEqual(attempts.map((a) => [a.response_code, a.error]), [[204, null], [204, null], [null, "timeout"]])
      const rows = yield* T.deliveries(schoolId)
      assert.deepStrictEqual(rows.map((row) => row.status), ["delivered", "delivered", "pending"], "the last one waits for its retry")
      const sql = yield* SqlClient.SqlClient
      const leased = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM webhook_deliveries WHERE school_id = ${schoolId} AND lease_until IS NOT NULL`
      assert.strictEqual(leased[0]?.n, 0, "no lease left behind")
      yield* T.setStatus(schoolId, sub.id, "disabled")
    }))

  it.effect("SIGKILL mid-flight, restart: every event arrives; duplicates only of deliveries in flight", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const { schoolId } = yield* T.school("Sigkill school")
      const receiver = yield* startReceiver(() => delay(200))
      const sub = yield* T.subscription(schoolId, receiver.url)
      const first = yield* startDispatcher(database.url, { ...env, DISPATCHER_PER_SUBSCRIPTION: "8" })
      yield* T.leads(schoolId, 40)
      yield* receiver.waitFor(10)
      first.signal("SIGKILL")
      yield* Effect.promise(() => first.exited)
      const beforeRestart = receiver.received.length
      yield* startDispatcher(database.url, { ...env, DISPATCHER_PER_SUBSCRIPTION: "8" })
      const rows = yield* T.eventually(
        "all delivered",
        T.deliveries(schoolId),
        (rows) => rows.length === 40 && rows.every((row) => row.status === "delivered"),
        30_000
      )
      const counts = countById(receiver.received)
      assert.strictEqual(counts.size, 40, "every event arrived")
      // Keyed by the opaque id, the same on every attempt and from either dispatcher (docs/decisions.md "Delivery ids").
      assert.deepStrictEqual([...counts.keys()].sort(), rows.map((row) => row.public_id).sort())
      // At most the 8 in flight at the kill arrived twice.
      const twice = [...counts.values()].filter((n) => n > 1).length
      assert.isAtMost(twice, 8)
      assert.isAtLeast(beforeRestart, 10)
      yield* T.setStatus(schoolId, sub.id, "disabled")
    }), { timeout: 60_000 })

  it.effect("two dispatchers, 1,000 events: each delivered, none attempted twice", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const { schoolId } = yield* T.school("Two dispatchers school")
      const receiver = yield* startReceiver(() => ok)
      const sub = yield* T.subscription(schoolId, receiver.url)
      const parallel = { ...env, DISPATCHER_PER_SUBSCRIPTION: "16" }
      yield* startDispatcher(database.url, parallel)
      yield* startDispatcher(database.url, parallel)
      yield* T.leads(schoolId, 1_000)
      yield* receiver.waitFor(1_000, 30_000)
      yield* T.eventually(
        "all delivered",
        T.deliveries(schoolId),
        (rows) => rows.length === 1_000 && rows.every((row) => row.status === "delivered" && row.attempts === 1),
        30_000
      )
      // Give a duplicate the time to show up, then count.
      yield* Effect.sleep("300 millis")
      const counts = countById(receiver.received)
      assert.strictEqual(counts.size, 1_000)
      assert.strictEqual(receiver.received.length, 1_000, "no attempt sent twice")
      const attempts = yield* T.attempts(schoolId)
      assert.strictEqual(attempts.length, 1_000)
      yield* T.setStatus(schoolId, sub.id, "disabled")
    }), { timeout: 60_000 })
})
