/**
 * The client's repeat rule (libs/client RetryPolicy.ts; docs/integrators.md
 * "Limits"): a pause is never below the answer's Retry-After, starts at the
 * base delay, doubles on each repeat up to the bound; and the Schedule
 * makes exactly `maxAttempts - 1` repeats, each with the rule's pause.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Pull, Schedule, Schema } from "effect"
import { RetryPolicy } from "../../libs/client/src/index.ts"

const Millis = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 600_000 }))
const Positive = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 600_000 }))

describe("RetryPolicy", () => {
  it.prop(
    "a pause: at least Retry-After; otherwise double the previous one (base first), at most maxDelay",
    {
      previous: Schema.UndefinedOr(Positive),
      retryAfter: Schema.UndefinedOr(Millis),
      base: Positive,
      max: Positive
    },
    ({ previous, retryAfter, base, max }) => {
      const options = { maxAttempts: 5, baseDelayMs: base, maxDelayMs: max }
      const pause = RetryPolicy.nextPause(previous, retryAfter, options)
      const doubled = previous === undefined ? base : 2 * previous
      assert.isAtLeast(pause, retryAfter ?? 0, "never earlier than Retry-After")
      assert.isAtLeast(pause, Math.min(max, doubled), "doubling, up to the bound")
      assert.isAtMost(pause, Math.max(retryAfter ?? 0, max), "bounded unless Retry-After says more")
      if (retryAfter === undefined || retryAfter <= Math.min(max, doubled)) assert.strictEqual(pause, Math.min(max, doubled))
    }
  )

  it.effect.prop(
    "the Schedule repeats maxAttempts - 1 times, the pauses doubling from the base to the bound",
    { maxAttempts: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 12 })), base: Positive, max: Positive },
    ({ maxAttempts, base, max }) =>
      Effect.gen(function*() {
        const events: Array<number> = []
        const step = yield* Schedule.toStep(
          RetryPolicy.schedule({ maxAttempts, baseDelay: Duration.millis(base), maxDelay: Duration.millis(max), onRetry: (e) => events.push(e.attempt) })
        )
        const pauses: Array<number> = []
        for (let i = 0; i < maxAttempts + 2; i++) {
          const exit = yield* Effect.exit(step(0, new Error("no answer")))
          if (Exit.isFailure(exit)) {
            assert.isTrue(Pull.isDoneCause(exit.cause), "it stops, it does not fail")
            break
          }
          pauses.push(Duration.toMillis(exit.value[1]))
        }
        assert.strictEqual(pauses.length, maxAttempts - 1)
        let expected: number | undefined
        for (const pause of pauses) {
          expected = Math.min(max, expected === undefined ? base : 2 * expected)
          assert.strictEqual(pause, expected)
        }
        assert.deepStrictEqual(events, pauses.map((_, i) => i + 2))
      })
  )
})
