/**
 * The sign-in throttle of the back office as a pure rule (docs/decisions.md
 * "Back-office sessions"): free for the first failures, then a wait that
 * grows with the failures and is bounded, and never longer than the delay
 * after the last failure.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as LoginThrottle from "@school/domain/LoginThrottle"
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

const Step = Schema.Struct({
  /** Which address (0-2) and e-mail (0-2) the step is about. */
  address: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 2 })),
  email: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 2 })),
  /** A new attempt (with the right or a wrong password), or the end of the oldest running check of the address. */
  kind: Schema.Literals(["right", "wrong", "finish"]),
  /** Milliseconds since the previous step. */
  elapsed: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 30_000 }))
})
const Steps = Schema.Array(Step).check(Schema.isMaxLength(300))

describe("LoginThrottle (pure rule)", () => {
  const { burst, interval } = LoginThrottle.ADDRESS_BUDGET

  it.prop(
    "for any interleaving: a right password from an address that is not failing is admitted; no address guesses past its budget",
    { steps: Steps },
    ({ steps }) => {
      let now = 1_000_000
      const addresses = new Map<number, LoginThrottle.AddressState>()
      const pairs = new Map<string, LoginThrottle.PairState>()
      const running = new Map<number, Array<{ readonly email: number; readonly right: boolean }>>()
      const guesses = new Map<number, Array<number>>()
      for (const step of steps) {
        now += step.elapsed
        const address = addresses.get(step.address) ?? 0
        const inFlight = running.get(step.address) ?? []
        const key = `${step.email} ${step.address}`
        if (step.kind === "finish") {
          const done = inFlight.shift()
          if (done === undefined) continue
          const doneKey = `${done.email} ${step.address}`
          if (done.right) pairs.delete(doneKey)
          else {
            pairs.set(doneKey, LoginThrottle.pairAfterFailure(pairs.get(doneKey), now))
            addresses.set(step.address, LoginThrottle.addressAfterFailure(address, now))
          }
          continue
        }
        const pair = pairs.get(key)
        const wait = LoginThrottle.waitMs({ pair, address, inFlight: inFlight.length, nowMs: now })
        const notFailing = LoginThrottle.isIdle(address, now) && LoginThrottle.pairWaitMs(pair, now) === 0 &&
          inFlight.length < burst
        if (step.kind === "right" && notFailing) assert.strictEqual(wait, 0)
        if (wait > 0) {
          // A refusal counts against the address.
          addresses.set(step.address, LoginThrottle.addressAfterFailure(address, now))
          continue
        }
        inFlight.push({ email: step.email, right: step.kind === "right" })
        running.set(step.address, inFlight)
        if (step.kind === "wrong") guesses.set(step.address, [...(guesses.get(step.address) ?? []), now])
      }
      // At most `burst` wrong guesses at once, then one per interval, in every window.
      for (const times of guesses.values()) {
        for (let i = 0; i < times.length; i++) {
          for (let j = i; j < times.length; j++) {
            assert.isAtMost(j - i + 1, burst + Math.floor((times[j]! - times[i]!) / interval))
          }
        }
      }
    }
  )

  it("failures from one address never hold back another", () => {
    const now = 10_000_000
    let attacker: LoginThrottle.AddressState = 0
    let pair: LoginThrottle.PairState | undefined
    for (let i = 0; i < 100; i++) {
      attacker = LoginThrottle.addressAfterFailure(attacker, now)
      pair = LoginThrottle.pairAfterFailure(pair, now)
    }
    assert.isAbove(LoginThrottle.waitMs({ pair, address: attacker, inFlight: 0, nowMs: now }), 0)
    assert.strictEqual(LoginThrottle.waitMs({ pair: undefined, address: 0, inFlight: 0, nowMs: now }), 0)
  })

  it("a pair's failures are forgotten after FORGET_AFTER_MS", () => {
    const pair = { failures: 50, lastFailedAtMs: 0 }
    assert.isAbove(LoginThrottle.pairWaitMs(pair, 1), 0)
    assert.strictEqual(LoginThrottle.pairWaitMs(pair, LoginThrottle.FORGET_AFTER_MS), 0)
    assert.strictEqual(LoginThrottle.pairAfterFailure(pair, LoginThrottle.FORGET_AFTER_MS).failures, 1)
  })
})
