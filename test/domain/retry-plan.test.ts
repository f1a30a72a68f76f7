/**
 * The webhook retry plan as one Schedule (docs/integrators.md "Receiving webhooks"; docs/decisions.md
 * "Webhooks"): for any list of pauses, stepping the Schedule yields exactly
 * those pauses, in order, and then stops; the default is 1, 5 and 30
 * minutes, so 4 attempts in all.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Option, Schema } from "effect"
import * as RetryPlan from "@school/domain/RetryPlan"

const Millis = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 86_400_000 }))
const Delays = Schema.Array(Millis).check(Schema.isMaxLength(12))

const pausesOf = (delays: ReadonlyArray<Duration.Duration>) =>
  Effect.forEach(
    Array.from({ length: delays.length + 3 }, (_, i) => i + 1),
    (failures) => RetryPlan.pauseAfter(RetryPlan.retrySchedule(delays), failures)
  )

describe("RetryPlan", () => {
  it.effect("the default: after 1, 2, 3 failures wait 1, 5, 30 minutes; after the 4th, no attempt", () =>
    Effect.gen(function*() {
      const pauses = yield* pausesOf(RetryPlan.DEFAULT_DELAYS)
      assert.deepStrictEqual(
        pauses.map(Option.map(Duration.toMinutes)),
        [Option.some(1), Option.some(5), Option.some(30), Option.none(), Option.none(), Option.none()]
      )
      assert.strictEqual(RetryPlan.attemptsOf(RetryPlan.DEFAULT_DELAYS), 4)
    }))

  it.effect.prop("for any pauses, stepping yields exactly those pauses and then stops", { millis: Delays }, ({ millis }) =>
    Effect.gen(function*() {
      const delays = millis.map(Duration.millis)
      const pauses = yield* pausesOf(delays)
      const expected = [...millis.map(Option.some), Option.none(), Option.none(), Option.none()]
      assert.deepStrictEqual(pauses.map(Option.map(Duration.toMillis)), expected)
    }))
})
