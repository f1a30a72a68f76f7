/**
 * What both processes' `/metrics` share (docs/operations.md "Metrics"):
 * Effect's own `Metric` values, rendered by `effect/observability`
 * `PrometheusMetrics` in the Prometheus text format; the HTTP request
 * series of the API's access log; the process series (CPU, memory, heap,
 * the event loop's delay), read at scrape time, none of them changed by a
 * scrape; and the listener of its own that serves `/metrics` when
 * METRICS_PORT is set (`serveSeparately`).
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
import * as RequestId from "@school/domain/RequestId"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import * as Option from "effect/Option"
import * as Http from "node:http"
import { monitorEventLoopDelay } from "node:perf_hooks"
import * as Listening from "./Listening.ts"
import { cannotListen, listenUntilClosed } from "./Ports.ts"
import type { AlreadyLogged } from "./Reported.ts"
import type { InvalidSetting } from "./SettingKinds.ts"
import { HOST, METRICS_PORT } from "./Settings.ts"

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

/** The duration histogram of one (method, route). */
const durationOf = (method: string, route: string): Metric.Histogram<number> =>
  Metric.histogram(DURATION, {
    description: DURATION_HELP,
    boundaries: LATENCY_BUCKETS,
    attributes: { method: methodLabel(method), route }
  })

/** The request counter of one (method, route, status). */
const requestsOf = (method: string, route: string, status: number): Metric.Counter<number> =>
  Metric.counter(REQUESTS, {
    description: REQUESTS_HELP,
    attributes: { method: methodLabel(method), route, status: String(status) },
    incremental: true
  })

/**
 * The request series: `record` counts one answered request and observes
 * its duration. `route` is a template from a fixed set (the router's, or
 * `(no route)`), so the series stay bounded.
 */
export const makeHttpRecorder = () => {
  const routeSeries = seriesBy((route: string) =>
    seriesBy((method: string): RouteSeries => ({
      duration: durationOf(method, route),
      byStatus: seriesBy((status: number) => requestsOf(method, route, status))
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
 * The request series of answers every running process gives (its health
 * routes' 200s), made now at 0, so a rate over them exists from the start;
 * the recorder counts into the same series (same name, help and labels).
 */
export const startHttpSeries = (
  answers: Iterable<readonly [method: string, route: string, status: number]>
): Effect.Effect<void> =>
  Effect.forEach(answers, ([method, route, status]) =>
    Effect.andThen(Metric.update(requestsOf(method, route, status), 0), Metric.value(durationOf(method, route))), {
    discard: true
  })

/**
 * A metric whose value is read when the metrics are rendered (a scrape),
 * not pushed: registered while the layer (or scope) lives.
 */
const live = <Input, State>(metric: Metric.Metric<Input, State>, read: () => State) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    const registration = Metric.registerUnsafe(metric, context, { get: read, update: () => {}, modify: () => {} })
    yield* Effect.addFinalizer(() => Effect.sync(() => registration.remove()))
  })

/** A gauge whose value is read at each scrape, registered while the layer (or scope) lives. */
export const liveGauge = (
  name: string,
  description: string,
  read: () => number,
  attributes?: Metric.Metric.AttributeSet
) => live(Metric.gauge(name, { description, ...(attributes === undefined ? {} : { attributes }) }), () => ({ value: read() }))

/** A counter whose total is read at each scrape (a figure the system keeps, such as CPU time). */
const liveCounter = (name: string, description: string, read: () => number) =>
  live(Metric.counter(name, { description, incremental: true }), () => ({ count: read(), incremental: true }))

/** The process's start, in seconds since the epoch. */
const startTimeSeconds = Math.round((Date.now() - performance.now()) / 10) / 100

/**
 * The window of the event loop's delay percentile: the gauge reports the
 * last complete window, so a scrape reads it and changes nothing.
 */
export const EVENT_LOOP_WINDOW: Duration.Duration = Duration.seconds(10)

/**
 * The p99 of the event loop's delay over fixed windows (perf_hooks
 * `monitorEventLoopDelay`): a timer closes a window every `window`, keeps
 * its p99 in seconds (0 for a window without a sample) and starts the next
 * one; `read` gives the last complete window's (0 before the first ends).
 */
const eventLoopDelay = (window: Duration.Duration) =>
  Effect.gen(function*() {
    const histogram = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const histogram = monitorEventLoopDelay({ resolution: 20 })
        histogram.enable()
        return histogram
      }),
      (histogram) => Effect.sync(() => histogram.disable())
    )
    let last = 0
    const close = Effect.sync(() => {
      last = histogram.count === 0 ? 0 : histogram.percentile(99) / 1e9
      histogram.reset()
    })
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(window), close)))
    return { read: () => last }
  })

const CPU_SECONDS = "process_cpu_seconds_total"
const LOOP_P99 = "nodejs_eventloop_lag_p99_seconds"
const LOOP_P99_EARLIER = "nodejs_eventloop_delay_p99_seconds"

