/**
 * The claim loop (DeliveryQueue `claim`, one round of libs/domain/src/
 * FairShare.ts in one statement; docs/decisions.md "Fair delivery"): claims
 * due deliveries for the room the slots leave and hands them to the slots.
 *
 * - Room: `capacity` (the slots plus as many claimed ahead, so a slot that
 *   frees is taken at once and a claim's round trip overlaps the attempts;
 *   docs/performance.md "Webhook dispatcher") less what is held. With work
 *   in hand a claim gathers: it waits until half the claim-ahead is free, or
 *   CLAIM_GATHER_MS after the last claim, whichever comes first (a claim
 *   per delivery would cost a statement per delivery under load; the time
 *   bound keeps slots that hanging receivers hold from holding back the
 *   rest). Idle, it claims at once.
 * - The share: the schools with due work, those this dispatcher holds
 *   deliveries of, and those it claimed for within the last `activeMs`
 *   count as active (a school whose events come one at a time is active
 *   between them, so a flood cannot take its share in the gaps); the
 *   rotation goes on after the school the last round served last. After a
 *   round, a school holding more than the share of the schools now active
 *   has its waiting deliveries given back down to it (Slots `shed`), and
 *   the loop claims again for the room that made.
 * - Wakes: deliveries made (fan-out), attempts recorded, the next pending
 *   delivery falling due (asked only when not gathering), the end of a
 *   gathering, and POLL at the latest.
 *
 * A round that claimed something is the span `Dispatcher.claim`, linked to
 * the spans that wrote the claimed deliveries' events (docs/operations.md
 * "Traces").
 */
import type { SqlError } from "effect/sql"
import * as Effect from "effect/Effect"
import * as FairShare from "@school/domain/FairShare"
import type { Claimed, DeliveryQueue, EndedLease } from "@school/persistence/DeliveryQueue"
import * as Tracing from "@school/runtime/Tracing"
import type { Outage } from "./Outage.ts"
import type { Signal } from "@school/runtime/Signal"
import type { Slots } from "./Slots.ts"

/** Deliveries claimed per statement, at most. */
const CLAIM_BATCH = 100
/** How long a claim may wait for more room while attempts are in flight. */
const CLAIM_GATHER_MS = 20
/** How far past a due time the loop wakes for it. */
const DUE_MARGIN_MS = 3
/** Claim rounds in one pass, at most (the next pass follows at once when woken). */
const MAX_ROUNDS = 16

export interface ClaimerOptions {
  readonly queue: DeliveryQueue["Service"]
  readonly outage: Outage
  readonly slots: Slots
  /** Wakes the loop. */
  readonly wakeups: Signal
  /** DISPATCHER_CONCURRENCY. */
  readonly concurrency: number
  readonly perSubscription: number
  readonly leaseMs: number
  readonly pollMs: number
  /** How long a school counts as active after a claim for it (1 s). */
  readonly activeMs: number
  /** This dispatcher's leases whose attempts ended and wait for their record (Recorder `finished`). */
  readonly finished: Effect.Effect<ReadonlyArray<EndedLease>>
}

/** The school the round served last: the last at the highest level, in rotation order from `after`. */
export const servedLast = (claimed: ReadonlyArray<Claimed>, after: number): number => {
  let last: Claimed | undefined
  for (const row of claimed) {
    if (last === undefined || row.level > last.level) {
      last = row
      continue
    }
    if (row.level < last.level) continue
    const [ra, rb] = [row.school_id <= after ? 1 : 0, last.school_id <= after ? 1 : 0]
    if (ra > rb || (ra === rb && row.school_id > last.school_id)) last = row
  }
  return last?.school_id ?? after
}

export const run = (options: ClaimerOptions) =>
  Effect.gen(function*() {
    const { outage, queue, slots } = options
    const capacity = options.concurrency * 2
    const reserve = FairShare.reserveOf(options.concurrency)
    const claimAtLeast = Math.max(1, Math.floor(options.concurrency / 2))
    /** When each school was last claimed for (forgotten after `activeMs`). */
    const seen = new Map<number, number>()
    let after = 0
    let lastClaimAt = 0

    const activeSchools = (now: number): Array<number> => {
      const active: Array<number> = []
      for (const [school, at] of seen) {
        if (now - at > options.activeMs) seen.delete(school)
        else active.push(school)
      }
      return active
    }

    /**
     * Claims while rounds come back full, or shed made room (at most
     * MAX_ROUNDS rounds a pass); whether it put a claim off to gather.
     */
    const claimAll = (round: number): Effect.Effect<boolean, SqlError.SqlError> => Effect.gen(function*() {
      const holding = yield* slots.holding
      const room = capacity - holding.total
      if (room <= 0) return false
      const now = Date.now()
      if (holding.total > 0 && room < claimAtLeast && now - lastClaimAt < CLAIM_GATHER_MS) return true
      lastClaimAt = now
      const limit = Math.min(room, CLAIM_BATCH)
      const claimed = yield* queue.claim({
        limit,
        perSubscription: options.perSubscription,
        leaseMs: options.leaseMs,
        capacity,
        reserve,
        active: [...new Set([...activeSchools(now), ...holding.bySchool.map((h) => h.school)])],
        holding: holding.bySchool,
        after,
        finished: yield* options.finished
      }).pipe(
        Tracing.workAfter("Dispatcher.claim", {
          worth: (rows) => rows.length > 0,
          attributes: (rows) => ({ "dispatcher.claimed": rows.length }),
          links: (rows) => Tracing.linksTo(rows.flatMap((row) => row.traceparent === null ? [] : [row.traceparent]))
        }),
        // A stop waits for a claimed batch to be handed over: no lease is left unused.
        Effect.tap((rows) => slots.hand(rows)),
        Effect.uninterruptible
      )
      for (const row of claimed) seen.set(row.school_id, now)
      after = servedLast(claimed, after)
      // More schools active than when the others claimed: what they hold past the new share goes back.
      const active = new Set([...seen.keys(), ...holding.bySchool.map((h) => h.school)]).size
      yield* slots.activeSchools(active)
      // The share the claim statement applies (the same capacity and reserve), so what it gives is never shed.
      const shed = yield* Effect.uninterruptible(slots.shed(FairShare.shareOf(capacity, active, reserve)))
      return (claimed.length === limit || shed > 0) && round < MAX_ROUNDS ? yield* claimAll(round + 1) : false
    })

    const pass = Effect.gen(function*() {
      const gathering = yield* claimAll(1)
      yield* outage.answered
      // Gathering, the loop wakes within CLAIM_GATHER_MS anyway: no round trip to learn whether a waiting
      // delivery falls due sooner (a retry or a postponed attempt then waits that much at most).
      if (gathering) return CLAIM_GATHER_MS
      const due = yield* queue.nextDue(options.pollMs)
      // A timer may fire a millisecond or two early (Node's loop time is cached): a wake-up for a due time aims
      // a little past it, or the claim would find the delivery not yet due and the next chance be the poll.
      const untilDue = due === null ? options.pollMs : Math.ceil(due) + DUE_MARGIN_MS
      return Math.max(5, Math.min(options.pollMs, untilDue))
    }).pipe(
      Effect.catch((error) => Effect.as(outage.failed("claim")(error), options.pollMs)),
      Effect.catchDefect((defect) =>
        Effect.as(
          Effect.logError("dispatcher: a pass failed unexpectedly; going on", { step: "claim", defect: String(defect) }),
          options.pollMs
        )
      )
    )

    return yield* Effect.forever(Effect.flatMap(pass, options.wakeups.sleep))
  })
