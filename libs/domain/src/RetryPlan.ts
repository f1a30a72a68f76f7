/**
 * The retry plan of a webhook delivery (docs/integrators.md "Receiving webhooks";
 * docs/decisions.md "Webhooks"): 4 attempts in all, the pauses before
 * attempts 2, 3 and 4 being `WEBHOOK_RETRY_DELAYS` (default 1 min, 5 min,
 * 30 min), then no fifth attempt. The plan is one Effect `Schedule` value;
 * the dispatcher stores each delivery's next attempt time by stepping it
 * (`pauseAfter`), so the plan lives here alone and a restart loses no
 * timing: the step is a pure function of the delays and the number of
 * failed attempts so far.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Pull from "effect/Pull"
import * as Schedule from "effect/Schedule"

/** The pauses before attempts 2, 3 and 4: 1, 5 and 30 minutes. */
export const DEFAULT_DELAYS: ReadonlyArray<Duration.Duration> = [
  Duration.minutes(1),
  Duration.minutes(5),
  Duration.minutes(30)
]

/** One recurrence per pause, each waiting its pause, then done. */
export const retrySchedule = (delays: ReadonlyArray<Duration.Duration>): Schedule.Schedule<number> =>
  Schedule.recurs(delays.length).pipe(
    Schedule.modifyDelay(({ attempt }) => Effect.succeed(delays[attempt - 1] ?? Duration.zero))
  )

/**
 * The pause before the next attempt once `failures` attempts have failed
 * (steps a fresh copy of the Schedule `failures` times); none when the plan
 * is spent and the delivery has failed for good.
 */
export const pauseAfter = (
  schedule: Schedule.Schedule<number>,
  failures: number
): Effect.Effect<Option.Option<Duration.Duration>> =>
  Effect.gen(function*() {
    const step = yield* Schedule.toStep(schedule)
    let pause: Option.Option<Duration.Duration> = Option.none()
    for (let i = 0; i < failures; i++) {
      pause = yield* step(0, undefined).pipe(
        Effect.map(([, delay]) => Option.some(delay)),
        Pull.catchDone(() => Effect.succeed(Option.none()))
      )
      if (Option.isNone(pause)) return pause
    }
    return pause
  })

/** Attempts in all: the first, then one per pause (4 by default). */
export const attemptsOf = (delays: ReadonlyArray<Duration.Duration>): number => delays.length + 1
