/**
 * The per-subscription action limit's pure transition
 * (`@school/domain/WebhookLimits`, docs/back-office.md "Webhook limits")
 * against the reference model of a sliding-window limiter (a plain list of
 * every accepted time, test/support/RateLimitModel.ts): for any sequence of
 * call times and limits, the same decisions and the same waits; a wait is
 * exact (one microsecond earlier is still refused) and its Retry-After is
 * enough; the stored times never outgrow the limit and never leave a
 * minute holding more than the limit, whatever order the times come in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { RateLimit } from "@school/domain"
import { ACTION_WINDOW, takeAction } from "@school/domain/WebhookLimits"
import { Budget, Gap, type Outcome, reference, Sequence, SEQUENCE_MAX, timesFrom, WINDOW } from "../support/RateLimitModel.ts"

const runs = { arbitrary: { runs: 500, size: SEQUENCE_MAX } }

/** Folds `takeAction` over the calls, recording each decision and the stored times it was taken on. */
const run = (calls: ReadonlyArray<{ readonly at: number; readonly budget: number }>) => {
  let times: ReadonlyArray<number> = []
  return calls.map(({ at, budget }) => {
    const before = times
    const decision = takeAction(times, at, budget)
    if (decision._tag === "Accepted") times = decision.times
    return { before, at, budget, decision, after: times }
  })
}

const outcomes = (steps: ReturnType<typeof run>): Array<Outcome> =>
  steps.map(({ decision }) => decision._tag === "Accepted" ? { accepted: true } : { accepted: false, wait: decision.wait })

describe("WebhookLimits.takeAction (pure transition)", () => {
  it("the action window is the reference model's minute", () => {
    assert.strictEqual(ACTION_WINDOW, WINDOW)
  })

  it.prop(
    "one limit: the same decisions and waits as the reference model",
    { limit: Budget, gaps: Sequence(Gap) },
    ({ gaps, limit }) => {
      const calls = timesFrom(gaps).map((at) => ({ at, budget: limit }))
      assert.deepStrictEqual(outcomes(run(calls)), reference(calls, WINDOW))
    },
    runs
  )

  it.prop(
    "a limit read per call (the setting changed): the same decisions and waits as the reference model",
    { steps: Sequence(Schema.Struct({ gap: Gap, budget: Budget })) },
    ({ steps }) => {
      const times = timesFrom(steps.map((step) => step.gap))
      const calls = steps.map((step, i) => ({ at: times[i] ?? 0, budget: step.budget }))
      assert.deepStrictEqual(outcomes(run(calls)), reference(calls, WINDOW))
    },
    runs
  )

  it.prop(
    "a wait is exact, and a call after Retry-After seconds is accepted",
    { steps: Sequence(Schema.Struct({ gap: Gap, budget: Budget })) },
    ({ steps }) => {
      const times = timesFrom(steps.map((step) => step.gap))
      const calls = steps.map((step, i) => ({ at: times[i] ?? 0, budget: step.budget }))
      for (const { at, before, budget, decision } of run(calls)) {
        if (decision._tag !== "Refused") continue
        assert.isAbove(decision.wait, 0)
        assert.isAtMost(decision.wait, WINDOW)
        assert.strictEqual(takeAction(before, at + decision.wait - 1, budget)._tag, "Refused", "one microsecond before the wait ends")
        assert.strictEqual(takeAction(before, at + decision.wait, budget)._tag, "Accepted")
        assert.strictEqual(decision.retryAfterSeconds, RateLimit.retryAfterSeconds(decision.wait))
        assert.isTrue(Number.isInteger(decision.retryAfterSeconds) && decision.retryAfterSeconds >= 1)
        assert.isBelow(decision.retryAfterSeconds * 1_000_000 - decision.wait, 1_000_000, "the smallest whole number of seconds")
        assert.strictEqual(takeAction(before, at + decision.retryAfterSeconds * 1_000_000, budget)._tag, "Accepted")
      }
    },
    runs
  )

  it.prop(
    "times in any order: the stored times stay within the limit and the window, and no minute holds more than the limit",
    {
      limit: Budget,
      jumps: Sequence(Schema.Union([Gap, Schema.Int.check(Schema.isBetween({ minimum: -WINDOW, maximum: 0 }))]))
    },
    ({ jumps, limit }) => {
      let times: ReadonlyArray<number> = []
      let at = 2 * WINDOW
      const accepted: Array<number> = []
      for (const jump of jumps) {
        at = Math.max(WINDOW, at + jump)
        const decision = takeAction(times, at, limit)
        if (decision._tag === "Accepted") {
          times = decision.times
          accepted.push(decision.at)
          assert.strictEqual(times.at(-1), decision.at, "the call's own time is the newest stored")
          for (const time of times) assert.isAbove(time, decision.at - WINDOW)
        }
        assert.isAtMost(times.length, limit)
      }
      for (let i = 1; i < accepted.length; i++) assert.isAtLeast(accepted[i] ?? 0, accepted[i - 1] ?? 0)
      for (const end of accepted) {
        assert.isAtMost(accepted.filter((time) => time > end - WINDOW && time <= end).length, limit)
      }
    },
    runs
  )

  it("examples: ten calls in a second, the eleventh waits for the first to be a minute old", () => {
    const s = 1_000_000
    let times: ReadonlyArray<number> = []
    for (let i = 0; i < 10; i++) {
      const decision = takeAction(times, 100 * s + i * 100_000, 10)
      assert.strictEqual(decision._tag, "Accepted")
      if (decision._tag === "Accepted") times = decision.times
    }
    assert.deepStrictEqual(takeAction(times, 101 * s, 10), { _tag: "Refused", wait: 59 * s, retryAfterSeconds: 59 })
    assert.deepStrictEqual(takeAction(times, 160 * s - 1, 10), { _tag: "Refused", wait: 1, retryAfterSeconds: 1 })
    const later = takeAction(times, 160 * s, 10)
    assert.strictEqual(later._tag, "Accepted")
    // The first call left the window; the nine others and the new one are kept.
    if (later._tag === "Accepted") assert.deepStrictEqual(later.times, [...times.slice(1), 160 * s])
    // A refused call changes nothing; a smaller limit counts the calls already made.
    assert.deepStrictEqual(takeAction(times, 101 * s, 3), { _tag: "Refused", wait: 59_700_000, retryAfterSeconds: 60 })
  })
})
