/**
 * The receiver client's sockets are bounded (libs/runtime/src/Receiver.ts;
 * docs/operations.md "Connections to receivers": sockets are a shared
 * resource), counted at real receivers on loopback whose servers never
 * close an idle keep-alive connection (`keepAliveTimeout = 0`), so whatever
 * closes is closed by the client:
 *
 * - a dozen receivers, a few deliveries each: at most IDLE_PER_HOST
 *   connections per receiver stay open after, and 17 s after the last
 *   delivery none (the idle time-out is 15 s);
 * - with a total bound of N sockets, never more than N connections open at
 *   once across the receivers (test/support/Receivers.ts `connectionGauge`:
 *   a receiver can see a close after a newer connection, so a peak is
 *   checked against the kernel's count), however many attempts are
 *   started; and a
 *   receiver not yet connected to gets its connection at once when the
 *   bound is taken by idle sockets of others (the longest idle is closed),
 *   not after an idle time-out.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { IDLE_PER_HOST, IDLE_TIMEOUT, make, type ReceiverShape } from "../../libs/runtime/src/Receiver.ts"
import { connectionGauge, delay, ok, type Receiver, startReceiver } from "../support/Receivers.ts"

const post = (url: string) => ({ url, headers: { "content-type": "application/json" }, body: "{}" })

/** `count` receivers on their own ports that never close an idle connection, counted in one gauge. */
const receivers = (count: number) =>
  Effect.gen(function*() {
    const gauge = connectionGauge()
    const started: Array<Receiver> = []
    for (let i = 0; i < count; i++) started.push(yield* startReceiver(() => ok, { keepAliveTimeout: 0, gauge }))
    return { gauge, receivers: started }
  })

/** Sends `perReceiver` POSTs to each receiver, all at once: every outcome must be a 2xx. */
const sendToAll = (client: ReceiverShape, targets: ReadonlyArray<{ readonly url: string }>, perReceiver: number) =>
  Effect.gen(function*() {
    const outcomes = yield* Effect.all(
      targets.flatMap((receiver) => Array.from({ length: perReceiver }, () => client.send(post(receiver.url)))),
      { concurrency: "unbounded" }
    )
    for (const outcome of outcomes) assert.isTrue(outcome.ok, outcome.detail ?? String(outcome.responseCode))
    return outcomes
  })

describe("the receiver client's sockets", () => {
  it.live("idle connections: at most 2 per receiver kept, none left 17 s after the last delivery", () =>
    Effect.gen(function*() {
      assert.strictEqual(Duration.toMillis(IDLE_TIMEOUT), 15_000)
      const { gauge, receivers: targets } = yield* receivers(12)
      const client = yield* make({ concurrency: 32, timeout: Duration.seconds(5), allowInsecureUrls: true })
      // Three rounds: the first opens several connections per receiver, the others reuse them.
      for (let round = 0; round < 3; round++) yield* sendToAll(client, targets, 3)
      yield* Effect.sleep("100 millis")
      for (const receiver of targets) assert.isAtMost(receiver.openConnections(), IDLE_PER_HOST, receiver.url)
      assert.isAtLeast(gauge.open(), targets.length, "keep-alive connections are kept for reuse")
      assert.isAtMost(gauge.open(), IDLE_PER_HOST * targets.length)
      const kept = yield* client.sockets
      assert.strictEqual(kept.active, 0)
      assert.strictEqual(kept.idle, gauge.open())

      yield* Effect.sleep("17 seconds")
      assert.isAtMost(gauge.open(), 2)
      assert.strictEqual(gauge.open(), 0, "every idle connection closed by the client")
      assert.deepStrictEqual(yield* client.sockets, { active: 0, idle: 0 })
    }), 30_000)

  it.live("a total bound of N sockets: never more than N connections open at once across receivers", () =>
    Effect.gen(function*() {
      const bound = 4
      const gauge = connectionGauge()
      const started = (count: number) =>
        Effect.all(Array.from({ length: count }, () => startReceiver(() => delay(20), { keepAliveTimeout: 0, gauge })))
      const targets = yield* started(12)
      const client = yield* make({ concurrency: bound, sockets: bound, timeout: Duration.seconds(5), allowInsecureUrls: true })
      for (let round = 0; round < 3; round++) yield* sendToAll(client, targets, 4)
      assert.strictEqual(targets.reduce((n, receiver) => n + receiver.received.length, 0), 3 * 48)
      assert.isAtMost(gauge.peak(), bound)
      assert.isAtLeast(gauge.peak(), 2, "attempts ran side by side")
      const after = yield* client.sockets
      assert.isAtMost(after.active + after.idle, bound)

      // The bound taken by idle sockets of other receivers: a new receiver is served at once.
      const others = yield* started(bound)
      for (const other of others) assert.isTrue((yield* client.send(post(other.url))).ok)
      yield* Effect.sleep("50 millis")
      assert.deepStrictEqual(yield* client.sockets, { active: 0, idle: bound })
      const [fresh] = yield* started(1)
      if (fresh === undefined) return assert.fail("no receiver")
      const outcome = yield* client.send(post(fresh.url))
      assert.isTrue(outcome.ok, outcome.detail ?? "")
      assert.isBelow(outcome.durationMs, 1_000)
      assert.strictEqual(fresh.received.length, 1)
      yield* Effect.sleep("50 millis")
      assert.strictEqual(gauge.open(), bound)
      assert.isAtMost(gauge.peak(), bound)
    }), 30_000)
})
