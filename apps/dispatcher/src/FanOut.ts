/**
 * The fan-out (DeliveryQueue `fanOut`; docs/decisions.md "Webhooks"): turns
 * outbox events into deliveries, FAN_OUT_BATCH events per statement, the
 * next batch at once while batches come back full; then it waits for the
 * outbox's NOTIFY (LISTEN on a connection of its own) or POLL, the safety
 * net for a missed notification or a lost listen connection. Under a
 * stream (its last batch found three events or more, and was not full;
 * ./Gathering.ts), woken less than FAN_OUT_GATHER_MS after its last batch
 * began, it waits out the rest first, so the events of those few ms go in
 * one statement instead of a few each (docs/decisions.md "The webhook
 * dispatcher"); a lone event, as at a trickle or after a quiet spell, goes
 * at once, and so do two. A batch that made deliveries wakes the claim
 * (`made`). Events of a disabled subscription are journaled as skipped
 * there, and counted. A batch that found events is the span
 * `Dispatcher.fanOut`, linked to the span that wrote each event
 * (docs/operations.md "Traces").
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import * as Tracing from "@school/runtime/Tracing"
import * as Metrics from "./Metrics.ts"
import type { Outage } from "./Outage.ts"
import * as Signal from "@school/runtime/Signal"
import { gatherAfter } from "./Gathering.ts"

/** Events fanned out per statement. */
const FAN_OUT_BATCH = 500
/** Under a stream (./Gathering.ts): the least time from one batch to the next. */
const FAN_OUT_GATHER_MS = 10

export const run = (options: {
  readonly queue: DeliveryQueue["Service"]
  readonly outage: Outage
  readonly pollMs: number
  /** After a batch that made deliveries. */
  readonly made: Effect.Effect<void>
}) =>
  Effect.gen(function*() {
    const { outage, queue } = options
    const notified = yield* Signal.make
    // The events' traceparents are read only where the links they make leave the process.
    const traceparents = yield* Tracing.exporting

    // One warning when the listen connection is lost and one line when it is back, not one a second while the
    // database is away (docs/operations.md "Database away": the outage has its own lines).
    let lost = false
    const listen = Effect.scoped(
      queue.wakeups.pipe(
        Effect.tap(() =>
          lost
            ? Effect.logInfo("dispatcher: listening to the outbox again").pipe(Effect.andThen(Effect.sync(() => (lost = false))))
            : Effect.logDebug("dispatcher: listening to the outbox")
        ),
        // A notification that arrived while the connection was down is caught by the next cycle.
        Effect.tap(() => notified.wake),
        Effect.flatMap((stream) => Stream.runForEach(stream, () => notified.wake))
      )
    ).pipe(
      Effect.catch((error) =>
        lost
          ? Effect.logDebug("dispatcher: the outbox listen connection is still lost", { error: error.message })
          : Effect.logWarning("dispatcher: the outbox listen connection was lost; polling meanwhile", {
            error: error.message
          }).pipe(Effect.andThen(Effect.sync(() => (lost = true))))
      ),
      Effect.andThen(Effect.sleep(Duration.seconds(1))),
      Effect.forever
    )

    let lastPass = Number.NEGATIVE_INFINITY
    /** Events the last batch found. */
    let lastEvents = 0

    /** One batch; how long to wait before the next (0: at once). */
    const pass: Effect.Effect<number> = queue.fanOut(FAN_OUT_BATCH, { traceparents }).pipe(
      Tracing.workAfter("Dispatcher.fanOut", {
        worth: (fanned) => fanned.events > 0,
        attributes: (fanned) => ({
          "dispatcher.events": fanned.events,
          "dispatcher.deliveries": fanned.deliveries,
          "dispatcher.skipped": fanned.skipped
        }),
        links: (fanned) => Tracing.linksTo(fanned.traceparents ?? [])
      }),
      Effect.tap((fanned) => {
        lastEvents = fanned.events
        return fanned.deliveries > 0 ? options.made : Effect.void
      }),
      Effect.tap((fanned) => fanned.skipped > 0 ? Metrics.skippedDeliveries(fanned.skipped) : Effect.void),
      Effect.tap(() => outage.answered),
      Effect.map((fanned) => fanned.events === FAN_OUT_BATCH ? 0 : options.pollMs),
      Effect.catch((error) => Effect.as(outage.failed("fan-out")(error), options.pollMs)),
      Effect.catchDefect((defect) =>
        Effect.as(Effect.logError("dispatcher: a pass failed unexpectedly; going on", { step: "fan-out", defect: String(defect) }), options.pollMs)
      )
    )

    /** A pass, after the rest of the gathering time when the last batch found a stream's worth (not one, not full). */
    const gathered = Effect.suspend(() => gatherAfter(lastEvents, FAN_OUT_BATCH, lastPass, FAN_OUT_GATHER_MS)).pipe(
      Effect.andThen(Clock.currentTimeMillis),
      Effect.flatMap((now) => {
        lastPass = now
        lastEvents = 0
        return pass
      })
    )

    yield* Effect.forkScoped(listen)
    return yield* Effect.forever(Effect.flatMap(gathered, (waitMs) => waitMs === 0 ? Effect.void : notified.sleep(waitMs)))
  })
