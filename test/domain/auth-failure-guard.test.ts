/**
 * The budget of failed authentications per client address
 * (`@school/domain/AuthFailures`, docs/decisions.md "Rate limits"), with
 * generated sequences of requests: what it lets reach the database is
 * bounded (a burst, then one per interval, in every interval of time), a
 * wait is exact and short, a slow failing client is never blocked; and how
 * addresses are grouped into clients (IPv4 as is, IPv6 by /64).
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { AuthFailures } from "@school/domain"

const runs = { arbitrary: { runs: 500 } }

const Burst = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 12 }))
/** µs per refill: 1 µs to 5 s. */
const Interval = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 5_000_000 }))
/** µs between two requests: often none (a flood), sometimes more than an interval. */
const Gap = Schema.Union([
  Schema.Literal(0),
  Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000 })),
  Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10_000_000 }))
])
const Request = Schema.Struct({ gap: Gap, fails: Schema.Boolean })
const Requests = Schema.Array(Request).check(Schema.isMaxLength(200))
/** A realistic origin, µs since the epoch. */
const T0 = 1_800_000_000_000_000

interface Step {
  readonly at: number
  readonly wait: number
  /** The request went to the database and failed there. */
  readonly failed: boolean
}

/** One client's requests, one at a time: checked, looked up when not blocked, a failure recorded. */
const run = (budget: AuthFailures.Budget, requests: ReadonlyArray<typeof Request.Type>) => {
  let state = AuthFailures.initial
  let at = T0
  const steps: Array<Step & { readonly before: AuthFailures.State }> = []
  for (const { gap, fails } of requests) {
    at += gap
    const before = state
    const wait = AuthFailures.wait(state, at, budget)
    const failed = wait === 0 && fails
    if (failed) state = AuthFailures.recordFailure(state, at, budget)
    steps.push({ at, wait, failed, before })
  }
  return steps
}

describe("AuthFailures (pure rule)", () => {
  it.prop(
    "no interval of length L lets more than burst + floor(L / interval) failing lookups through",
    { burst: Burst, interval: Interval, requests: Requests },
    ({ burst, interval, requests }) => {
      const times = run({ burst, interval }, requests).filter((step) => step.failed).map((step) => step.at)
      for (let i = 0; i < times.length; i++) {
        for (let j = i; j < times.length; j++) {
          const length = times[j]! - times[i]!
          assert.isAtMost(j - i + 1, burst + Math.floor(length / interval), `failures ${i}..${j} within ${length} µs`)
        }
      }
    },
    runs
  )

  it.prop(
    "a wait is exact (one µs earlier is still blocked) and at most one interval",
    { burst: Burst, interval: Interval, requests: Requests },
    ({ burst, interval, requests }) => {
      const budget = { burst, interval }
      for (const { at, before, wait } of run(budget, requests)) {
        if (wait === 0) continue
        assert.isAtMost(wait, interval)
        assert.strictEqual(AuthFailures.wait(before, at + wait, budget), 0)
        assert.isAbove(AuthFailures.wait(before, at + wait - 1, budget), 0)
      }
    },
    runs
  )

  it.prop(
    "a client whose requests are blocked or succeed is never blocked for longer; one failing once per interval never is",
    { burst: Burst, interval: Interval, requests: Requests },
    ({ burst, interval, requests }) => {
      const budget = { burst, interval }
      // Failures spaced by at least an interval: never blocked.
      let state = AuthFailures.initial
      let at = T0
      for (const { gap } of requests) {
        at += interval + gap
        assert.strictEqual(AuthFailures.wait(state, at, budget), 0)
        state = AuthFailures.recordFailure(state, at, budget)
      }
      // Blocked requests and successes change nothing: the state only moves on a failure.
      const steps = run(budget, requests)
      for (let i = 1; i < steps.length; i++) {
        if (!steps[i - 1]!.failed) assert.strictEqual(steps[i]!.before, steps[i - 1]!.before)
      }
    },
    runs
  )

  it.prop(
    "from idle, exactly burst failures at one instant, then blocked for one interval; idle again once the state is not ahead",
    { burst: Burst, interval: Interval },
    ({ burst, interval }) => {
      const budget = { burst, interval }
      let state = AuthFailures.initial
      for (let i = 0; i < burst; i++) {
        assert.strictEqual(AuthFailures.wait(state, T0, budget), 0)
        state = AuthFailures.recordFailure(state, T0, budget)
      }
      assert.strictEqual(AuthFailures.wait(state, T0, budget), interval)
      assert.isFalse(AuthFailures.isIdle(state, T0 + burst * interval - 1))
      assert.isTrue(AuthFailures.isIdle(state, T0 + burst * interval))
    },
    runs
  )
})

