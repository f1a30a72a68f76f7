/**
 * The fair share of a dispatcher's slots between schools
 * (libs/domain/src/FairShare.ts; docs/decisions.md "Fair delivery"), for any
 * backlog across schools and subscriptions and any room:
 *
 * - the per-subscription room holds, and no school passes its share;
 * - nothing is left idle: room unused means every school is at its share or
 *   out of candidates;
 * - max-min fair: while a school with an eligible candidate gets nothing
 *   more, no school is given a pick at a level above that school's next;
 * - inside a school, its subscriptions take turns and each goes by due time
 *   (a retry due at T before a first attempt created after T);
 * - nothing is starved: with the attempts ending between rounds and one
 *   pick per round, every school with due work is served within as many
 *   rounds as there are such schools;
 * - shareOf: alone, everything but the reserve; among n, at least an even
 *   part.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as FairShare from "@school/domain/FairShare"

const Small = (max: number) => Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: max }))
const SubscriptionInput = Schema.Struct({ room: Small(6), due: Schema.Array(Small(1_000)).check(Schema.isMaxLength(12)) })
const SchoolInput = Schema.Struct({
  holds: Small(8),
  subscriptions: Schema.Array(SubscriptionInput).check(Schema.isMinLength(1), Schema.isMaxLength(4))
})
const Schools = Schema.Array(SchoolInput).check(Schema.isMinLength(1), Schema.isMaxLength(8))

/** The inputs as a round: ids from positions, each subscription's due times sorted, candidate ids unique. */
const roundOf = (
  schools: ReadonlyArray<typeof SchoolInput.Type>,
  room: number,
  share: number,
  after: number
): FairShare.Round => {
  let next = 1
  return {
    room,
    share,
    after,
    schools: schools.map((school, s) => ({
      id: s + 1,
      holds: school.holds,
      subscriptions: school.subscriptions.map((subscription, k) => ({
        id: (s + 1) * 100 + k,
        room: subscription.room,
        due: [...subscription.due].sort((a, b) => a - b).map((dueAt) => ({ id: next++, dueAt }))
      }))
    }))
  }
}

const countBy = <A>(items: ReadonlyArray<A>, key: (a: A) => number): Map<number, number> => {
  const counts = new Map<number, number>()
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1)
  return counts
}

