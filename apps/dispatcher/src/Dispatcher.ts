/**
 * The delivery loop of the dispatcher (spec 6.2, 6.5, part 3;
 * docs/decisions.md "Webhooks"; docs/development.md "apps/dispatcher"). Its
 * SQL is libs/persistence/src/DeliveryQueue.ts; here is the order of things:
 *
 * 1. The fan-out, a loop of its own, wakes on the outbox's NOTIFY and at
 *    least every POLL_INTERVAL (1 s: the safety net for a missed
 *    notification or a lost listen connection), and turns new events into
 *    deliveries in batches (the next batch follows at once while more
 *    remain).
 * 2. The claim loop wakes when the fan-out made deliveries, when attempts
 *    were recorded, when the next pending delivery falls due, and at least
 *    every POLL_INTERVAL, and claims due deliveries for the free slots
 *    (DISPATCHER_CONCURRENCY in all, DISPATCHER_PER_SUBSCRIPTION per
 *    subscription, first attempts first; with attempts in flight, once half
 *    the slots are free), each leased for WEBHOOK_TIMEOUT + a
 *    margin.
 * 3. The claim of a first attempt builds the body (`timestamp` = now) and
 *    stores it before anything is sent; every attempt signs the stored bytes
 *    with its own `webhook-timestamp` and POSTs them
 *    (apps/dispatcher/src/Receiver.ts).
 * 4. The results are recorded in batches: the journal, the next attempt time
 *    from the retry plan (one `Schedule`, libs/domain/src/RetryPlan.ts), the
 *    subscription's transitions and notifications.
 *
 * Each attempt is counted in /metrics (apps/dispatcher/src/Metrics.ts) and
 * logged (docs/operations.md "Log lines"): a failed one at Info, a delivered
 * one at Debug.
 *
 * SIGTERM (the layer's scope closing): stop claiming, let the attempts in
 * flight finish (each is bounded by WEBHOOK_TIMEOUT), record them, exit.
 * The database away: every step logs once, the loop keeps trying each
 * second, `ready` is false until a step succeeds again.
 */
import type { SqlError } from "effect/sql"
import * as RetryPlan from "@school/domain/RetryPlan"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { type AttemptRecord, type Claimed, DeliveryQueue } from "@school/persistence/DeliveryQueue"
import type { SettingsShape } from "@school/runtime/Settings"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Metrics from "./Metrics.ts"
import * as Receiver from "./Receiver.ts"

export interface DispatcherOptions {
  readonly concurrency: number
  readonly perSubscription: number
  readonly timeout: Duration.Duration
  readonly retryDelays: ReadonlyArray<Duration.Duration>
  readonly allowInsecureUrls: boolean
  readonly secretKey: Option.Option<Uint8Array>
  readonly retention: Duration.Duration
  /** The safety-net poll (default 1 s). */
  readonly pollInterval?: Duration.Duration
  /** How often the purge runs (default 1 min). */
  readonly purgeInterval?: Duration.Duration
}

/** The dispatcher's options as the settings give them (docs/operations.md "Settings"). */
export const optionsFromSettings = (settings: SettingsShape): DispatcherOptions => ({
  concurrency: settings.dispatcherConcurrency,
  perSubscription: settings.dispatcherPerSubscription,
  timeout: settings.webhookTimeout,
  retryDelays: settings.webhookRetryDelays,
  allowInsecureUrls: settings.webhookAllowInsecureUrls,
  secretKey: settings.webhookSecretKey,
  retention: settings.deliveryRetention
})

/** Events fanned out per statement. */
const FAN_OUT_BATCH = 500
/** Deliveries claimed per statement, at most. */
const CLAIM_BATCH = 100
/** How long a claim may wait for more slots to free up while attempts are in flight (see claimAll). */
const CLAIM_GATHER_MS = 20
/** Attempts recorded per statement, at most. */
const RECORD_BATCH = 200
/** Deliveries purged per statement (small: the purge must not hold locks for long). */
const PURGE_BATCH = 500
/** docs/decisions.md "Webhooks": the journal's last deliveries per subscription stay whatever their age. */
const JOURNAL_KEEP = 50

/**
 * The lease of a claimed delivery: the time-out plus a margin for starting
 * the attempt and recording it after, so a live dispatcher
 * never loses a lease it is using and a dead one's work is taken over soon.
 */
