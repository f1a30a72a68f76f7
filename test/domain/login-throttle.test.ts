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
  /** A new attempt (with the right or a wrong password), or the end of the address's running check. */
  kind: Schema.Literals(["right", "wrong", "finish"]),
  /** Milliseconds since the previous step. */
  elapsed: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 30_000 }))
})
const Steps = Schema.Array(Step).check(Schema.isMaxLength(300))

interface Queued {
  readonly email: number
  readonly right: boolean
}

describe("LoginThrottle (pure rule)", () => {
  const { burst, interval } = LoginThrottle.ADDRESS_BUDGET

  /**
   * The model of SignInGuard: the attempts of one address take turns. An
   * attempt arrives and waits in its address's queue; when its turn comes
   * the rule decides (refused: counted against the address; admitted: its
   * check runs until a `finish` step, then it counts if it was wrong).
   */
  it.prop(
    "for any interleaving: every right password from an address that is not failing is admitted; no address guesses past its budget",
    { steps: Steps },
    ({ steps }) => {
      let now = 1_000_000
      const addresses = new Map<number, LoginThrottle.AddressState>()
      const pairs = new Map<string, LoginThrottle.PairState>()
      const queues = new Map<number, Array<Queued>>()
      const running = new Map<number, Queued>()
      const guesses = new Map<number, Array<number>>()

      /** Starts the next attempts of the address until one is admitted (refusals end at once). */
      const nextTurn = (address: number) => {
        const queue = queues.get(address) ?? []
        while (!running.has(address) && queue.length > 0) {
          const turn = queue.shift()!
          const state = addresses.get(address) ?? 0
          const key = `${turn.email} ${address}`
          const pair = pairs.get(key)
          const wait = LoginThrottle.waitMs({ pair, address: state, nowMs: now })
          const notFailing = LoginThrottle.isIdle(state, now) && LoginThrottle.pairWaitMs(pair, now) === 0
          if (turn.right && notFailing) assert.strictEqual(wait, 0, "a right password from an address that is not failing waits")
          if (wait > 0) {
            // A refusal counts against the address.
            addresses.set(address, LoginThrottle.addressAfterFailure(state, now))
            continue
          }
          if (!turn.right) guesses.set(address, [...(guesses.get(address) ?? []), now])
          running.set(address, turn)
        }
      }

      for (const step of steps) {
        now += step.elapsed
        if (step.kind === "finish") {
          const done = running.get(step.address)
          if (done === undefined) continue
          running.delete(step.address)
          const key = `${done.email} ${step.address}`
          if (done.right) pairs.delete(key)
          else {
            pairs.set(key, LoginThrottle.pairAfterFailure(pairs.get(key), now))
            addresses.set(step.address, LoginThrottle.addressAfterFailure(addresses.get(step.address) ?? 0, now))
          }
        } else {
          queues.set(step.address, [...(queues.get(step.address) ?? []), { email: step.email, right: step.kind === "right" }])
        }
        nextTurn(step.address)
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

  it("a queue of right passwords from one address is admitted whole, however long", () => {
    // Turns: each reads the state the one before it left; a right password leaves no failure.
    let address: LoginThrottle.AddressState = 0
    for (let i = 0; i < 1_000; i++) {
      assert.strictEqual(LoginThrottle.waitMs({ pair: undefined, address, nowMs: 5_000_000 }), 0)
    }
    // While wrong guesses in a row spend the budget: the 31st waits.
    for (let i = 0; i < burst; i++) {
      assert.strictEqual(LoginThrottle.addressWaitMs(address, 5_000_000), 0)
      address = LoginThrottle.addressAfterFailure(address, 5_000_000)
    }
    assert.strictEqual(LoginThrottle.addressWaitMs(address, 5_000_000), interval)
  })

  it("failures from one address never hold back another", () => {
    const now = 10_000_000
    let attacker: LoginThrottle.AddressState = 0
    let pair: LoginThrottle.PairState | undefined
    for (let i = 0; i < 100; i++) {
      attacker = LoginThrottle.addressAfterFailure(attacker, now)
      pair = LoginThrottle.pairAfterFailure(pair, now)
    }
    assert.isAbove(LoginThrottle.waitMs({ pair, address: attacker, nowMs: now }), 0)
    assert.strictEqual(LoginThrottle.waitMs({ pair: undefined, address: 0, nowMs: now }), 0)
  })

  it("a pair's failures are forgotten after FORGET_AFTER_MS", () => {
    const pair = { failures: 50, lastFailedAtMs: 0 }
    assert.isAbove(LoginThrottle.pairWaitMs(pair, 1), 0)
    assert.strictEqual(LoginThrottle.pairWaitMs(pair, LoginThrottle.FORGET_AFTER_MS), 0)
    assert.strictEqual(LoginThrottle.pairAfterFailure(pair, LoginThrottle.FORGET_AFTER_MS).failures, 1)
  })
})
