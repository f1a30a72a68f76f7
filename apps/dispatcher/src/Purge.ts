/**
 * The purge (DeliveryQueue `purge`; docs/operations.md "Settings", DELIVERY_RETENTION):
 * delivered, failed and skipped deliveries older than DELIVERY_RETENTION,
 * outside the last JOURNAL_KEEP of their subscription, in small batches
 * (each a short transaction, so it never holds locks for long), every
 * `every`. A run goes on while its batches come back full, for up to half of
 * `every`: a fixed number of batches a run (20 of 500 a minute, ~167 a
 * second) fell behind a dispatcher finishing 1 000 deliveries a second, and
 * the table grew without bound (docs/performance.md "Journal at scale"). Then the local listeners whose CLI died (Listeners `removeStale`,
 * libs/persistence/src/Listeners.ts) when the process has `Listeners`.
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

/** After a first pause of `every` or 2 s (whichever is shorter), then every `every`. */
export const run = (options: {
  readonly queue: DeliveryQueue["Service"]
  readonly outage: Outage
  readonly retention: Duration.Duration
  readonly every: Duration.Duration
  /** Removes the listeners not seen lately: how many. */
  readonly removeStaleListeners?: Effect.Effect<number, SqlError.SqlError>
}) =>
  once(options.queue, options.retention, Duration.divideUnsafe(options.every, 2)).pipe(
    Effect.tap((purged) => purged.deliveries > 0 ? Effect.logInfo("dispatcher: purged old deliveries", purged) : Effect.void),
    Effect.andThen(options.removeStaleListeners ?? Effect.succeed(0)),
    Effect.tap((removed) => removed > 0 ? Effect.logInfo("dispatcher: removed stale local listeners", { removed }) : Effect.void),
    Effect.catch((error) => options.outage.failed("purge")(error)),
    Effect.repeat(Schedule.spaced(options.every)),
    Effect.delay(Duration.min(options.every, Duration.seconds(2)))
  )
