/**
 * Claiming ahead (apps/dispatcher/src/Dispatcher.ts; docs/decisions.md "The
 * webhook dispatcher"): the dispatcher claims up to DISPATCHER_CONCURRENCY
 * deliveries beyond the attempts in flight, so a finished attempt's slot is
 * taken at once. What it holds and has not started is never lost: a stop
 * gives those leases back at once (the next dispatcher need not wait for
 * them to end), and the one slot still goes to every delivery in turn.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { hang, ok, startReceiver } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

const leases = (schoolId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM webhook_deliveries WHERE school_id = ${schoolId} AND lease_until IS NOT NULL`
    return rows[0]?.n ?? -1
  }).pipe(Effect.orDie)

layer(TestDatabase.layer, { excludeTestServices: true })("claiming ahead", (it) => {
  it.effect("one slot: the second delivery waits claimed; a stop gives its lease back and sends nothing more", () =>
    Effect.gen(function*() {
      const { schoolId } = yield* T.school("Ahead school")
      const hanging = yield* startReceiver(() => hang)
      yield* T.subscription(schoolId, hanging.url, ["lead.created"])
      yield* T.leads(schoolId, 2)

      yield* Effect.scoped(Effect.gen(function*() {
        yield* T.runDispatcher({ DISPATCHER_CONCURRENCY: "1", DISPATCHER_PER_SUBSCRIPTION: "4" })
        // One attempt hangs in the one slot; the other delivery is claimed (leased) and waits.
        yield* T.eventually("both deliveries leased, one attempt sent", leases(schoolId), (n) => n === 2 && hanging.received.length === 1)
      }))

      // Stopped: the hanging attempt ended with the time-out and was recorded; the waiting one is free again, unsent.
      assert.strictEqual(yield* leases(schoolId), 0)
      const rows = yield* T.deliveries(schoolId)
      assert.deepStrictEqual(rows.map((row) => row.attempts).sort(), [0, 1])
      assert.isTrue(rows.every((row) => row.status === "pending"))
      assert.strictEqual(hanging.received.length, 1)
    }), { timeout: 30_000 })

  it.effect("one slot, a burst of 30 over three receivers: every delivery sent once, in turn", () =>
    Effect.gen(function*() {
      const { schoolId } = yield* T.school("Ahead school 2")
      const receivers = yield* Effect.all([startReceiver(() => ok), startReceiver(() => ok), startReceiver(() => ok)])
      for (const receiver of receivers) yield* T.subscription(schoolId, receiver.url, ["lead.created"])
      yield* T.runDispatcher({ DISPATCHER_CONCURRENCY: "1", DISPATCHER_PER_SUBSCRIPTION: "2" })
      yield* T.leads(schoolId, 10)
      yield* T.eventually(
        "30 deliveries delivered",
        T.deliveries(schoolId),
        (rows) => rows.length === 30 && rows.every((row) => row.status === "delivered")
      )
      const rows = yield* T.deliveries(schoolId)
      assert.isTrue(rows.every((row) => row.attempts === 1), "each at the first attempt")
      assert.deepStrictEqual(receivers.map((receiver) => receiver.received.length), [10, 10, 10])
      assert.strictEqual(yield* leases(schoolId), 0)
    }), { timeout: 30_000 })
})
