/**
 * The dispatcher's slots (DISPATCHER_CONCURRENCY of them; docs/decisions.md
 * "Fair delivery"): claimed deliveries wait here for a slot, and a slot that
 * frees goes to the school that has the fewest attempts in flight, rotating
 * among equals (libs/domain/src/FairShare.ts `allocate` with a room of one).
 * No school starts an attempt past its share of the slots among the schools
 * active now (`activeSchools`, from the claim loop), and never into the
 * reserve, so a school that arrives while another's receivers hang every
 * other slot starts at once instead of waiting for their time-out, and gets
 * its share as the hanging attempts end.
 *
 * A `Semaphore` counts the free slots; one fiber takes a permit, picks the
 * next delivery by the rule (waiting until one is eligible), and starts its
 * attempt in a `FiberSet`; the attempt gives the permit back when it ends.
 * A delivery that has waited longer than `maxWaitMs` is given back instead
 * of started (its lease would no longer cover the time-out), and so is
 * everything waiting when the dispatcher stops. Inside a school, its
 * subscriptions share its part the same way (`nextOf`). When more schools become
 * active, the claim loop has the waiting deliveries of a school past its new
 * share given back at once (`shed`), so a school that held the claim-ahead
 * alone does not keep the others' room for a lease's length.
 */
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Semaphore from "effect/Semaphore"
import * as FairShare from "@school/domain/FairShare"
import type { Claimed } from "@school/persistence/DeliveryQueue"
import * as Signal from "@school/runtime/Signal"

export interface SlotsOptions {
  readonly slots: number
  /** A delivery waiting longer than this is given back when its turn comes. */
  readonly maxWaitMs: number
  /** One attempt (never fails). */
  readonly send: (delivery: Claimed) => Effect.Effect<void>
  /** Gives leases back. */
  readonly giveBack: (deliveries: ReadonlyArray<Claimed>) => Effect.Effect<void>
}

export interface Holding {
  /** Deliveries held in all: waiting and in flight. */
  readonly total: number
  /** Per school. */
  readonly bySchool: ReadonlyArray<{ readonly school: number; readonly holds: number }>
}

export interface Slots {
  /** Claimed deliveries, to start when their turn comes. */
  readonly hand: (claimed: ReadonlyArray<Claimed>) => Effect.Effect<void>
  /** What this dispatcher holds, per school. */
  readonly holding: Effect.Effect<Holding>
  /** Attempts in flight. */
  readonly inFlight: Effect.Effect<number>
  /**
   * Gives back the waiting deliveries of every school that holds more than
   * `share`, newest first, down to its share (what is in flight stays):
   * how many went back.
   */
  readonly shed: (share: number) => Effect.Effect<number>
  /**
   * How many schools are active now: no school starts an attempt past its
   * share of the slots (FairShare.shareOf: alone, every slot but the
   * reserve).
   */
  readonly activeSchools: (count: number) => Effect.Effect<void>
  /** Starts nothing more; gives back what waits; waits for the attempts in flight. */
  readonly stop: Effect.Effect<void>
}

interface Waiting {
  readonly delivery: Claimed
  readonly handedAt: number
}

/** The per-school state: what waits (in claim order), how many are in flight, and per subscription. */
interface School {
  readonly waiting: Array<Waiting>
  inFlight: number
  /** Attempts in flight per subscription. */
  readonly bySubscription: Map<number, number>
  /** When a delivery of each subscription was last handed over. */
  readonly seen: Map<number, number>
}

/** How long a subscription counts as active inside its school after a delivery of it was handed over. */
const SUBSCRIPTION_ACTIVE_MS = 1_000