export const leaseOf = (timeout: Duration.Duration): Duration.Duration => {
  const ms = Duration.toMillis(timeout)
  return Duration.millis(ms + Math.max(2_000, ms / 2))
}

export interface DispatcherShape {
  /** The database answered the last step of the loop. */
  readonly ready: Effect.Effect<boolean>
  /** Attempts in flight in this process. */
  readonly inFlight: Effect.Effect<number>
}

export class Dispatcher extends Context.Service<Dispatcher, DispatcherShape>()("school/dispatcher/Dispatcher") {
  /** The running loop; closing the layer's scope is the graceful stop. */
  static readonly layer = (options: DispatcherOptions): Layer.Layer<Dispatcher, never, DeliveryQueue> =>
    Layer.effect(Dispatcher, make(options))
}

/** An SQL error for the log. */
const describe = (error: SqlError.SqlError): string => error.message

const make = (options: DispatcherOptions) =>
  Effect.gen(function*() {
    const queue = yield* DeliveryQueue
    const timeoutMs = Math.max(1, Math.round(Duration.toMillis(options.timeout)))
    const leaseMs = Math.round(Duration.toMillis(leaseOf(options.timeout)))
    const pollMs = Math.round(Duration.toMillis(options.pollInterval ?? Duration.seconds(1)))
    const purgeEvery = options.purgeInterval ?? Duration.minutes(1)
    const schedule = RetryPlan.retrySchedule(options.retryDelays)
    const keys = WebhookSecret.keyRing(options.secretKey)
    const policy = { allowInsecure: options.allowInsecureUrls }
    const agents = Receiver.makeAgents()
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        agents.http.destroy()
        agents.https.destroy()
      })
    )

    let inFlight = 0
    let databaseUp = true
    let stopping = false

    /** Logs the database going away once, and its return once. */
    const databaseFailed = (step: string) => (error: SqlError.SqlError) =>
      Effect.suspend(() => {
        if (!databaseUp) return Effect.void
        databaseUp = false
        return Effect.logError("dispatcher: the database does not answer; retrying every second", { step, error: describe(error) })
      })
    const databaseAnswered = Effect.suspend(() => {
      if (databaseUp) return Effect.void
      databaseUp = true
      return Effect.logInfo("dispatcher: the database answers again; resuming")
    })

    // One pending wake-up at most per loop: more would only repeat the same pass.
    /** Wakes the claim loop: deliveries were made, attempts were recorded. */
    const claimWakeups = yield* Queue.sliding<void>(1)
    const wake = Effect.sync(() => {
      Queue.offerUnsafe(claimWakeups, undefined)
    })
    /** Wakes the fan-out: the outbox's NOTIFY. */
    const fanOutWakeups = yield* Queue.sliding<void>(1)
    const wakeFanOut = Effect.sync(() => {
      Queue.offerUnsafe(fanOutWakeups, undefined)
    })

    /** A loop outlives a defect of one pass (logged; the next pass comes after the poll interval). */
    const loopDefect = (step: string) => (defect: unknown) =>
      Effect.logError("dispatcher: a pass failed unexpectedly; going on", { step, defect: String(defect) })

    // -- Recording ---------------------------------------------------------
    const results = yield* Queue.unbounded<AttemptRecord>()

    /** Records a batch, retried a few times (the lease still covers it); uninterruptible so a stop waits for it. */
    const recordBatch = (batch: ReadonlyArray<AttemptRecord>) =>
      queue.record(batch).pipe(
        Effect.retry(Schedule.max([Schedule.spaced("250 millis"), Schedule.recurs(8)])),
        Effect.tap((recorded) =>
          Effect.andThen(
            databaseAnswered,
            recorded.problematic > 0 || recorded.recovered > 0
              ? Effect.logWarning("dispatcher: subscriptions changed status", recorded)
              : Effect.void
          )
        ),
        Effect.tap(() => wake),
        Effect.catch((error) =>
          Effect.andThen(
            databaseFailed("record")(error),
            Effect.logError(
              "dispatcher: attempts not recorded; their deliveries go out again once their lease ends",
              { attempts: batch.length }
            )
          )
        ),
        Effect.uninterruptible
      )

    // Registered before the recorder and the senders, so it runs after them: records what they left.
    yield* Effect.addFinalizer(() =>
      Queue.clear(results).pipe(
        Effect.flatMap((left) => left.length === 0 ? Effect.void : recordBatch(left)),
        Effect.timeout(Duration.seconds(5)),
        Effect.ignore
      )
    )

    yield* Effect.forkScoped(Effect.forever(
      Queue.takeBetween(results, 1, RECORD_BATCH).pipe(
        Effect.flatMap(recordBatch),
        Effect.catchDefect((defect) => loopDefect("record")(defect))
      )
    ))

    // -- Sending -----------------------------------------------------------
    const senders = yield* FiberSet.make<void, never>()

    /** The outcome of an attempt as the journal and the plan see it. */
    const toRecord = (delivery: Claimed, at: Date, outcome: Receiver.Outcome) =>
      Effect.gen(function*() {
        if (outcome.ok) return { outcome: "delivered" as const, pauseMs: 0 }
        const pause = yield* RetryPlan.pauseAfter(schedule, delivery.attempt)
        return Option.match(pause, {
          onNone: () => ({ outcome: "failed" as const, pauseMs: 0 }),
          onSome: (delay) => ({ outcome: "retry" as const, pauseMs: Math.round(Duration.toMillis(delay)) })
        })
      }).pipe(Effect.map((next): AttemptRecord => ({
        schoolId: delivery.school_id,
        id: delivery.id,
        lease: delivery.lease,
        attempt: delivery.attempt,
        at,
        responseCode: outcome.responseCode,
        error: outcome.error,
        durationMs: outcome.durationMs,
        responseBody: outcome.responseBody,
        ...next
      })))

    /** One attempt: sign the stored body with this attempt's time, POST, queue the result. */
    const attempt = (delivery: Claimed) =>
      Effect.gen(function*() {
        const at = new Date()
        const secret = WebhookSecret.decrypt(keys, delivery.secret_ciphertext)
        const outcome: Receiver.Outcome = Result.isFailure(secret)
          ? {
            ok: false,
            responseCode: null,
            error: "secret_unreadable",
            detail: secret.failure,
            responseBody: null,
            durationMs: 0
          }
          : yield* Effect.promise(() =>
            Receiver.postAttempt({
              url: delivery.url,
              secret: secret.success,
              deliveryId: delivery.id,
              event: delivery.event,
              body: delivery.body,
              at,
              timeoutMs,
              policy,
              agents
            })
          )
        const record = yield* toRecord(delivery, at, outcome)
        const became: Metrics.DeliveryOutcome = record.outcome === "retry" ? "retrying" : record.outcome
        yield* Metrics.attempted(outcome, became)
        // Ids, the attempt, what came of it: never the URL (it may carry a token), the secret or the body.
        const line = {
          delivery_id: delivery.id,
          subscription_id: delivery.subscription_id,
          attempt: delivery.attempt,
          outcome: became,
          result: Metrics.resultOf(outcome),
          status: outcome.responseCode,
          duration_ms: outcome.durationMs
        }
        // As annotations, like the access line's fields: one flat object per line to filter on.
        yield* (outcome.ok
          ? Effect.logDebug("dispatcher: attempt delivered")
          : Effect.logInfo(`dispatcher: attempt failed: ${outcome.detail ?? `HTTP ${outcome.responseCode}`}`)).pipe(
            Effect.annotateLogs(outcome.error === null ? line : { ...line, error: outcome.error })
          )
        yield* Queue.offer(results, record)
      }).pipe(
        // The slot goes to the next claimed delivery at once; the claim loop refills behind
        // (woken when the attempts are recorded).
        Effect.ensuring(Effect.suspend(() => {
          inFlight--
          return startWaiting
        })),
        Effect.uninterruptible
      )

    /**
     * Claimed deliveries waiting for a slot, oldest claim first. The claim
     * loop claims ahead (up to DISPATCHER_CONCURRENCY beyond the attempts in
     * flight), so a finished attempt's slot is taken at once and a claim's
     * round trip overlaps the attempts instead of leaving every slot idle
     * while it runs (docs/performance.md "Webhook dispatcher"). One found
     * waiting longer than `aheadMaxWaitMs` (half the lease's margin over the
     * time-out: every slot held by receivers that hang) when a slot frees is
     * given back instead, so no attempt starts on a lease too short to cover
     * its time-out.
     */
    const ahead: Array<{ readonly delivery: Claimed; readonly claimedAt: number }> = []
    const claimAhead = options.concurrency
    const aheadMaxWaitMs = Math.max(500, (leaseMs - timeoutMs) / 2)

    /** Starts waiting deliveries while slots are free; gives back those that waited too long. */
    const startWaiting: Effect.Effect<void> = Effect.suspend(() => {
      const stale: Array<Claimed> = []
      const now = Date.now()
      const starts: Array<Effect.Effect<unknown>> = []
      while (!stopping && inFlight < options.concurrency && ahead.length > 0) {
        const next = ahead.shift()
        if (next === undefined) break
        if (now - next.claimedAt > aheadMaxWaitMs) {
          stale.push(next.delivery)
          continue
        }
        inFlight++
        starts.push(FiberSet.run(senders, attempt(next.delivery)))
      }
      return Effect.andThen(Effect.all(starts, { discard: true }), giveBack(stale))
    })

    /** Clears the leases of claimed deliveries that will not be sent by this process now. */
    const giveBack = (deliveries: ReadonlyArray<Claimed>): Effect.Effect<void> =>
      deliveries.length === 0 ? Effect.void : queue.release(deliveries.map((d) => ({ schoolId: d.school_id, id: d.id, lease: d.lease }))).pipe(
        Effect.catch((error) => databaseFailed("release")(error)),
        Effect.asVoid
      )

    /** Queues claimed deliveries (the claim stored each first attempt's body) and starts what the slots allow. */
    const start = (claimed: ReadonlyArray<Claimed>) =>
      Effect.suspend(() => {
        // A claim that returns after the stop began: its leases go straight back.
        if (stopping) return giveBack(claimed)
        const claimedAt = Date.now()
        for (const delivery of claimed) ahead.push({ delivery, claimedAt })
        return startWaiting
      })

    // -- The loop ------------------------------------------------------------
    /**
     * Room for a claim: the slots plus the claim-ahead, less the attempts in
     * flight and the deliveries already waiting. With work in hand a claim
     * gathers: it waits until half of the claim-ahead is free, or
     * CLAIM_GATHER after the last claim, whichever comes first. Every claim
     * walks the subscriptions with pending work, so claiming a slot at a time
     * as attempts finish would cost a claim per delivery under load
     * (docs/performance.md "Webhook dispatcher"); the time bound keeps slots
     * that hanging receivers hold from holding back everyone else's work
     * (test/dispatcher/isolation.test.ts). Idle, it claims at once.
     */
    const claimAtLeast = Math.max(1, Math.floor(claimAhead / 2))
    let lastClaimAt = 0
    /** Set when a claim was put off to gather: the loop comes back within CLAIM_GATHER_MS. */
    let gathering = false
    const claimAll: Effect.Effect<void, SqlError.SqlError> = Effect.suspend(() => {
      const free = options.concurrency + claimAhead - inFlight - ahead.length
      gathering = false
      if (free <= 0 || stopping) return Effect.void
      const inHand = inFlight + ahead.length
      if (inHand > 0 && free < claimAtLeast && Date.now() - lastClaimAt < CLAIM_GATHER_MS) {
        gathering = true
        return Effect.void
      }
      lastClaimAt = Date.now()
      const limit = Math.min(free, CLAIM_BATCH)
      return queue.claim({ limit, perSubscription: options.perSubscription, leaseMs }).pipe(
        Effect.tap(start),
        // A stop waits for a claimed batch to be queued and started: no lease is left unused.
        Effect.uninterruptible,
        Effect.flatMap((claimed) => claimed.length === limit ? claimAll : Effect.void)
      )
    })

    /** Sleeps `ms`, or less when `wakeups` has a wake-up. */
    const sleepOrWake = (wakeups: Queue.Queue<void>, ms: number) =>
      Effect.raceFirst(Queue.take(wakeups), Effect.sleep(Duration.millis(ms)))

    /**
     * The claim loop: claims, then waits until a wake-up (deliveries made,
     * attempts recorded), the next pending delivery falling due, the end of
     * a gathering, or the poll.
     */
    const claimPass = Effect.gen(function*() {
      yield* claimAll
      yield* databaseAnswered
      const due = yield* queue.nextDue(pollMs)
      return Math.max(5, Math.min(pollMs, due ?? pollMs, gathering ? CLAIM_GATHER_MS : pollMs))
    }).pipe(
      Effect.catch((error) => Effect.as(databaseFailed("claim")(error), pollMs)),
      Effect.catchDefect((defect) => Effect.as(loopDefect("claim")(defect), pollMs))
    )
    const claimLoop = Effect.forever(Effect.flatMap(claimPass, (waitMs) => sleepOrWake(claimWakeups, waitMs)))

    /**
     * The fan-out, a loop of its own beside the claims (a batch of 500 events
     * takes tens of milliseconds; in the claim loop it held every claim back
     * for as long): batches while a batch comes back full, waking the claim
     * loop after each that made deliveries; then it waits for the outbox's
     * NOTIFY or the poll.
     */
    const fanOutPass: Effect.Effect<number> = queue.fanOut(FAN_OUT_BATCH).pipe(
      Effect.tap((fanned) => fanned.deliveries > 0 ? wake : Effect.void),
      Effect.tap(() => databaseAnswered),
      Effect.map((fanned) => fanned.events === FAN_OUT_BATCH ? 0 : pollMs),
      Effect.catch((error) => Effect.as(databaseFailed("fan-out")(error), pollMs)),
      Effect.catchDefect((defect) => Effect.as(loopDefect("fan-out")(defect), pollMs))
    )
    const fanOutLoop = Effect.forever(
      Effect.flatMap(fanOutPass, (waitMs) => waitMs === 0 ? Effect.void : sleepOrWake(fanOutWakeups, waitMs))
    )

    // -- LISTEN ----------------------------------------------------------------
    const listen = Effect.scoped(
      queue.wakeups.pipe(
        Effect.tap(() => Effect.logDebug("dispatcher: listening to the outbox")),
        // A notification that arrived while the connection was down is caught by the next cycle.
        Effect.tap(() => wakeFanOut),
        Effect.flatMap((stream) => Stream.runForEach(stream, () => wakeFanOut))
      )
    ).pipe(
      Effect.catch((error) => Effect.logWarning("dispatcher: the outbox listen connection was lost; polling meanwhile", { error: describe(error) })),
      Effect.andThen(Effect.sleep(Duration.seconds(1))),
      Effect.forever
    )

    // -- Purge -----------------------------------------------------------------
    const purgeOnce: Effect.Effect<{ deliveries: number; events: number }, SqlError.SqlError> = Effect.gen(function*() {
      let deliveries = 0
      let events = 0
      // A bounded number of small batches per run.
      for (let i = 0; i < 20; i++) {
        const purged = yield* queue.purge({
          retentionMs: Duration.toMillis(options.retention),
          keep: JOURNAL_KEEP,
          batch: PURGE_BATCH
        })
        deliveries += purged.deliveries
        events += purged.events
        if (purged.deliveries < PURGE_BATCH) break
      }
      return { deliveries, events }
    })
    const purge = purgeOnce.pipe(
      Effect.tap((purged) => purged.deliveries > 0 ? Effect.logInfo("dispatcher: purged old deliveries", purged) : Effect.void),
      Effect.catch((error) => databaseFailed("purge")(error)),
      Effect.andThen(Effect.sleep(purgeEvery)),
      Effect.forever
    )

    // Forked last, so a stop interrupts them first (then the senders finish, then the recorder).
    yield* Effect.forkScoped(listen)
    yield* Effect.forkScoped(fanOutLoop)
    yield* Effect.forkScoped(claimLoop)
    yield* Effect.forkScoped(Effect.andThen(Effect.sleep("2 seconds"), purge))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        stopping = true
        // Claimed ahead and not started: their leases go back at once, for the next dispatcher.
        return ahead.splice(0, ahead.length).map((waiting) => waiting.delivery)
      }).pipe(
        Effect.tap((unsent) => Effect.logInfo("dispatcher: stopping; finishing the attempts in flight", { inFlight, released: unsent.length })),
        Effect.flatMap((unsent) => Effect.timeout(giveBack(unsent), Duration.seconds(5))),
        Effect.ignore
      )
    )
    yield* Effect.logInfo("dispatcher: running", {
      concurrency: options.concurrency,
      perSubscription: options.perSubscription,
      timeout: Duration.format(options.timeout),
      retryDelays: options.retryDelays.map(Duration.format),
      lease: Duration.format(Duration.millis(leaseMs))
    })

    return Dispatcher.of({
      ready: Effect.sync(() => databaseUp && !stopping),
      inFlight: Effect.sync(() => inFlight)
    })
  })

export { Receiver }
