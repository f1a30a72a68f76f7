/**
 * What both processes' `/metrics` share (docs/operations.md "Metrics"):
 * Effect's own `Metric` values, rendered by `effect/observability`
 * `PrometheusMetrics` in the Prometheus text format; the HTTP request
 * series of the API's access log; the process gauges read at scrape time.
 *
 * Labels are fixed, small sets: a route TEMPLATE (never the path as sent,
 * which may hold a key), a method from a fixed list, a status. No school,
 * key, URL or delivery id is ever a label (cardinality and privacy).
 *
 * The request path's cost is O(1) and allocation-free once a series exists:
 * each (route, method, status) gets its own pre-bound `Metric` (its
 * attributes given at construction, so Effect computes its registry key
 * once), found through three small maps.
 */
import type { Context, Scope } from "effect"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import { monitorEventLoopDelay } from "node:perf_hooks"

/** The Prometheus text format's content type (version 0.0.4). */
export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** The path both processes serve their metrics on. */
export const PATH = "/metrics"

/** Seconds, about 1 ms to 10 s: the request and attempt latency histograms' buckets. */
export const LATENCY_BUCKETS: ReadonlyArray<number> = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10
]

/** The methods a label may name; anything else (Node's parser accepts ~30) is `OTHER`. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
const methodLabel = (method: string): string => METHODS.has(method) ? method : "OTHER"

const REQUESTS = "http_server_requests_total"
const REQUESTS_HELP = "HTTP requests answered, by method, route template and status."
const DURATION = "http_server_request_duration_seconds"
const DURATION_HELP = "Time from the request's arrival to its answer, by method and route template."

/**
 * One metric per label value, made on first use and kept: the values are a
 * fixed, small set, so the series stay bounded, and an update is a map
 * lookup with the attributes bound at construction (no allocation).
 */
export const seriesBy = <K, M>(make: (key: K) => M): (key: K) => M => {
  const made = new Map<K, M>()
  return (key) => {
    let found = made.get(key)
    if (found === undefined) {
      found = make(key)
      made.set(key, found)
    }
    return found
  }
}

/**
 * One counter per value of a fixed label, made at once (so every series can
 * be set to 0 at start and a rate over it exists before the first event):
 * an update is a property lookup, the attributes bound at construction.
 */
export const countersBy = <K extends string>(
  name: string,
  description: string,
  label: string,
  values: ReadonlyArray<K>
): Readonly<Record<K, Metric.Counter<number>>> => {
  const counters = {} as Record<K, Metric.Counter<number>>
  for (const value of values) {
    counters[value] = Metric.counter(name, { description, attributes: { [label]: value }, incremental: true })
  }
  return counters
}

interface RouteSeries {
  readonly duration: Metric.Histogram<number>
  readonly byStatus: (status: number) => Metric.Counter<number>
}

/**
 * The request series: `record` counts one answered request and observes
 * its duration. `route` is a template from a fixed set (the router's, or
 * `(no route)`), so the series stay bounded.
 */
export const makeHttpRecorder = () => {
  const routeSeries = seriesBy((route: string) =>
    seriesBy((method: string): RouteSeries => ({
      duration: Metric.histogram(DURATION, {
        description: DURATION_HELP,
        boundaries: LATENCY_BUCKETS,
        attributes: { method: methodLabel(method), route }
      }),
      byStatus: seriesBy((status: number) =>
        Metric.counter(REQUESTS, {
          description: REQUESTS_HELP,
          attributes: { method: methodLabel(method), route, status: String(status) },
          incremental: true
        })
      )
    }))
  )
  return (context: Context.Context<never>, method: string, route: string, status: number, seconds: number): void => {
    const found = routeSeries(route)(method)
    found.byStatus(status).updateUnsafe(1, context)
    found.duration.updateUnsafe(seconds, context)
  }
}

/** A record of answered requests: context, method, route template, status, seconds. */
export type HttpRecorder = ReturnType<typeof makeHttpRecorder>

/**
 * A gauge whose value is read when the metrics are rendered (a scrape), not
 * pushed: registered while the layer (or scope) lives.
 */
export const liveGauge = (
  name: string,
  description: string,
  read: () => number,
  attributes?: Metric.Metric.AttributeSet
) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const gauge = Metric.gauge(name, { description, ...(attributes === undefined ? {} : { attributes }) })
    const registration = Metric.registerUnsafe(gauge, context, {
      get: () => ({ value: read() }),
      update: () => {},
      modify: () => {}
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => registration.remove()))
  })

/** The process's start, in seconds since the epoch. */
const startTimeSeconds = Math.round((Date.now() - performance.now()) / 10) / 100

/**
 * The process gauges (docs/operations.md "Metrics"), read at each scrape:
 * resident memory, start time, and the event loop's p99 delay since the
 * previous scrape (perf_hooks `monitorEventLoopDelay`, reset at each read).
 */
export const processGauges: Effect.Effect<void, never, Scope.Scope> = Effect.gen(function*() {
  const loop = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const histogram = monitorEventLoopDelay({ resolution: 20 })
      histogram.enable()
      return histogram
    }),
    (histogram) => Effect.sync(() => histogram.disable())
  )
  yield* liveGauge("process_resident_memory_bytes", "Resident set size of the process, in bytes.", () =>
    process.memoryUsage.rss())
  yield* liveGauge("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", () =>
    startTimeSeconds)
  yield* liveGauge(
    "nodejs_eventloop_delay_p99_seconds",
    "The 99th percentile of the event loop's delay since the previous scrape, in seconds.",
    () => {
      const p99 = loop.count === 0 ? 0 : loop.percentile(99) / 1e9
      loop.reset()
      return p99
    }
  )
})

/** The process gauges for as long as the layer lives. */
export const ProcessGaugesLive: Layer.Layer<never> = Layer.effectDiscard(processGauges)

/** Every metric of the process, in the Prometheus text format. */
export const render: Effect.Effect<string> = PrometheusMetrics.format()
