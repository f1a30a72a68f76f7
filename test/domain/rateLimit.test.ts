/**
 * The limiter's pure transition (`@school/domain/RateLimit`) against the
 * reference model (a plain list of accepted timestamps): for any sequence of
 * request times and budgets, the same decisions and the same waits; a wait is
 * exact (one microsecond earlier is still rejected) and its `Retry-After` is
 * enough; times that go backwards never let more than the budget through.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { RateLimit } from "@school/domain"
import { Budget, Gap, type Outcome, reference, Sequence, SEQUENCE_MAX, timesFrom, WINDOW } from "../support/RateLimitModel.ts"

const runs = { arbitrary: { runs: 500, size: SEQUENCE_MAX } }

/** Folds `take` over the requests, recording each decision and the state it was taken in. */
const run = (requests: ReadonlyArray<{ readonly at: number; readonly budget: number }>) => {
  let state = RateLimit.initial
  return requests.map(({ at, budget }) => {
    const before = state
    const decision = RateLimit.take(state, at, budget, WINDOW)
    if (decision._tag === "Accepted") state = decision.state
    return { before, at, budget, decision }
  })
}

const outcomes = (steps: ReturnType<typeof run>): Array<Outcome> =>
  steps.map(({ decision }) =>
    decision._tag === "Accepted" ? { accepted: true } : { accepted: false, wait: decision.wait }
  )

describe("RateLimit (pure transition)", () => {
  it.prop(
    "one budget: the same decisions and waits as the reference model",
    { budget: Budget, gaps: Sequence(Gap) },
    ({ budget, gaps }) => {
      const requests = timesFrom(gaps).map((at) => ({ at, budget }))
      assert.deepStrictEqual(outcomes(run(requests)), reference(requests, WINDOW))
    },
    runs
  )

  it.prop(
    "a budget read per request (plan changes): the same decisions and waits as the reference model",
    { steps: Sequence(Schema.Struct({ gap: Gap, budget: Budget })) },
    ({ steps }) => {
      const times = timesFrom(steps.map((step) => step.gap))
      const requests = steps.map((step, i) => ({ at: times[i] ?? 0, budget: step.budget }))
      assert.deepStrictEqual(outcomes(run(requests)), reference(requests, WINDOW))
    },
    runs
  )

  it.prop(
    "a wait is exact, and waiting Retry-After seconds is enough",
    { steps: Sequence(Schema.Struct({ gap: Gap, budget: Budget })) },
    ({ steps }) => {
      const times = timesFrom(steps.map((step) => step.gap))
      const requests = steps.map((step, i) => ({ at: times[i] ?? 0, budget: step.budget }))
      for (const { before, at, budget, decision } of run(requests)) {
        if (decision._tag !== "Rejected") continue
        assert.isAbove(decision.wait, 0)
        assert.isAtMost(decision.wait, WINDOW)
        const early = RateLimit.take(before, at + decision.wait - 1, budget, WINDOW)
        assert.strictEqual(early._tag, "Rejected", "one microsecond before the wait ends")
        assert.strictEqual(RateLimit.take(before, at + decision.wait, budget, WINDOW)._tag, "Accepted")
        const retryAfter = RateLimit.retryAfterSeconds(decision.wait)
        assert.isTrue(Number.isInteger(retryAfter) && retryAfter >= 1)
        assert.isBelow(retryAfter * 1_000_000 - decision.wait, 1_000_000, "the smallest whole number of seconds")
        assert.strictEqual(RateLimit.take(before, at + retryAfter * 1_000_000, budget, WINDOW)._tag, "Accepted")
      }
    },
    runs
  )

  it.prop(
    "times in any order: never more than the budget in any window, and the ring never outgrows it",
    {
      budget: Budget,
      jumps: Sequence(Schema.Union([Gap, Schema.Int.check(Schema.isBetween({ minimum: -WINDOW, maximum: 0 }))]))
    },
    ({ budget, jumps }) => {
      let state = RateLimit.initial
      let at = 2 * WINDOW
      const accepted: Array<number> = []
      for (const jump of jumps) {
        at = Math.max(WINDOW, at + jump)
        const decision = RateLimit.take(state, at, budget, WINDOW)
        if (decision._tag === "Accepted") {
          state = decision.state
          accepted.push(decision.at)
        }
        assert.isAtMost(state.ring.length, budget)
      }
      for (let i = 1; i < accepted.length; i++) assert.isAtLeast(accepted[i] ?? 0, accepted[i - 1] ?? 0)
      for (const end of accepted) {
        const inWindow = accepted.filter((time) => time > end - WINDOW && time <= end)
        assert.isAtMost(inWindow.length, budget)
      }
    },
    runs
  )

  it("examples: the wait counts from the oldest request that still counts", () => {
    const s = 1_000_000
    let state = RateLimit.initial
    for (const at of [100 * s, 110 * s]) {
      const decision = RateLimit.take(state, at, 2, 60 * s)
      assert.strictEqual(decision._tag, "Accepted")
      if (decision._tag === "Accepted") state = decision.state
    }
    assert.deepStrictEqual(RateLimit.take(state, 120 * s, 2, 60 * s), { _tag: "Rejected", at: 120 * s, wait: 40 * s })
    assert.strictEqual(RateLimit.retryAfterSeconds(40 * s), 40)
    // Half a millisecond left: Retry-After is still a whole second.
    const late = RateLimit.take(state, 160 * s - 500, 2, 60 * s)
    assert.deepStrictEqual(late, { _tag: "Rejected", at: 160 * s - 500, wait: 500 })
    assert.strictEqual(RateLimit.retryAfterSeconds(500), 1)
    assert.strictEqual(RateLimit.take(state, 160 * s, 2, 60 * s)._tag, "Accepted")
    // A plan upgrade (budget 3) admits the next request at once.
    assert.strictEqual(RateLimit.take(state, 120 * s, 3, 60 * s)._tag, "Accepted")
  })

  it("a downgrade then an upgrade within one window forgets nothing", () => {
    const s = 1_000_000
    let state = RateLimit.initial
    for (let i = 0; i < 6; i++) {
      const decision = RateLimit.take(state, 100 * s + i, 6, 60 * s)
      assert.strictEqual(decision._tag, "Accepted")
      if (decision._tag === "Accepted") state = decision.state
    }
    // Budget 2 now: rejected, and the rejection changes nothing.
    assert.strictEqual(RateLimit.take(state, 101 * s, 2, 60 * s)._tag, "Rejected")
    // Back to 6: the six accepted requests still count.
    assert.strictEqual(RateLimit.take(state, 102 * s, 6, 60 * s)._tag, "Rejected")
    assert.strictEqual(RateLimit.take(state, 102 * s, 7, 60 * s)._tag, "Accepted")
  })
})