const Octet = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 255 }))
const Hextet = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0xffff }))
const hex = (words: ReadonlyArray<number>) => words.map((word) => word.toString(16)).join(":")

describe("AuthFailures.clientOf (who shares a budget)", () => {
  it.prop(
    "an IPv4 address is its own client, written or mapped into IPv6",
    { octets: Schema.Tuple([Octet, Octet, Octet, Octet]) },
    ({ octets }) => {
      const address = octets.join(".")
      assert.strictEqual(AuthFailures.clientOf(address), address)
      assert.strictEqual(AuthFailures.clientOf(`::ffff:${address}`), address)
      assert.strictEqual(AuthFailures.clientOf(`::FFFF:${address}`), address)
    },
    runs
  )

  it.prop(
    "IPv6 addresses share a client exactly when their first 64 bits are equal, however they are written",
    {
      a: Schema.Tuple([Hextet, Hextet, Hextet, Hextet, Hextet, Hextet, Hextet, Hextet]),
      b: Schema.Tuple([Hextet, Hextet, Hextet, Hextet, Hextet, Hextet, Hextet, Hextet]),
      samePrefix: Schema.Boolean
    },
    ({ a, b: drawn, samePrefix }) => {
      // Keep clear of ::ffff:0:0/96 (IPv4-mapped), which is the IPv4 client.
      const first = [a[0] | 0x2000, ...a.slice(1)]
      const second = samePrefix ? [...first.slice(0, 4), ...drawn.slice(4)] : [drawn[0] | 0x2000, ...drawn.slice(1)]
      const same = first.slice(0, 4).join() === second.slice(0, 4).join()
      assert.strictEqual(AuthFailures.clientOf(hex(first)) === AuthFailures.clientOf(hex(second)), same)
      // Upper case, leading zeros and `::` do not make another client.
      const padded = first.map((word) => word.toString(16).padStart(4, "0").toUpperCase()).join(":")
      assert.strictEqual(AuthFailures.clientOf(padded), AuthFailures.clientOf(hex(first)))
      const compressed = `${hex(first.slice(0, 4))}::${hex(second.slice(7))}`
      assert.strictEqual(AuthFailures.clientOf(compressed), AuthFailures.clientOf(hex([...first.slice(0, 4), 0, 0, 0, 0])))
    },
    runs
  )

  it("examples: the /64, a zone, and what is not an address", () => {
    assert.strictEqual(AuthFailures.clientOf("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64")
    assert.strictEqual(AuthFailures.clientOf("2001:db8:1:2::"), "2001:db8:1:2::/64")
    assert.strictEqual(AuthFailures.clientOf("2001:db8::1"), "2001:db8:0:0::/64")
    assert.strictEqual(AuthFailures.clientOf("::1"), "0:0:0:0::/64")
    assert.strictEqual(AuthFailures.clientOf("fe80::1%eth0"), "fe80:0:0:0::/64")
    assert.strictEqual(AuthFailures.clientOf("::ffff:10.0.0.1"), "10.0.0.1")
    assert.strictEqual(AuthFailures.clientOf(undefined), "unknown")
    assert.strictEqual(AuthFailures.clientOf("not an address"), "unknown")
  })
})