export const make = (options: SlotsOptions) =>
  Effect.gen(function*() {
    const free = yield* Semaphore.make(options.slots)
    const senders = yield* FiberSet.make<void, never>()
    const changed = yield* Signal.make
    const schools = new Map<number, School>()
    let after = 0
    let stopping = false
    /** The most one school may have in flight now. */
    let perSchool = FairShare.shareOf(options.slots, 1)

    const schoolOf = (id: number): School => {
      const found = schools.get(id)
      if (found !== undefined) return found
      const made: School = { waiting: [], inFlight: 0, bySubscription: new Map(), seen: new Map() }
      schools.set(id, made)
      return made
    }
    /** A school with nothing waiting and nothing in flight is forgotten (the map grows with nothing else). */
    const forgetIfIdle = (id: number, school: School) => {
      if (school.waiting.length === 0 && school.inFlight === 0) schools.delete(id)
    }

    /** Takes the deliveries that waited too long out of the queue. */
    const takeStale = (now: number): Array<Claimed> => {
      const stale: Array<Claimed> = []
      for (const [id, school] of schools) {
        for (let i = school.waiting.length - 1; i >= 0; i--) {
          const waiting = school.waiting[i]
          if (waiting !== undefined && now - waiting.handedAt > options.maxWaitMs) {
            stale.push(waiting.delivery)
            school.waiting.splice(i, 1)
          }
        }
        forgetIfIdle(id, school)
      }
      return stale
    }

    /**
     * Inside a school, its subscriptions share its part the same way: no
     * subscription starts past ⌈school's share / its active subscriptions⌉
     * (those with work here, or handed a delivery within the last second),
     * and the one with the fewest in flight goes first. So a school's
     * hanging receivers cannot take every slot it has from its healthy ones.
     * The school's next delivery by that rule: its position in the queue.
     */
    const nextOf = (school: School, now: number): number | undefined => {
      const active = new Set<number>()
      for (const [subscription, at] of school.seen) {
        if (now - at > SUBSCRIPTION_ACTIVE_MS) school.seen.delete(subscription)
        else active.add(subscription)
      }
      for (const [subscription, n] of school.bySubscription) if (n > 0) active.add(subscription)
      for (const waiting of school.waiting) active.add(waiting.delivery.subscription_id)
      const subscriptionShare = Math.max(1, Math.ceil(perSchool / Math.max(1, active.size)))
      let best: { readonly position: number; readonly inFlight: number } | undefined
      school.waiting.forEach((waiting, position) => {
        const inFlight = school.bySubscription.get(waiting.delivery.subscription_id) ?? 0
        if (inFlight >= subscriptionShare) return
        if (best === undefined || inFlight < best.inFlight) best = { position, inFlight }
      })
      return best?.position
    }

    /** The next delivery by the rule, out of its queue; undefined when none is eligible. */
    const pick = (now: number): Claimed | undefined => {
      const backlog: Array<FairShare.SchoolBacklog> = []
      for (const [id, school] of schools) {
        if (school.waiting.length === 0 || school.inFlight >= perSchool) continue
        const position = nextOf(school, now)
        if (position === undefined) continue
        backlog.push({ id, holds: school.inFlight, subscriptions: [{ id, room: 1, due: [{ id: position, dueAt: 0 }] }] })
      }
      const [chosen] = FairShare.allocate({ room: 1, share: perSchool, after, schools: backlog })
      if (chosen === undefined) return undefined
      after = chosen.school
      const school = schoolOf(chosen.school)
      const [next] = school.waiting.splice(chosen.id, 1)
      if (next === undefined) return undefined
      school.inFlight++
      const subscription = next.delivery.subscription_id
      school.bySubscription.set(subscription, (school.bySubscription.get(subscription) ?? 0) + 1)
      return next.delivery
    }

    /** Waits until a delivery is eligible; gives back stale ones on the way. */
    const next: Effect.Effect<Claimed> = Effect.suspend(() => {
      const now = Date.now()
      const stale = takeStale(now)
      const chosen = stopping ? undefined : pick(now)
      const back = stale.length === 0 ? Effect.void : options.giveBack(stale)
      // Woken by a hand-over or an attempt's end; at the latest when a subscription's activity lapses.
      return chosen !== undefined
        ? Effect.as(back, chosen)
        : Effect.andThen(back, Effect.andThen(changed.sleep(SUBSCRIPTION_ACTIVE_MS), next))
    })

    const finished = (delivery: Claimed) =>
      Effect.suspend(() => {
        const school = schoolOf(delivery.school_id)
        school.inFlight--
        const left = (school.bySubscription.get(delivery.subscription_id) ?? 1) - 1
        if (left > 0) school.bySubscription.set(delivery.subscription_id, left)
        else school.bySubscription.delete(delivery.subscription_id)
        forgetIfIdle(delivery.school_id, school)
        return Effect.andThen(free.release(1), changed.wake)
      })

    // One fiber starts attempts: a free slot first, then the delivery whose turn it is.
    const starter = Effect.forever(
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          yield* restore(free.take(1))
          const delivery = yield* Effect.onInterrupt(restore(next), () => free.release(1))
          yield* FiberSet.run(senders, Effect.ensuring(options.send(delivery), finished(delivery)))
        })
      )
    )
    yield* Effect.forkScoped(starter)

    const holding = Effect.sync((): Holding => {
      let total = 0
      const bySchool: Array<{ school: number; holds: number }> = []
      for (const [school, state] of schools) {
        const holds = state.waiting.length + state.inFlight
        total += holds
        if (holds > 0) bySchool.push({ school, holds })
      }
      return { total, bySchool }
    })

    return {
      hand: (claimed) =>
        Effect.suspend(() => {
          if (stopping) return options.giveBack(claimed)
          const handedAt = Date.now()
          for (const delivery of claimed) {
            const school = schoolOf(delivery.school_id)
            school.waiting.push({ delivery, handedAt })
            school.seen.set(delivery.subscription_id, handedAt)
          }
          return changed.wake
        }),
      holding,
      inFlight: Effect.sync(() => {
        let n = 0
        for (const school of schools.values()) n += school.inFlight
        return n
      }),
      activeSchools: (count) =>
        Effect.suspend(() => {
          const next = FairShare.shareOf(options.slots, count)
          const raised = next > perSchool
          perSchool = next
          // A higher share may make a waiting delivery eligible.
          return raised ? changed.wake : Effect.void
        }),
      shed: (share) =>
        Effect.suspend(() => {
          const excess: Array<Claimed> = []
          for (const [id, school] of schools) {
            const over = Math.min(school.waiting.length, school.waiting.length + school.inFlight - share)
            if (over <= 0) continue
            excess.push(...school.waiting.splice(school.waiting.length - over, over).map((waiting) => waiting.delivery))
            forgetIfIdle(id, school)
          }
          return excess.length === 0 ? Effect.succeed(0) : Effect.as(options.giveBack(excess), excess.length)
        }),
      stop: Effect.suspend(() => {
        stopping = true
        const left: Array<Claimed> = []
        for (const [id, school] of schools) {
          left.push(...school.waiting.splice(0).map((waiting) => waiting.delivery))
          forgetIfIdle(id, school)
        }
        return Effect.andThen(options.giveBack(left), FiberSet.awaitEmpty(senders))
      })
    } satisfies Slots
  })
