/**
 * The sign-in throttle of the back office as a pure rule (docs/decisions.md
 * "Back-office sessions"): free for the first failures, then a wait that
 * grows with the failures and is bounded, and never longer than the delay
 * after the last failure.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Sessions from "@school/domain/Sessions"

const Failures = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10_000 }))
const Instant = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4_000_000_000_000 }))
const Elapsed = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 200_000 }))

describe("Sessions.loginDelayMs (pure rule)", () => {
  it("is free for the first five failures, then 1 s, 2 s, 4 s, … up to 60 s", () => {
    assert.deepStrictEqual(
      [0, 1, 4, 5, 6, 7, 10, 11, 12, 100].map(Sessions.loginDelayMs),
      [0, 0, 0, 1_000, 2_000, 4_000, 32_000, 60_000, 60_000, 60_000]
    )
  })

  it.prop("grows with the failures and is bounded by 60 s", { failures: Failures }, ({ failures }) => {
    const delay = Sessions.loginDelayMs(failures)
    assert.isAtLeast(delay, 0)
    assert.isAtMost(delay, Sessions.MAX_DELAY_MS)
    assert.isAtLeast(Sessions.loginDelayMs(failures + 1), delay)
    if (failures < Sessions.FREE_FAILURES) assert.strictEqual(delay, 0)
  })

  it.prop(
    "the wait counts down from the last failure and is never more than one delay",
    { failures: Failures, last: Instant, elapsed: Elapsed },
    ({ failures, last, elapsed }) => {
      const wait = Sessions.loginWaitMs(failures, last, last + elapsed)
      const delay = Sessions.loginDelayMs(failures)
      assert.strictEqual(wait, Math.max(0, delay - elapsed))
      assert.isAtMost(wait, Sessions.MAX_DELAY_MS)
      // Once the delay has passed, the next attempt is allowed.
      assert.strictEqual(Sessions.loginWaitMs(failures, last, last + delay), 0)
    }
  )
})
