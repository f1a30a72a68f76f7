/**
 * One school cannot hold back another (docs/decisions.md "Fair delivery"),
 * tried as a hostile school would, with real receivers on loopback and the
 * real dispatcher (WEBHOOK_TIMEOUT=2s, DISPATCHER_CONCURRENCY=32,
 * DISPATCHER_PER_SUBSCRIPTION=4):
 *
 * - school A has 16 subscriptions whose receivers accept the connection and
 *   never answer, and queues as many `webhook.test` events as the limits
 *   let it (16 × WEBHOOK_ACTIONS_PER_MINUTE = 160 in a minute), so its
 *   hanging attempts could take every slot for 2 s at a time; school B's
 *   events, sent while A's flood is in flight, each arrive within 1.5 s;
 * - a retry of B's that falls due during A's flood starts within 1 s of its
 *   time (the database's next_attempt_at);
 * - A holds no more than its share while the other school is active.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { hang, ok, type Received, startReceiver, status } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

const FLOOD_SUBSCRIPTIONS = 16
const TESTS_PER_SUBSCRIPTION = 10

/** School A's flood: 16 hanging receivers, 160 test events queued; the receivers. */
const flood = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const { schoolId } = yield* T.school("Flooding school")
  const receivers = []
  for (let i = 0; i < FLOOD_SUBSCRIPTIONS; i++) {
    const receiver = yield* startReceiver(() => hang)
    const { id } = yield* T.subscription(schoolId, receiver.url, ["lead.created"])
    // What POST /webhooks/{id}/test queues, as many times as the limit allows in a minute.
    yield* sql`
      INSERT INTO outbox_events (school_id, event, payload, subscription_id)
      SELECT ${schoolId}, 'webhook.test', json_build_object('subscription_id', ${id}::int, 'message', 'flood ' || g), ${id}
      FROM generate_series(1, ${TESTS_PER_SUBSCRIPTION}) g`
    receivers.push(receiver)
  }
  return { schoolId, receivers }
}).pipe(Effect.orDie)

const arrived = (receivers: ReadonlyArray<{ readonly received: ReadonlyArray<Received> }>) =>
  receivers.reduce((n, receiver) => n + receiver.received.length, 0)

layer(TestDatabase.layer, { excludeTestServices: true })("fair delivery between schools", (it) => {
  it.effect("a flood of tests to 16 hanging receivers: the other school's events arrive within 1.5 s", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { schoolId: other } = yield* T.school("Quiet school")
      const healthy = yield* startReceiver(() => ok)
      yield* T.subscription(other, healthy.url, ["lead.created"])
      yield* T.runDispatcher({ DISPATCHER_CONCURRENCY: "32", DISPATCHER_PER_SUBSCRIPTION: "4", WEBHOOK_TIMEOUT: "2s" })
      const a = yield* flood
      // A's flood is in flight: its hanging receivers hold the slots it may have.
      yield* T.eventually("the flood fills its slots", Effect.sync(() => arrived(a.receivers)), (n) => n >= 28, 10_000)

      // B sends an event every 250 ms through two rounds of A's time-outs.
      const latencies: Array<number> = []
      for (let i = 0; i < 16; i++) {
        yield* T.leads(other, 1, `Quiet${i}`)
        const committed = performance.timeOrigin + performance.now()
        const [request] = (yield* healthy.waitFor(i + 1, 5_000)).slice(i)
        latencies.push((request?.at ?? Number.NaN) - committed)
        yield* Effect.sleep("250 millis")
      }
      const worst = Math.max(...latencies)
      yield* Effect.logInfo(`fair delivery: the quiet school's worst commit→arrival under the flood: ${worst.toFixed(0)} ms`)
      assert.isBelow(worst, 1_500, latencies.map((l) => l.toFixed(0)).join(", "))

      // A kept hammering meanwhile, but held no more than its share of the slots and the claim-ahead
      // with the quiet school active (⌈64 / 2⌉), nor the reserve.
      const [leased] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM webhook_deliveries WHERE school_id = ${a.schoolId} AND lease_until > now()`
      assert.isAtMost(leased?.n ?? 0, 32, "A holds at most its share")
      assert.isAtLeast(arrived(a.receivers), 28)
      yield* sql`UPDATE webhook_subscriptions SET status = 'disabled' WHERE school_id = ${a.schoolId}`
    }), { timeout: 60_000 })

  it.effect("a retry of the other school's falls due during the flood: it starts within 1 s of its time", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { schoolId: other } = yield* T.school("Retrying school")
      // Every event's first attempt fails; the retry is answered.
      const receiver = yield* startReceiver((index) => index % 2 === 0 ? status(500) : ok)
      yield* T.subscription(other, receiver.url, ["lead.created"])
      yield* T.runDispatcher({
        DISPATCHER_CONCURRENCY: "32",
        DISPATCHER_PER_SUBSCRIPTION: "4",
        WEBHOOK_TIMEOUT: "2s",
        WEBHOOK_RETRY_DELAYS: "1s,1s,1s"
      })
      const a = yield* flood
      yield* T.eventually("the flood fills its slots", Effect.sync(() => arrived(a.receivers)), (n) => n >= 28, 10_000)

      const lateness: Array<number> = []
      for (let i = 0; i < 5; i++) {
        const [event] = yield* T.leads(other, 1, `Retry${i}`)
        yield* receiver.waitFor(2 * i + 1, 5_000)
        // The retry's time, as recorded by the dispatcher from the database's clock.
        const due = yield* T.eventually(
          "the first attempt is recorded",
          sql<{ due_ms: number | null }>`
            SELECT (extract(epoch FROM next_attempt_at) * 1000)::float8 AS due_ms FROM webhook_deliveries
            WHERE school_id = ${other} AND event_id = ${event ?? 0} AND attempts = 1`,
          (rows) => rows.length === 1
        )
        const [retry] = (yield* receiver.waitFor(2 * i + 2, 5_000)).slice(2 * i + 1)
        lateness.push((retry?.at ?? Number.NaN) - (due[0]?.due_ms ?? Number.NaN))
      }
      yield* Effect.logInfo(`fair delivery: retries started ${lateness.map((l) => l.toFixed(0)).join(", ")} ms after their time`)
      for (const late of lateness) assert.isBelow(late, 1_000, lateness.map((l) => l.toFixed(0)).join(", "))
      yield* sql`UPDATE webhook_subscriptions SET status = 'disabled' WHERE school_id = ${a.schoolId}`
    }), { timeout: 60_000 })
})
