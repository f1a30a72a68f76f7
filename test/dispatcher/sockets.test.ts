/**
 * The receiver client's sockets are bounded (libs/runtime/src/Receiver.ts;
 * docs/operations.md "Connections to receivers": sockets are a shared
 * resource), counted at real receivers on loopback whose servers never
 * close an idle keep-alive connection (`keepAliveTimeout = 0`), so whatever
 * closes is closed by the client:
 *
 * - a dozen receivers, bursts of a few deliveries each: the connections
 *   the first burst opened stay open and carry the next bursts (no new
 *   connection), and 17 s after the last delivery none is left (the idle
 *   time-out is 15 s);
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
import { IDLE_TIMEOUT, make, type ReceiverShape } from "../../libs/runtime/src/Receiver.ts"
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
  it.live("idle connections: kept for reuse, a burst's again on the next burst, none left 17 s after the last delivery", () =>
    Effect.gen(function*() {
      assert.strictEqual(Duration.toMillis(IDLE_TIMEOUT), 15_000)
      const { gauge, receivers: targets } = yield* receivers(12)
      const client = yield* make({ concurrency: 36, timeout: Duration.seconds(5), allowInsecureUrls: true })
      // Three bursts of 3 to each receiver: the first opens up to 3 connections to each, the others reuse them.
      yield* sendToAll(client, targets, 3)
      yield* Effect.sleep("100 millis")
      const opened = targets.map((receiver) => receiver.connections())
      for (const [i, receiver] of targets.entries()) assert.isAtMost(opened[i] ?? 0, 3, receiver.url)
      // Between bursts a pause: Node hands a socket back to the pool a tick after its answer ends.
      for (let round = 1; round < 3; round++) {
        yield* sendToAll(client, targets, 3)
        yield* Effect.sleep("100 millis")
      }
      for (const [i, receiver] of targets.entries()) {
        assert.strictEqual(receiver.connections(), opened[i], `${receiver.url}: no new connection after the first burst`)
        assert.strictEqual(receiver.openConnections(), opened[i], `${receiver.url}: every connection kept`)
      }
      assert.strictEqual(gauge.open(), opened.reduce((n, c) => n + (c ?? 0), 0))
      const kept = yield* client.sockets
      assert.strictEqual(kept.active, 0)
      assert.strictEqual(kept.idle, gauge.open())

      yield* Effect.sleep("17 seconds")
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
