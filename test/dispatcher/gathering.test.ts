/**
 * The dispatcher's fan-out and recorder gather under a steady stream
 * (apps/dispatcher/src/FanOut.ts, Recorder.ts; docs/performance.md
 * "Sustained dispatch"), on the TestClock with an in-memory queue (the loop's
 * timing is what is tested; the statements themselves are tested against
 * PostgreSQL in queue.test.ts):
 * - a lone event is fanned out at once, and a lone attempt recorded at
 *   once, however soon after the last batch (a trickle keeps its latency);
 * - two at once do not make a stream: what comes next goes at once, so a
 *   stream of two events per window (200 a second) is not held back window
 *   after window;
 * - under a stream (the last batch had three or more), what comes in the
 *   next few ms goes in one batch when they are over, not one batch each;
 * - a full fan-out batch is followed by the next at once;
 * - an attempt offered to the recorder is `finished` (its lease stands, no
 *   request of it is in flight) until its record comes back.
 */
import { assert, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { type AttemptRecord, DeliveryQueue } from "@school/persistence/DeliveryQueue"
import * as FanOut from "../../apps/dispatcher/src/FanOut.ts"
import * as Outage from "../../apps/dispatcher/src/Outage.ts"
import * as Recorder from "../../apps/dispatcher/src/Recorder.ts"

const unused = Effect.die("not used by this test")
/** What neither the fan-out nor the recorder asks of the queue. */
const notUsed = {
  claim: () => unused,
  release: () => unused,
  nextDue: () => unused,
  purge: () => unused,
  databaseNow: () => unused,
  gauges: () => unused
}

/** A queue whose outbox is `waiting` events, fanned out `limit` at a time; each pass's count is noted. */
const inMemory = (state: { waiting: number; readonly passes: Array<number>; readonly records: Array<number> }) =>
  Effect.map(Queue.unbounded<void>(), (notifications) => ({
    notify: Queue.offer(notifications, undefined),
    queue: DeliveryQueue.of({
      fanOut: (limit) =>
        Effect.sync(() => {
          const events = Math.min(limit, state.waiting)
          state.waiting -= events
          state.passes.push(events)
          return { events, deliveries: events, skipped: 0 }
        }),
      record: (attempts) =>
        Effect.sync(() => {
          state.records.push(attempts.length)
          return { recorded: attempts.length, problematic: 0, notified: 0, recovered: 0 }
        }),
      ...notUsed,
      wakeups: Effect.succeed(Stream.fromQueue(notifications))
    })
  }))

/** Lets every fiber that can run, run (the TestClock does not move). */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

const attempt = (id: number): AttemptRecord => ({
  schoolId: 1,
  id,
  lease: "lease",
  attempt: 1,
  at: new Date(0),
  responseCode: 200,
  error: null,
  durationMs: 1,
  responseBody: null,
  outcome: "delivered",
  pauseMs: 0
})

/** The fan-out over an empty outbox, 100 ms after its start (its start-up passes done). */
const runningFanOut = Effect.gen(function*() {
  const state = { waiting: 0, passes: new Array<number>(), records: new Array<number>() }
  const { notify, queue } = yield* inMemory(state)
  const outage = yield* Outage.make
  const fiber = yield* FanOut.run({ queue, outage, pollMs: 1_000, made: Effect.void }).pipe(Effect.forkChild)
  yield* settle
  yield* TestClock.adjust("100 millis")
  yield* settle
  return { state, notify, fiber }
})

it.effect("the fan-out: a lone event at once; under a stream, the next few ms' events in one batch", () =>
  Effect.gen(function*() {
    const { fiber, notify, state } = yield* runningFanOut
    // The first pass at start, and the one the listen connection's start asks for (a notification may have
    // come before it), 10 ms later: both found nothing.
    assert.deepStrictEqual(state.passes, [0, 0])

    // Long after them, one event: fanned out at once; and one more a millisecond later: at once too.
    yield* TestClock.adjust("100 millis")
    state.waiting += 1
    yield* notify
    yield* settle
    assert.deepStrictEqual(state.passes, [0, 0, 1])
    yield* TestClock.adjust("1 millis")
    state.waiting += 1
    yield* notify
    yield* settle
    assert.deepStrictEqual(state.passes, [0, 0, 1, 1])

    // Two at once: together, and the next, a millisecond later, at once too.
    yield* TestClock.adjust("1 millis")
    state.waiting += 2
    yield* notify
    yield* settle
    yield* TestClock.adjust("1 millis")
    state.waiting += 1
    yield* notify
    yield* settle
    assert.deepStrictEqual(state.passes, [0, 0, 1, 1, 2, 1])

    // A stream: three events at once, then one a millisecond. None goes before 10 ms after the batch of three
    // began, then all together.
    yield* TestClock.adjust("1 millis")
    state.waiting += 3
    yield* notify
    yield* settle
    assert.deepStrictEqual(state.passes, [0, 0, 1, 1, 2, 1, 3])
    for (let ms = 1; ms <= 9; ms++) {
      yield* TestClock.adjust("1 millis")
      state.waiting += 1
      yield* notify
      yield* settle
    }
    assert.deepStrictEqual(state.passes, [0, 0, 1, 1, 2, 1, 3])
    yield* TestClock.adjust("1 millis")
    yield* settle
    assert.deepStrictEqual(state.passes, [0, 0, 1, 1, 2, 1, 3, 9])
    yield* Fiber.interrupt(fiber)
  }))

it.effect("the fan-out: two that met by chance, then an event every 5 ms (200 a second): each at once", () =>
  Effect.gen(function*() {
    const { fiber, notify, state } = yield* runningFanOut
    state.passes.length = 0
    state.waiting += 2
    yield* notify
    yield* settle
    // Each event is fanned out as it comes; with two as a stream, the fan-out waited out 10 ms after every
    // batch, each window found the next two, and every event waited up to 10 ms, window after window.
    const gone: Array<number> = []
    for (let event = 1; event <= 10; event++) {
      yield* TestClock.adjust("5 millis")
      state.waiting += 1
      yield* notify
      yield* settle
      gone.push(state.waiting)
    }
    assert.deepStrictEqual(state.passes, [2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    assert.deepStrictEqual(gone, Array.from({ length: 10 }, () => 0))
    yield* Fiber.interrupt(fiber)
  }))

it.effect("the fan-out: a full batch is followed by the next at once", () =>
  Effect.gen(function*() {
    const state = { waiting: 1_200, passes: new Array<number>(), records: new Array<number>() }
    const { queue } = yield* inMemory(state)
    const outage = yield* Outage.make
    const fiber = yield* FanOut.run({ queue, outage, pollMs: 1_000, made: Effect.void }).pipe(Effect.forkChild)
    yield* settle
    // 500, 500 at once; the short batch of 200 comes right after them: the clock has not moved.
    assert.deepStrictEqual(state.passes, [500, 500, 200])
    yield* Fiber.interrupt(fiber)
  }))

it.effect("the recorder: a lone attempt at once; under a stream, the next few ms' attempts in one statement", () =>
  Effect.gen(function*() {
    const state = { waiting: 0, passes: new Array<number>(), records: new Array<number>() }
    const { queue } = yield* inMemory(state)
    const outage = yield* Outage.make
    const recorder = yield* Recorder.make({ queue, outage, recorded: Effect.void })
    // Lone attempts, a millisecond apart: each recorded at once.
    yield* recorder.offer(attempt(1))
    yield* settle
    yield* TestClock.adjust("1 millis")
    yield* recorder.offer(attempt(2))
    yield* settle
    assert.deepStrictEqual(state.records, [1, 1])
    // Two at once: together, and the next, a millisecond later, at once too.
    yield* TestClock.adjust("1 millis")
    yield* recorder.offer(attempt(3))
    yield* recorder.offer(attempt(4))
    yield* settle
    yield* TestClock.adjust("1 millis")
    yield* recorder.offer(attempt(5))
    yield* settle
    assert.deepStrictEqual(state.records, [1, 1, 2, 1])
    // A stream: three at once, then one a millisecond: together 5 ms after the batch of three began.
    yield* TestClock.adjust("1 millis")
    for (let id = 6; id <= 8; id++) yield* recorder.offer(attempt(id))
    yield* settle
    assert.deepStrictEqual(state.records, [1, 1, 2, 1, 3])
    for (let id = 9; id <= 11; id++) {
      yield* TestClock.adjust("1 millis")
      yield* recorder.offer(attempt(id))
      yield* settle
    }
    assert.deepStrictEqual(state.records, [1, 1, 2, 1, 3])
    yield* TestClock.adjust("2 millis")
    yield* settle
    assert.deepStrictEqual(state.records, [1, 1, 2, 1, 3, 3])
  }).pipe(Effect.scoped))

it.effect("the recorder: an ended attempt is `finished` until its record comes back, so the claim does not count it", () =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    const queue = DeliveryQueue.of({
      fanOut: () => unused,
      record: (attempts) =>
        Effect.as(Deferred.await(gate), { recorded: attempts.length, problematic: 0, notified: 0, recovered: 0 }),
      ...notUsed,
      wakeups: Effect.never
    })
    const outage = yield* Outage.make
    const recorder = yield* Recorder.make({ queue, outage, recorded: Effect.void })
    assert.deepStrictEqual(yield* recorder.finished, [])
    yield* recorder.offer(attempt(7))
    yield* settle
    // Its record is on its way: the lease stands, but no request of it is in flight.
    assert.deepStrictEqual(yield* recorder.finished, [{ school: 1, id: 7 }])
    yield* Deferred.succeed(gate, undefined)
    // Back from the record (however many turns the stream takes to get there): gone.
    for (let turn = 0; turn < 1_000 && (yield* recorder.finished).length > 0; turn++) yield* Effect.yieldNow
    assert.deepStrictEqual(yield* recorder.finished, [])
  }).pipe(Effect.scoped))
