/**
 * Records what came of the attempts (DeliveryQueue `record`; docs/decisions.md
 * "Webhooks"), in batches: the attempts queue up as they end, and the queue
 * drained as a Stream hands over everything that arrived while the last
 * batch was being written (`Stream.fromQueue` takes all that is there),
 * RECORD_BATCH per statement. Under a stream (a batch of three attempts or
 * more, not full; ./Gathering.ts) the next waits until RECORD_GATHER_MS
 * after it began, so the attempts of those few ms go in one statement
 * instead of a few each (docs/decisions.md "The webhook dispatcher"); a lone
 * attempt, as at a trickle, is recorded at once and frees its lease at once,
 * and so are two. A batch is retried a few times (the leases still cover
 * it); one that still fails is logged, and its deliveries go out again once
 * their leases end (at least once). Each batch recorded wakes the claim
 * (`recorded`): leases and the subscriptions' caps were freed.
 *
 * `stop` ends the queue, lets the stream record what is left, and waits for
 * it (5 s at most).
 *
 * Each batch is the span `Dispatcher.record` (docs/operations.md "Traces").
 */
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { AttemptRecord, DeliveryQueue, EndedLease } from "@school/persistence/DeliveryQueue"
import * as Tracing from "@school/runtime/Tracing"
import { gatherAfter } from "./Gathering.ts"
import type { Outage } from "./Outage.ts"

/** Attempts recorded per statement, at most. */
const RECORD_BATCH = 200
/** Under a stream (./Gathering.ts): the least time from one batch to the next. */
const RECORD_GATHER_MS = 5

export interface Recorder {
  readonly offer: (record: AttemptRecord) => Effect.Effect<void>
  /**
   * The deliveries whose attempts ended and whose record has not come back
   * yet: their leases still stand, but no request of theirs is in flight
   * (the claim does not count them against their subscription's cap).
   */
  readonly finished: Effect.Effect<ReadonlyArray<EndedLease>>
  readonly stop: Effect.Effect<void>
}

export const make = (options: {
  readonly queue: DeliveryQueue["Service"]
  readonly outage: Outage
  /** After each batch recorded. */
  readonly recorded: Effect.Effect<void>
}) =>
  Effect.gen(function*() {
    const results = yield* Queue.unbounded<AttemptRecord, Cause.Done>()
    /** Offered and not yet through a batch, by school and delivery. */
    const waiting = new Map<string, EndedLease>()
    const keyOf = (record: AttemptRecord) => `${record.schoolId}:${record.id}`

    const recordBatch = (batch: ReadonlyArray<AttemptRecord>) =>
      options.queue.record(batch).pipe(
        Effect.retry(Schedule.max([Schedule.spaced("250 millis"), Schedule.recurs(8)])),
        Tracing.work("Dispatcher.record", { root: true, attributes: { "dispatcher.attempts": batch.length } }),
        Effect.tap((recorded) =>
          Effect.andThen(
            options.outage.answered,
            recorded.problematic > 0 || recorded.recovered > 0
              ? Effect.logWarning("dispatcher: subscriptions changed status", recorded)
              : Effect.void
          )
        ),
        Effect.andThen(options.recorded),
        Effect.catch((error) =>
          Effect.andThen(
            options.outage.failed("record")(error),
            Effect.logError(
              "dispatcher: attempts not recorded; their deliveries go out again once their lease ends",
              { attempts: batch.length }
            )
          )
        ),
        Effect.catchDefect((defect) => Effect.logError("dispatcher: a record failed unexpectedly; going on", { defect: String(defect) })),
        // Recorded, the leases are gone; not recorded, they stand until they end and count again.
        Effect.ensuring(Effect.sync(() => {
          for (const record of batch) waiting.delete(keyOf(record))
        }))
      )

    const fiber = yield* Stream.fromQueue(results).pipe(
      Stream.runForEachArray((arrived) =>
        Effect.gen(function*() {
          const began = yield* Clock.currentTimeMillis
          yield* Effect.forEach(
            Array.from({ length: Math.ceil(arrived.length / RECORD_BATCH) }, (_, i) => arrived.slice(i * RECORD_BATCH, (i + 1) * RECORD_BATCH)),
            recordBatch,
            { discard: true }
          )
          yield* gatherAfter(arrived.length, RECORD_BATCH, began, RECORD_GATHER_MS)
        })
      ),
      Effect.forkScoped
    )

    return {
      offer: (record) =>
        Effect.suspend(() => {
          waiting.set(keyOf(record), { school: record.schoolId, id: record.id })
          return Effect.asVoid(Queue.offer(results, record))
        }),
      finished: Effect.sync(() => [...waiting.values()]),
      stop: Queue.end(results).pipe(
        Effect.andThen(Fiber.join(fiber)),
        Effect.timeout(Duration.seconds(5)),
        Effect.ignore
      )
    } satisfies Recorder
  })
