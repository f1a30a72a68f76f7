/**
 * The dispatcher's metrics (docs/operations.md "Metrics"), served on
 * DISPATCHER_PORT at `/metrics` (apps/dispatcher/src/Health.ts) in the
 * Prometheus text format, from Effect's `Metric` values through
 * `effect/observability` `PrometheusMetrics`:
 *
 * - per attempt: what the delivery became (`webhook_deliveries_total`), the
 *   attempt's result in the journal's terms (`webhook_attempts_total`), its
 *   duration (`webhook_attempt_duration_seconds`);
 * - attempts that failed on our side (`webhook_attempts_postponed_total`,
 *   by cause: descriptors, sockets, our resolver): not the receivers'
 *   failures, so they are neither in the journal nor in the counters above;
 * - events journaled as skipped for disabled subscriptions
 *   (`webhook_deliveries_skipped_total`);
 * - the clock: this machine's clock less the database's, as last measured
 *   (`dispatcher_clock_skew_seconds`; docs/operations.md "Clock");
 * - at each scrape, from ONE statement (DeliveryQueue `gauges`): due
 *   deliveries waiting, the oldest one's age, problematic subscriptions and
 *   the fan-out's lag; then the process series.
 *
 * Every counter and histogram exists from the start, at 0 for each label
 * value docs/operations.md "Metrics" names (`initialize`). With METRICS_PORT
 * set, `serveSeparately` serves them on a listener of their own.
 *
 * No label names a school, a subscription, a delivery or a URL.
 */
import { DeliveryQueue, type Gauges } from "@school/persistence/DeliveryQueue"
import * as Metrics from "@school/runtime/Metrics"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { AttemptError, Outcome } from "@school/runtime/Receiver"

/** What a delivery became after an attempt: the journal's outcome, as a label. */
export type DeliveryOutcome = "delivered" | "retrying" | "failed"

const deliveriesBy = Metrics.countersBy<DeliveryOutcome>(
  "webhook_deliveries_total",
  "Delivery attempts, by what the delivery became after it (failed: finally).",
  "outcome",
  ["delivered", "retrying", "failed"]
)

/** One counter per result: the results are a fixed, small set. */
const attempts = Metrics.seriesBy((result: string) =>
  Metric.counter("webhook_attempts_total", {
    description: "Delivery attempts, by result: the receiver's status class (2xx, 4xx, ...) or the journal's error kind.",
    attributes: { result },
    incremental: true
  })
)

const attemptDuration = Metric.histogram("webhook_attempt_duration_seconds", {
  description: "Time from the start of an attempt to the receiver's answer (or its failure).",
  boundaries: Metrics.LATENCY_BUCKETS
})

/**
 * The results docs/operations.md "Metrics" names, each a series from the
 * start: the receiver's status classes, then every error kind of the
 * journal (a Record, so a new kind in `AttemptError` must be added here).
 */
const ERROR_KINDS: Readonly<Record<AttemptError, null>> = {
  timeout: null,
  connection_refused: null,
  connection_closed: null,
  connection_error: null,
  dns_error: null,
  tls_error: null,
  blocked_address: null,
  invalid_url: null,
  secret_unreadable: null
}
const KNOWN_RESULTS: ReadonlyArray<string> = ["2xx", "3xx", "4xx", "5xx", ...Object.keys(ERROR_KINDS)]

/**
 * An attempt's result as a label: the journal's error kind
 * (libs/runtime/src/Receiver.ts `AttemptError`) when it has one, else
 * the status class of the receiver's answer.
 */
export const resultOf = (outcome: Outcome): string => {
  if (outcome.error !== null) return outcome.error
  const code = outcome.responseCode
  return code !== null && code >= 100 && code <= 599 ? `${Math.floor(code / 100)}xx` : "other"
}

/** Counts one attempt. */
export const attempted = (outcome: Outcome, became: DeliveryOutcome): Effect.Effect<void> =>
  Effect.all([
    Metric.update(deliveriesBy[became], 1),
    Metric.update(attempts(resultOf(outcome)), 1),
    Metric.update(attemptDuration, outcome.durationMs / 1000)
  ], { discard: true })

