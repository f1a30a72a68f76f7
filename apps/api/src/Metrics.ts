/**
 * The API process's metrics (docs/operations.md "Metrics"): `GET /metrics`
 * on its own listener, in the Prometheus text format, from Effect's
 * `Metric` values through `effect/observability` `PrometheusMetrics`.
 *
 * - the request series (`http_server_requests_total`,
 *   `http_server_request_duration_seconds`), counted by the access log's
 *   pass (libs/runtime/src/AccessLog.ts, libs/runtime/src/Metrics.ts);
 * - the counters below, bumped where the answer is decided;
 * - the database pool and the process, read at each scrape.
 *
 * No label names a school, a key or a path as sent.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import { PoolStats } from "@school/persistence/Sql"
import * as Metrics from "@school/runtime/Metrics"

/** Which limit refused a request: the key's budget, a client's failed authentications, a back-office e-mail's sign-ins. */
export type RateLimit = "key" | "auth_failures" | "sign_in"

const rejectionsBy = Metrics.countersBy<RateLimit>(
  "api_rate_limit_rejections_total",
  "Requests answered 429, by the limit that refused them.",
  "limit",
  ["key", "auth_failures", "sign_in"]
)

const replays = Metric.counter("api_idempotent_replays_total", {
  description: "Writes answered with the stored response of an earlier request with the same Idempotency-Key.",
  incremental: true
})

const inProgress = Metric.counter("api_idempotency_in_progress_total", {
  description: "Writes answered 409 idempotency_in_progress: the same Idempotency-Key was still being processed.",
  incremental: true
})

/** Counts a 429 of `limit`. */
export const rateLimitRejected = (limit: RateLimit): Effect.Effect<void> => Metric.update(rejectionsBy[limit], 1)

/** Counts a replayed answer (`Idempotent-Replayed: true`). */
export const idempotentReplayed: Effect.Effect<void> = Metric.update(replays, 1)

/** Counts a 409 idempotency_in_progress. */
export const idempotencyInProgress: Effect.Effect<void> = Metric.update(inProgress, 1)

/** The database pool's gauges, read at each scrape (none for a pool without the bounded checkout). */
const poolGauges = Effect.gen(function*() {
  const pool = yield* PoolStats
  if (pool === undefined) return
  const connections = "Connections of the process's database pool, by state."
  yield* Metrics.liveGauge("db_pool_connections", connections, pool.idle, { state: "idle" })
  yield* Metrics.liveGauge("db_pool_connections", connections, pool.inUse, { state: "in_use" })
  yield* Metrics.liveGauge("db_pool_waiting", "Statements and transactions waiting for a pooled connection.", pool.waiting)
  yield* Metrics.liveGauge("db_pool_max_connections", "The database pool's bound.", () => pool.max)
})

/**
 * `GET /metrics` with every series of the process; the counters start at 0,
 * so a rate over them exists before the first event.
 */
export const MetricsRoute = Layer.mergeAll(
  PrometheusMetrics.layerHttp({ path: Metrics.PATH }),
  Layer.effectDiscard(Effect.gen(function*() {
    for (const counter of [...Object.values(rejectionsBy), replays, inProgress]) yield* Metric.update(counter, 0)
    yield* poolGauges
    yield* Metrics.processGauges
  }))
)

/** `GET /metrics`, as the access log and the 405 table know it. */
export const METRICS_ROUTES = [["GET", Metrics.PATH]] as const
