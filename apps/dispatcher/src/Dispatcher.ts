/**
 * The dispatcher (docs/integrators.md "Receiving webhooks"; docs/decisions.md "Webhooks",
 * "Fair delivery"; docs/development.md "apps/dispatcher"): pieces with one
 * job each, joined here. Their SQL is libs/persistence/src/DeliveryQueue.ts.
 *
 * - FanOut.ts: outbox events → deliveries (skipped ones for disabled
 *   subscriptions), woken by the outbox's NOTIFY, polling as a safety net;
 *   wakes the claim when it made deliveries.
 * - Claimer.ts: claims due deliveries in fair rounds (libs/domain/src/
 *   FairShare.ts) for the room the slots leave, and hands them over.
 * - Slots.ts: DISPATCHER_CONCURRENCY slots; a slot that frees goes to the
 *   school with the fewest in flight; no school takes the reserve.
 * - Sender.ts: one attempt (sign, POST through the receiver client,
 *   libs/runtime/src/Receiver.ts; the next pause from the retry plan).
 * - Recorder.ts: the attempts' results in batches; wakes the claim.
 * - Purge.ts: old deliveries, PURGE_SOON after a run that purged some,
 *   PURGE_INTERVAL after one that purged none.
 * - ClockCheck.ts: this machine's clock against the database's, at start
 *   and every minute; attempt times come from the database's clock.
 * - Outage.ts: the database away, logged once per change of state.
 *
 * SIGTERM (the layer's scope closing): the loops stop (no more claims), the
 * deliveries claimed ahead go back at once, the attempts in flight finish
 * (each is bounded by WEBHOOK_TIMEOUT) and are recorded, then the process
 * exits. `ready` is false while the database is away, while the clock is
 * skewed, and from the stop on.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as RetryPlan from "@school/domain/RetryPlan"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { type Claimed, DeliveryQueue } from "@school/persistence/DeliveryQueue"
import { Listeners } from "@school/persistence/Listeners"
import * as SettingKinds from "@school/runtime/SettingKinds"
import type { InvalidSetting } from "@school/runtime/SettingKinds"
import { WEBHOOK_ALLOW_INSECURE_URLS, WEBHOOK_SECRET_KEY } from "@school/runtime/Settings"
import * as Claimer from "./Claimer.ts"
import * as ClockCheck from "./ClockCheck.ts"
import * as FanOut from "./FanOut.ts"
import * as Outage from "./Outage.ts"
import * as Purge from "./Purge.ts"
import * as Receiver from "@school/runtime/Receiver"
import * as Recorder from "./Recorder.ts"
import * as Sender from "./Sender.ts"
import * as Signal from "@school/runtime/Signal"
import * as Slots from "./Slots.ts"

/** `DISPATCHER_CONCURRENCY` (docs/operations.md "Settings"): attempts in flight in this process, shared fairly between schools. */
export const DISPATCHER_CONCURRENCY = SettingKinds.make("DISPATCHER_CONCURRENCY", SettingKinds.integer(1, 10_000), 32)

/** `DISPATCHER_PER_SUBSCRIPTION`: attempts of one subscription in flight at once, so one receiver cannot take every slot. */
export const DISPATCHER_PER_SUBSCRIPTION = SettingKinds.make("DISPATCHER_PER_SUBSCRIPTION", SettingKinds.integer(1, 1_000), 4)

/** `WEBHOOK_TIMEOUT`: a receiver's time-out, the bound of each attempt. */
export const WEBHOOK_TIMEOUT = SettingKinds.make("WEBHOOK_TIMEOUT", SettingKinds.duration, Duration.seconds(10))

/** `WEBHOOK_RETRY_DELAYS`: the pauses before attempts 2, 3, 4, … of a delivery (docs/decisions.md "Webhooks"). */
export const WEBHOOK_RETRY_DELAYS = SettingKinds.make(
  "WEBHOOK_RETRY_DELAYS",
  SettingKinds.durationList,
  [Duration.minutes(1), Duration.minutes(5), Duration.minutes(30)]
)

/** `DELIVERY_RETENTION`: delivered, failed and skipped deliveries older than this are purged (the last 50 per subscription stay). */
export const DELIVERY_RETENTION = SettingKinds.make("DELIVERY_RETENTION", SettingKinds.retention, Duration.days(30))

/** The safety-net poll. */
const POLL_INTERVAL = Duration.seconds(1)
/** The purge's pause after a run that purged nothing (and the stale listeners' period). */
const PURGE_INTERVAL = Duration.minutes(1)
/** The purge's pause after a run that purged something: what passes the retention waits about this long. */
const PURGE_SOON = Duration.seconds(1)
/** How often the clock is compared with the database's. */
const CLOCK_INTERVAL = Duration.minutes(1)

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
  /** The database answered the last step, the clock agrees with the database's, and no stop has begun. */
  readonly ready: Effect.Effect<boolean>
  /** Attempts in flight in this process. */
  readonly inFlight: Effect.Effect<number>
  /** The last clock check found this machine's clock more than a minute from the database's. */
  readonly clockSkewed: Effect.Effect<boolean>
}