/**
 * What an attempt that failed on our side ran into, as the journal's error
 * kinds name it: descriptors or local resources (`connection_error`), no
 * free socket in time (`timeout`), our resolver (`dns_error`).
 */
export type PostponedCause = "connection_error" | "timeout" | "dns_error"

const postponedBy = Metrics.countersBy<PostponedCause>(
  "webhook_attempts_postponed_total",
  "Attempts that failed on the dispatcher's side (descriptors, sockets, its DNS resolver), by cause: retried shortly, not counted against the receiver.",
  "cause",
  ["connection_error", "timeout", "dns_error"]
)

/** Counts an attempt that failed on our side. */
export const postponedAttempt = (outcome: Outcome): Effect.Effect<void> => {
  const cause: PostponedCause = outcome.error === "timeout" || outcome.error === "dns_error" ? outcome.error : "connection_error"
  return Metric.update(postponedBy[cause], 1)
}

const skipped = Metric.counter("webhook_deliveries_skipped_total", {
  description: "Events journaled as skipped because their subscription was disabled.",
  incremental: true
})

/** Counts deliveries the fan-out journaled as skipped. */
export const skippedDeliveries = (count: number): Effect.Effect<void> => Metric.update(skipped, count)

const clockSkew = Metric.gauge("dispatcher_clock_skew_seconds", {
  description: "This machine's clock less the database's, as last measured (positive: ahead)."
})

/** The clock's last measured skew. */
export const clockSkewed = (skewMs: number): Effect.Effect<void> => Metric.update(clockSkew, skewMs / 1000)

const due = Metric.gauge("webhook_deliveries_due", {
  description: "Deliveries due and not taken by a dispatcher."
})
const oldestDue = Metric.gauge("webhook_oldest_due_delivery_age_seconds", {
  description: "Seconds since the oldest delivery still waiting fell due (0: none waits)."
})
const problematic = Metric.gauge("webhook_subscriptions_problematic", {
  description: "Webhook subscriptions in status problematic."
})
const fanOutLag = Metric.gauge("webhook_fanout_lag_seconds", {
  description: "Seconds since the oldest outbox event not yet fanned out was written (0: none)."
})

const setGauges = (gauges: Gauges) =>
  Effect.all([
    Metric.update(due, gauges.due),
    Metric.update(oldestDue, gauges.oldestDueAgeSeconds),
    Metric.update(problematic, gauges.problematic),
    Metric.update(fanOutLag, gauges.fanOutLagSeconds)
  ], { discard: true })

/**
 * The counters at 0 and the attempt histogram empty before the first
 * attempt, so a rate over them exists from the start.
 */
export const initialize: Effect.Effect<void> = Effect.all(
  [
    ...Object.values(deliveriesBy).map((counter) => Metric.update(counter, 0)),
    ...KNOWN_RESULTS.map((result) => Metric.update(attempts(result), 0)),
    Metric.value(attemptDuration),
    ...Object.values(postponedBy).map((counter) => Metric.update(counter, 0)),
    Metric.update(skipped, 0),
    setGauges({ due: 0, oldestDueAgeSeconds: 0, problematic: 0, fanOutLagSeconds: 0 }),
    clockSkewed(0)
  ],
  { discard: true }
)

/**
 * Every series, the backlog's gauges read first (2 s at most; a database
 * that does not answer leaves them at their last values, and the scrape
 * still answers with the rest).
 */
export const render = (queue: DeliveryQueue["Service"]): Effect.Effect<string> =>
  queue.gauges().pipe(
    Effect.timeout(Duration.seconds(2)),
    Effect.flatMap(setGauges),
    Effect.catchCause(() => Effect.void),
    Effect.andThen(Metrics.render)
  )

/**
 * With METRICS_PORT set (docs/operations.md "Metrics"), `/metrics` on a
 * listener of its own (libs/runtime/src/Metrics.ts `serveSeparately`), and
 * 404 on DISPATCHER_PORT (apps/dispatcher/src/Health.ts); its port, or None.
 */
export const serveSeparately = Effect.gen(function*() {
  return yield* Metrics.serveSeparately(render(yield* DeliveryQueue))
})
