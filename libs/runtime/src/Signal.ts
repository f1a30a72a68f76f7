/**
 * A wake-up between the pieces of a loop (the dispatcher's, apps/dispatcher/src/Dispatcher.ts; the CLI's
 * `webhooks listen`, apps/cli/src/WebhookCommands.ts): one pending wake-up at most, since more would only
 * repeat the same pass.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"

export interface Signal {
  /** Wakes the waiter (or the next wait, when none waits now). */
  readonly wake: Effect.Effect<void>
  /** Waits for a wake-up. */
  readonly wait: Effect.Effect<void>
  /** Waits `ms`, or less when woken: whether a wake-up ended it. */
  readonly sleep: (ms: number) => Effect.Effect<boolean>
}

export const make: Effect.Effect<Signal> = Effect.map(Queue.sliding<void>(1), (queue) => {
  const wait = Queue.take(queue)
  return {
    wake: Effect.sync(() => {
      Queue.offerUnsafe(queue, undefined)
    }),
    wait,
    sleep: (ms) => Effect.raceFirst(Effect.as(wait, true), Effect.as(Effect.sleep(Duration.millis(ms)), false))
  }
})