describe("FairShare", () => {
  it.prop(
    "caps, share, no idle room, max-min fairness, turns and due order",
    { schools: Schools, room: Small(40), share: Small(12), after: Small(9) },
    ({ after, room, schools, share }) => {
      const round = roundOf(schools, room, Math.max(1, share), after)
      const picks = FairShare.allocate(round)
      assert.isAtMost(picks.length, round.room)
      assert.strictEqual(new Set(picks.map((p) => p.id)).size, picks.length, "no candidate twice")

      const bySubscription = countBy(picks, (p) => p.subscription)
      const bySchool = countBy(picks, (p) => p.school)
      for (const school of round.schools) {
        for (const subscription of school.subscriptions) {
          assert.isAtMost(bySubscription.get(subscription.id) ?? 0, subscription.room, "the per-subscription cap")
        }
        const got = bySchool.get(school.id) ?? 0
        if (got > 0) assert.isAtMost(school.holds + got, round.share, "no school past its share")
      }

      // What each school could still take after the round, and at which level.
      const order = new Map(round.schools.map((school) => [school.id, FairShare.schoolOrder(school)]))
      const nextLevel = (school: FairShare.SchoolBacklog): number | undefined => {
        const got = bySchool.get(school.id) ?? 0
        const left = (order.get(school.id)?.length ?? 0) - got
        const level = school.holds + got + 1
        return left > 0 && level <= round.share ? level : undefined
      }
      if (picks.length < round.room) {
        for (const school of round.schools) assert.isUndefined(nextLevel(school), "room left idle while a school could take it")
      }
      const highest = Math.max(0, ...picks.map((p) => p.level))
      for (const school of round.schools) {
        const level = nextLevel(school)
        if (level !== undefined) assert.isAtMost(highest, level, "a pick above the level a waiting school would have had")
      }

      // Inside a school: the picks are its own order's first ones (turns, then due time).
      for (const school of round.schools) {
        const mine = picks.filter((p) => p.school === school.id).map((p) => p.id)
        const expected = (order.get(school.id) ?? []).slice(0, mine.length).map((entry) => entry.candidate.id)
        assert.deepStrictEqual([...mine].sort((a, b) => a - b), [...expected].sort((a, b) => a - b))
        const subscriptions = school.subscriptions
        for (const subscription of subscriptions) {
          const taken = mine.filter((id) => subscription.due.some((c) => c.id === id))
          assert.deepStrictEqual(
            taken.sort((a, b) => a - b),
            subscription.due.slice(0, taken.length).map((c) => c.id).sort((a, b) => a - b),
            "a subscription's picks are its earliest due"
          )
        }
      }
    },
    { arbitrary: { runs: 300 } }
  )

  it.prop(
    "nothing is starved: one pick a round, attempts ending between rounds, every school served within n rounds",
    { schools: Schools, after: Small(9) },
    ({ after, schools }) => {
      // Endless backlogs: every subscription has room and due work in every round.
      const busy = schools.map((school) => ({
        holds: 0,
        subscriptions: school.subscriptions.map(() => ({ room: 1, due: [0, 1, 2] }))
      }))
      const n = busy.length
      let pointer = after
      const served = new Map<number, number>()
      for (let round = 0; round < 3 * n; round++) {
        const [pick] = FairShare.allocate(roundOf(busy, 1, 1, pointer))
        assert.isDefined(pick)
        if (pick === undefined) return
        const last = served.get(pick.school)
        if (last !== undefined) assert.strictEqual(round - last, n, "served again only after every other school")
        served.set(pick.school, round)
        pointer = pick.school
      }
      assert.strictEqual(served.size, n)
    }
  )

  it.prop("shareOf: alone, all but the reserve; among n, at least an even part and never the reserve", {
    capacity: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000 })),
    active: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 500 }))
  }, ({ active, capacity }) => {
    const reserve = FairShare.reserveOf(capacity)
    assert.strictEqual(reserve, capacity === 1 ? 0 : Math.max(1, Math.ceil(capacity / 8)))
    const share = FairShare.shareOf(capacity, active)
    assert.isAtLeast(share, 1)
    if (capacity > reserve) assert.isAtMost(share, capacity - reserve)
    if (active <= 1) assert.strictEqual(share, Math.max(1, capacity - reserve))
    else assert.strictEqual(share, Math.max(1, Math.min(capacity - reserve, Math.ceil(capacity / active))))
    // With a reserve given (the claim's: the slots', not the claim-ahead's), the same rule over it.
    assert.strictEqual(FairShare.shareOf(capacity, active, 0), Math.max(1, Math.min(capacity, Math.ceil(capacity / Math.max(1, active)))))
  })

  it("a retry due at T goes before the first attempts created after T; subscriptions take turns", () => {
    const picks = FairShare.allocate({
      room: 4,
      share: 10,
      after: 0,
      schools: [{
        id: 1,
        holds: 0,
        subscriptions: [
          { id: 10, room: 4, due: [{ id: 1, dueAt: 100 }, { id: 2, dueAt: 101 }, { id: 3, dueAt: 102 }] },
          // The retry, due at 50: before every first attempt.
          { id: 11, room: 4, due: [{ id: 4, dueAt: 50 }, { id: 5, dueAt: 200 }] }
        ]
      }]
    })
    assert.deepStrictEqual(picks.map((p) => p.id), [4, 1, 2, 5])
  })

  it("a flooding school holding most slots: the next slot goes to the school that holds none", () => {
    const picks = FairShare.allocate({
      room: 1,
      share: 30,
      after: 0,
      schools: [
        { id: 1, holds: 29, subscriptions: [{ id: 10, room: 4, due: [{ id: 1, dueAt: 0 }] }] },
        { id: 2, holds: 0, subscriptions: [{ id: 20, room: 4, due: [{ id: 2, dueAt: 1_000 }] }] }
      ]
    })
    assert.deepStrictEqual(picks.map((p) => p.school), [2])
  })
})
