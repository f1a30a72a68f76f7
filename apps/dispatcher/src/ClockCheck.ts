/**
 * The dispatcher's clock against the database's (docs/operations.md
 * "Clock"): measured at start and every minute (`SELECT clock_timestamp()`,
 * the local reading taken as the midpoint of the round trip). Every
 * attempt's time comes from `now`, the local clock corrected by the last
 * measured skew, so the journal's attempt times are the database's and a
 * receiver's Standard Webhooks check (5 minutes of tolerance) sees the
 * right `webhook-timestamp` even from a machine whose clock drifted.
 * Beyond SKEW_LIMIT the machine's clock is wrong enough to break more than
 * this: one ERROR line says so (and one INFO line when it is back), and
 * /health/ready answers 503 while it lasts.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import type { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import * as Metrics from "./Metrics.ts"
import type { Outage } from "./Outage.ts"

/** Beyond this the dispatcher reports itself not ready. */
export const SKEW_LIMIT = Duration.seconds(60)

export interface ClockCheck {
  /** Now on the database's clock (as last measured), epoch milliseconds. */
  readonly now: Effect.Effect<number>
  /** Whether the last measurement found the clocks further apart than SKEW_LIMIT. */
  readonly skewed: Effect.Effect<boolean>
  /** Measures once (at start, then every `every`). */
  readonly measure: Effect.Effect<void>
}

export const make = (queue: DeliveryQueue["Service"], outage: Outage) =>
  Effect.gen(function*() {
    const skewMs = yield* Ref.make(0)
    const skewed = yield* Ref.make(false)
    const limitMs = Duration.toMillis(SKEW_LIMIT)

    const measure = Effect.gen(function*() {
      const before = yield* Clock.currentTimeMillis
      const database = yield* queue.databaseNow()
      const after = yield* Clock.currentTimeMillis
      const skew = Math.round((before + after) / 2 - database)
      yield* Ref.set(skewMs, skew)
      yield* Metrics.clockSkewed(skew)
      const now = Math.abs(skew) > limitMs
      const was = yield* Ref.getAndSet(skewed, now)
      const seconds = Math.round(Math.abs(skew) / 1000)
      if (now && !was) {
        yield* Effect.logError(
          `dispatcher: this machine's clock is ${seconds} s ${skew > 0 ? "ahead of" : "behind"} the database's; ` +
            "attempt times are taken from the database's clock, but fix this machine's (NTP): not ready until then",
          { skew_ms: skew }
        )
      } else if (!now && was) {
        yield* Effect.logInfo("dispatcher: this machine's clock agrees with the database's again", { skew_ms: skew })
      }
    }).pipe(
      Effect.tap(() => outage.answered),
      Effect.catch((error) => outage.failed("clock")(error))
    )

    return {
      now: Effect.map(Clock.currentTimeMillis, (local) => local - Ref.getUnsafe(skewMs)),
      skewed: Ref.get(skewed),
      measure
    } satisfies ClockCheck
  })

/** Measures every `every` (default 1 minute; the dispatcher measures once at start itself), until interrupted. */
export const run = (check: ClockCheck, every: Duration.Duration = Duration.minutes(1)) =>
  Effect.schedule(check.measure, Schedule.spaced(every))
