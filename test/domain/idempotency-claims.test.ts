/**
 * Property tests of what a repeat does with a record for its key, now that
 * the database says whether the record's attempt still runs
 * (`Idempotency.decide`; docs/decisions.md
 * "Idempotency"): an attempt whose session has ended cannot commit anything
 * any more, and its 5xx was never stored, so its claim is taken over at once
 * instead of holding the key for 60 s; a running attempt, or one the
 * database cannot speak for, keeps the rules it had (wait up to 60 s, then
 * take over); a completed record is replayed for 24 hours whatever its
 * owner. Policies are generated too, so no rule leans on the defaults.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { Idempotency } from "@school/domain"

const DAY = 24 * 60 * 60 * 1000
const Age = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 * DAY }))
const Owner = Schema.Literals(["running", "gone", "unknown"])
const Policy = Schema.Struct({
  staleAfterMs: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: DAY })),
  retentionMs: Schema.Int.check(Schema.isBetween({ minimum: DAY, maximum: 2 * DAY }))
})

/** How far a decision lets the repeat go: replaying or waiting keeps the first attempt's claim, a take-over ends it. */
const rank = { replay: 0, wait: 0, "take-over": 1 } as const

describe("a repeat and the attempt behind the record it finds (docs/decisions.md \"Idempotency\")", () => {
  it.prop("an attempt whose session has ended is taken over at any age, under any policy: never waited for", [
    Age,
    Policy
  ], ([ageMs, policy]) => {
    assert.strictEqual(Idempotency.decide({ completed: false, ageMs, owner: "gone" }, policy), "take-over")
  })

  it.prop("a running attempt, or one without a lock to ask about, is waited for up to the stale limit, then taken over", [
    Age,
    Policy,
    Schema.Literals(["running", "unknown"])
  ], ([ageMs, policy, owner]) => {
    assert.strictEqual(
      Idempotency.decide({ completed: false, ageMs, owner }, policy),
      ageMs > policy.staleAfterMs ? "take-over" : "wait"
    )
  })

  it.prop("a completed record is replayed within the retention and runs again after it, whatever its owner", [
    Age,
    Policy,
    Owner
  ], ([ageMs, policy, owner]) => {
    assert.strictEqual(
      Idempotency.decide({ completed: true, ageMs, owner }, policy),
      ageMs > policy.retentionMs ? "take-over" : "replay"
    )
  })

  it.prop("a claim without an owner is judged as one whose owner is unknown (records written before the lock)", [
    Schema.Boolean,
    Age,
    Policy
  ], ([completed, ageMs, policy]) => {
    assert.strictEqual(
      Idempotency.decide({ completed, ageMs }, policy),
      Idempotency.decide({ completed, ageMs, owner: "unknown" }, policy)
    )
  })

  it.prop("knowing the attempt ended never makes a repeat wait longer; knowing it runs never ends it sooner", [
    Schema.Boolean,
    Age,
    Policy
  ], ([completed, ageMs, policy]) => {
    const reach = (owner: Idempotency.Owner) => rank[Idempotency.decide({ completed, ageMs, owner }, policy)]
    assert.isAtLeast(reach("gone"), reach("unknown"))
    assert.strictEqual(reach("running"), reach("unknown"))
  })

  it.prop("never replays a record that is not completed, never waits on a completed one", [
    Schema.Boolean,
    Age,
    Policy,
    Owner
  ], ([completed, ageMs, policy, owner]) => {
    assert.notStrictEqual(Idempotency.decide({ completed, ageMs, owner }, policy), completed ? "wait" : "replay")
  })

  it("the issue's case: a claim a few seconds old whose attempt died with the database runs again at once", () => {
    assert.strictEqual(Idempotency.decide({ completed: false, ageMs: 5_000, owner: "gone" }), "take-over")
    assert.strictEqual(Idempotency.decide({ completed: false, ageMs: 5_000, owner: "running" }), "wait")
    assert.strictEqual(Idempotency.decide({ completed: false, ageMs: 5_000 }), "wait")
  })
})
