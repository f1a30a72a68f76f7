/**
 * The purge (DeliveryQueue `purge`; docs/operations.md "Settings", DELIVERY_RETENTION):
 * delivered, failed and skipped deliveries older than DELIVERY_RETENTION,
 * outside the last JOURNAL_KEEP of their subscription, in small batches
 * (each a short transaction, so it never holds locks for long).
 *
 * - A run goes on while its batches come back full, for up to half of
 *   `every`: a fixed number of batches a run (20 of 500 a minute, ~167 a
 *   second) fell behind a dispatcher finishing 1 000 deliveries a second, and
 *   the table grew without bound (docs/performance.md "Journal at scale").
 * - The next run: `soon` after a run that purged anything (its last batch
 *   full or not: more may be there, and more is arriving), `every` after one
 *   that purged nothing or failed. A run every `every` alone left up to
 *   `every`'s worth of deliveries past the retention at any time; this way
 *   what passes the retention waits about `soon`, and an idle service still
 *   costs one statement per `every` (docs/decisions.md "The webhook dispatcher").
 * - The local listeners whose CLI died (Listeners `removeStale`,
 *   libs/persistence/src/Listeners.ts), when the process has `Listeners`:
 *   on their own schedule, every `every`, whatever the purge finds.
 *
 * Both start after a first pause of `every` or 2 s, whichever is shorter.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type { SqlError } from "effect/sql"
import type { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import type { Outage } from "./Outage.ts"

/** Deliveries purged per statement (small: the purge must not hold locks for long). */
const PURGE_BATCH = 500
/** docs/decisions.md "Webhooks": the journal's last deliveries per subscription stay whatever their age. */
export const JOURNAL_KEEP = 50

/** Batches until one comes back short, or `budget` has passed (at least one batch). */
export const once = (queue: DeliveryQueue["Service"], retention: Duration.Duration, budget: Duration.Duration) =>
  Effect.gen(function*() {
    const until = (yield* Clock.currentTimeMillis) + Duration.toMillis(budget)
    let deliveries = 0
    let events = 0
    while (true) {
      const purged = yield* queue.purge({ retentionMs: Duration.toMillis(retention), keep: JOURNAL_KEEP, batch: PURGE_BATCH })
      deliveries += purged.deliveries
      events += purged.events
      if (purged.deliveries < PURGE_BATCH || (yield* Clock.currentTimeMillis) >= until) break
    }
    return { deliveries, events }
  })

/** The pause after a run: `soon` when it found work (purged anything), `every` when it did not. */
export const pauses = (every: Duration.Duration, soon: Duration.Duration) =>
  Schedule.spaced(every).pipe(
    Schedule.setInputType<boolean>(),
    Schedule.modifyDelay(({ input, duration }) => Effect.succeed(input ? soon : duration))
  )

/** The purge on `pauses`, and the stale listeners' removal every `every`, both after a first pause (see above). */
export const run = (options: {
  readonly queue: DeliveryQueue["Service"]
  readonly outage: Outage
  readonly retention: Duration.Duration
  /** The pause after a run that found nothing, and the listeners' period. */
  readonly every: Duration.Duration
  /** The pause after a run that found work. */
  readonly soon: Duration.Duration
  /** Removes the listeners not seen lately: how many. */
  readonly removeStaleListeners?: Effect.Effect<number, SqlError.SqlError>
}) => {
  const purge = once(options.queue, options.retention, Duration.divideUnsafe(options.every, 2)).pipe(
    Effect.tap((purged) => purged.deliveries > 0 ? Effect.logInfo("dispatcher: purged old deliveries", purged) : Effect.void),
    Effect.map((purged) => purged.deliveries > 0),
    Effect.catch((error) => Effect.as(options.outage.failed("purge")(error), false)),
    Effect.repeat(pauses(options.every, options.soon))
  )
  const listeners = options.removeStaleListeners === undefined ? Effect.void : options.removeStaleListeners.pipe(
    Effect.tap((removed) => removed > 0 ? Effect.logInfo("dispatcher: removed stale local listeners", { removed }) : Effect.void),
    Effect.catch((error) => options.outage.failed("purge")(error)),
    Effect.repeat(Schedule.spaced(options.every))
  )
  return Effect.all([purge, listeners], { concurrency: 2, discard: true }).pipe(
    Effect.delay(Duration.min(options.every, Duration.seconds(2)))
  )
}
