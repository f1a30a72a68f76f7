/**
 * The purge (DeliveryQueue `purge`; docs/operations.md "Settings", DELIVERY_RETENTION):
 * delivered, failed and skipped deliveries older than DELIVERY_RETENTION,
 * outside the last JOURNAL_KEEP of their subscription, in small batches (a
 * bounded number per run, so it never holds locks for long), every
 * `every`. Then the local listeners whose CLI died (Listeners `removeStale`,
 * libs/persistence/src/Listeners.ts) when the process has `Listeners`.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type { SqlError } from "effect/sql"
import type { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import type { Outage } from "./Outage.ts"

/** Deliveries purged per statement (small: the purge must not hold locks for long). */
const PURGE_BATCH = 500
/** Batches per run, at most. */
const PURGE_BATCHES = 20
/** docs/decisions.md "Webhooks": the journal's last deliveries per subscription stay whatever their age. */
export const JOURNAL_KEEP = 50

export const once = (queue: DeliveryQueue["Service"], retention: Duration.Duration) =>
  Effect.gen(function*() {
    let deliveries = 0
    let events = 0
    for (let i = 0; i < PURGE_BATCHES; i++) {
      const purged = yield* queue.purge({ retentionMs: Duration.toMillis(retention), keep: JOURNAL_KEEP, batch: PURGE_BATCH })
      deliveries += purged.deliveries
      events += purged.events
      if (purged.deliveries < PURGE_BATCH) break
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
  once(options.queue, options.retention).pipe(
    Effect.tap((purged) => purged.deliveries > 0 ? Effect.logInfo("dispatcher: purged old deliveries", purged) : Effect.void),
    Effect.andThen(options.removeStaleListeners ?? Effect.succeed(0)),
    Effect.tap((removed) => removed > 0 ? Effect.logInfo("dispatcher: removed stale local listeners", { removed }) : Effect.void),
    Effect.catch((error) => options.outage.failed("purge")(error)),
    Effect.repeat(Schedule.spaced(options.every)),
    Effect.delay(Duration.min(options.every, Duration.seconds(2)))
  )