export class Dispatcher extends Context.Service<Dispatcher, DispatcherShape>()("school/dispatcher/Dispatcher") {
  /** The running dispatcher; closing the layer's scope is the graceful stop. */
  static readonly layer: Layer.Layer<Dispatcher, InvalidSetting, DeliveryQueue> =
    Layer.effect(Dispatcher, Effect.suspend(() => make))
}

const make =
  Effect.gen(function*() {
    // Read when the dispatcher starts (docs/operations.md "Settings").
    const options = {
      concurrency: yield* DISPATCHER_CONCURRENCY,
      perSubscription: yield* DISPATCHER_PER_SUBSCRIPTION,
      timeout: yield* WEBHOOK_TIMEOUT,
      retryDelays: yield* WEBHOOK_RETRY_DELAYS,
      allowInsecureUrls: yield* WEBHOOK_ALLOW_INSECURE_URLS,
      secretKey: yield* WEBHOOK_SECRET_KEY,
      retention: yield* DELIVERY_RETENTION
    }
    const queue = yield* DeliveryQueue
    const listeners = yield* Effect.serviceOption(Listeners)
    const timeoutMs = Math.max(1, Math.round(Duration.toMillis(options.timeout)))
    const leaseMs = Math.round(Duration.toMillis(leaseOf(options.timeout)))
    const pollMs = Math.round(Duration.toMillis(POLL_INTERVAL))
    const stopping = yield* Ref.make(false)
    const outage = yield* Outage.make
    const claimWakeups = yield* Signal.make

    // Closed last (finalizers run in reverse): the receiver client's sockets.
    const receiver = yield* Receiver.make({
      concurrency: options.concurrency,
      timeout: options.timeout,
      allowInsecureUrls: options.allowInsecureUrls
    })

    const clock = yield* ClockCheck.make(queue, outage)
    yield* clock.measure

    // Closed after the slots: records what the attempts in flight left.
    const recorder = yield* Recorder.make({ queue, outage, recorded: claimWakeups.wake })
    yield* Effect.addFinalizer(() => recorder.stop)

    const giveBack = (deliveries: ReadonlyArray<Claimed>): Effect.Effect<void> =>
      deliveries.length === 0 ? Effect.void : queue.release(deliveries.map((d) => ({ schoolId: d.school_id, id: d.id, lease: d.lease }))).pipe(
        Effect.catch((error) => outage.failed("release")(error)),
        Effect.timeout(Duration.seconds(5)),
        Effect.ignore
      )

    const send = Sender.make({
      keys: WebhookSecret.keyRing(options.secretKey),
      schedule: RetryPlan.retrySchedule(options.retryDelays),
      post: receiver.postAttempt,
      now: clock.now,
      record: recorder.offer
    })

    const slots = yield* Slots.make({
      slots: options.concurrency,
      // Half the lease's margin over the time-out: every slot held by receivers that hang.
      maxWaitMs: Math.max(500, (leaseMs - timeoutMs) / 2),
      send,
      giveBack
    })
    // Closed after the loops: the deliveries claimed ahead go back, the attempts in flight finish.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Ref.set(stopping, true)
        yield* Effect.logInfo("dispatcher: stopping; finishing the attempts in flight", { inFlight: yield* slots.inFlight })
        yield* slots.stop
      })
    )

    // Forked last, so a stop interrupts them first.
    yield* Effect.forkScoped(FanOut.run({ queue, outage, pollMs, made: claimWakeups.wake }))
    yield* Effect.forkScoped(Claimer.run({
      queue,
      outage,
      slots,
      wakeups: claimWakeups,
      concurrency: options.concurrency,
      perSubscription: options.perSubscription,
      leaseMs,
      pollMs,
      // A school whose events come at least once a second stays active between them.
      activeMs: 1_000,
      finished: recorder.finished
    }))
    yield* Effect.forkScoped(Purge.run({
      queue,
      outage,
      retention: options.retention,
      every: PURGE_INTERVAL,
      soon: PURGE_SOON,
      // Local listeners whose CLI died (libs/persistence/src/Listeners.ts); a database away is the next run's.
      ...(listeners._tag === "Some"
        ? {
          removeStaleListeners: listeners.value.removeStale.pipe(
            Effect.catchCause((cause) => Effect.as(Effect.logWarning("dispatcher: stale listeners not removed", cause), 0))
          )
        }
        : {})
    }))
    yield* Effect.forkScoped(ClockCheck.run(clock, CLOCK_INTERVAL))

    yield* Effect.logInfo("dispatcher: running", {
      concurrency: options.concurrency,
      perSubscription: options.perSubscription,
      timeout: Duration.format(options.timeout),
      retryDelays: options.retryDelays.map(Duration.format),
      lease: Duration.format(Duration.millis(leaseMs))
    })

    return Dispatcher.of({
      ready: Effect.map(
        Effect.all([outage.up, clock.skewed, Ref.get(stopping)]),
        ([up, skewed, stopped]) => up && !skewed && !stopped
      ),
      inFlight: slots.inFlight,
      clockSkewed: clock.skewed
    })
  })

export { Receiver }
