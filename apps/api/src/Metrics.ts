/**
 * The API process's metrics (docs/operations.md "Metrics"): `GET /metrics`
 * on the API's own port, or, with METRICS_PORT set, on a listener of its
 * own (the API's port then answers `/metrics` with the 404 `not_found` of
 * an unknown path), in the Prometheus text format, from Effect's `Metric`
 * values through `effect/observability` `PrometheusMetrics`.
 *
 * - the request series (`http_server_requests_total`,
 *   `http_server_request_duration_seconds`), counted by the access log's
 *   pass (libs/runtime/src/AccessLog.ts, libs/runtime/src/Metrics.ts);
 * - the counters below, bumped where the answer is decided;
 * - the database pool and the process, read at each scrape.
 *
 * Every counter and histogram exists from the start: the counters below at
 * 0 for each of their label values, the request series of the health routes'
 * (and `/metrics`') 200s at 0.
 *
 * No label names a school, a key or a path as sent.
 */
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import { Errors } from "@school/domain"
import { PoolStats } from "@school/persistence/Sql"
import * as Metrics from "@school/runtime/Metrics"
import { errorResponse } from "./ErrorResponse.ts"
import { HEALTH_ROUTES } from "./Health.ts"

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
 * `/metrics` on the API's port when METRICS_PORT is set: the same answer as
 * a path no route matches (apps/api/src/ErrorEnvelope.ts), 404 `not_found`.
 */
const NotOnThisPort = HttpRouter.add("GET", Metrics.PATH, errorResponse(new Errors.NotFound({ message: "No such resource." })))

/**
 * `GET /metrics` with every series of the process, on the API's port or,
 * with METRICS_PORT set, on a listener of its own; the counters start at 0,
 * so a rate over them exists before the first event.
 */
export const MetricsRoute = Layer.unwrap(Effect.gen(function*() {
  const onOwnPort = yield* Metrics.onOwnPort
  return Layer.mergeAll(
    onOwnPort ? PrometheusMetrics.layerHttp({ path: Metrics.PATH }) : NotOnThisPort,
    Layer.effectDiscard(Effect.gen(function*() {
      for (const counter of [...Object.values(rejectionsBy), replays, inProgress]) yield* Metric.update(counter, 0)
      yield* Metrics.startHttpSeries([
        ...HEALTH_ROUTES.map(([method, route]) => [method, route, 200] as const),
        ...(onOwnPort ? METRICS_ROUTES.map(([method, route]) => [method, route, 200] as const) : [])
      ])
      yield* poolGauges
      yield* Metrics.processGauges
      yield* Metrics.serveSeparately(Metrics.render)
    }))
  )
}))

/** `GET /metrics`, as the access log and the 405 table know it. */
export const METRICS_ROUTES = [["GET", Metrics.PATH]] as const