/**
 * The process series (docs/operations.md "Metrics"), read at each scrape:
 * CPU time (user and system), resident memory, V8's heap in use, start
 * time, and the event loop's p99 delay over the last complete window of
 * `window` (EVENT_LOOP_WINDOW), under its name and its earlier one. No
 * scrape changes any of them.
 */
export const processGaugesWith = (
  options: { readonly window: Duration.Duration }
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const loop = yield* eventLoopDelay(options.window)
    yield* liveCounter(CPU_SECONDS, "CPU time the process has used, user and system, in seconds.", () => {
      const { system, user } = process.cpuUsage()
      return (user + system) / 1e6
    })
    yield* liveGauge("process_resident_memory_bytes", "Resident set size of the process, in bytes.", () =>
      process.memoryUsage.rss())
    yield* liveGauge("nodejs_heap_used_bytes", "V8 heap in use, in bytes.", () => process.memoryUsage().heapUsed)
    yield* liveGauge("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", () =>
      startTimeSeconds)
    const window = `${Duration.toSeconds(options.window)} s`
    yield* liveGauge(LOOP_P99, `The 99th percentile of the event loop's delay over the last complete ${window} window, in seconds.`, loop.read)
    yield* liveGauge(LOOP_P99_EARLIER, `The same as ${LOOP_P99}, under its earlier name.`, loop.read)
  })

/** The process series, the event loop's delay over windows of EVENT_LOOP_WINDOW. */
export const processGauges: Effect.Effect<void, never, Scope.Scope> = processGaugesWith({ window: EVENT_LOOP_WINDOW })

/** The process gauges for as long as the layer lives. */
export const ProcessGaugesLive: Layer.Layer<never> = Layer.effectDiscard(processGauges)

// ---------------------------------------------------------------------------
// METRICS_PORT: `/metrics` on a listener of its own
// ---------------------------------------------------------------------------

/**
 * Whether `/metrics` is served on the process's own port: METRICS_PORT
 * unset. (The process checked its settings at start: a malformed one never
 * gets this far.)
 */
export const onOwnPort: Effect.Effect<boolean> = Effect.orDie(
  // Suspended: Settings.ts loads this module (through Tracing.ts) before it defines METRICS_PORT.
  Effect.suspend(() => Effect.map(METRICS_PORT.asEffect(), Option.isNone))
)

const answer = (response: Http.ServerResponse, status: number, contentType: string, body: string) => {
  response.writeHead(status, { "content-type": contentType, "content-length": String(Buffer.byteLength(body)) })
  response.end(body)
}

const NOT_FOUND = JSON.stringify({ error: { code: "not_found", message: "No such route." } })
const GET_ONLY = JSON.stringify({ error: { code: "method_not_allowed", message: "GET only." } })

/**
 * With METRICS_PORT set (docs/operations.md "Metrics"), `GET /metrics` with
 * `render`'s text on HOST:METRICS_PORT until the scope closes; every other
 * path is 404, every other method 405, each answer with its X-Request-Id
 * (libs/domain/src/RequestId.ts). Once it listens it says so to the parent
 * process (`Listening.announce`, for `npm start`'s banner). An address it
 * cannot listen on is one error line naming METRICS_PORT, and the process
 * stops (exit 1). Its port, or None when METRICS_PORT is unset.
 */
export const serveSeparately = (
  render: Effect.Effect<string>
): Effect.Effect<Option.Option<number>, InvalidSetting | AlreadyLogged, Scope.Scope> =>
  Effect.gen(function*() {
    const port = yield* METRICS_PORT
    if (Option.isNone(port)) return Option.none()
    const host = yield* HOST
    const context = yield* Effect.context<never>()
    const server = Http.createServer((request, response) => {
      const sent = request.headers[RequestId.HEADER]
      response.setHeader(RequestId.HEADER, RequestId.of(typeof sent === "string" ? sent : undefined))
      if (request.method !== "GET" && request.method !== "HEAD") {
        response.setHeader("allow", "GET, HEAD")
        return answer(response, 405, "application/json", GET_ONLY)
      }
      if ((request.url ?? "").split("?")[0] !== PATH) return answer(response, 404, "application/json", NOT_FOUND)
      Effect.runPromiseWith(context)(render).then(
        (text) => answer(response, 200, CONTENT_TYPE, text),
        () => answer(response, 500, "application/json", JSON.stringify({ error: { code: "internal_error", message: "The metrics could not be rendered." } }))
      )
    })
    yield* listenUntilClosed(server, host, port.value).pipe(
      Effect.catch((cause) => cannotListen({ host, port: port.value, setting: "METRICS_PORT", cause }))
    )
    yield* Listening.announce("metrics", port.value)
    return port
  })

/** Every metric of the process, in the Prometheus text format. */
export const render: Effect.Effect<string> = PrometheusMetrics.format()
