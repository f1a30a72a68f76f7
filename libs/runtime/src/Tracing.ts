/**
 * Owns tracing (docs/operations.md "Traces"): the spans of both processes,
 * exported over OTLP/HTTP (JSON, Effect's own `OtlpTracer`) when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, under OTEL_SERVICE_NAME (default: the
 * process's name, `school-api` or `school-dispatcher`).
 *
 * Off by default, and then off entirely: Effect's default tracer builds every
 * span in memory even with nothing to export (each `Effect.fn("…")` call,
 * each SQL statement, each request), so with no endpoint the layer turns
 * span creation off (`References.TracerEnabled`): a named `Effect.fn` or a
 * SQL statement then makes only a shared-shape no-op span, and a request
 * none.
 *
 * A trace follows a business write to each delivery attempt: the outbox row
 * keeps the W3C `traceparent` of the span that wrote it
 * (libs/persistence/src/Outbox.ts), and the dispatcher opens the attempt's
 * span under it and links its fan-out to it (`fromTraceparent`).
 *
 * The dispatcher polls (the outbox, due deliveries, every second when idle):
 * it runs with ambient spans off (`ambient: false`) and records only the
 * spans of work done, `work` around an attempt or a record, and `workAfter`
 * for a poll that found something, so an idle dispatcher exports nothing.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as Headers from "effect/http/Headers"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpTraceContext from "effect/http/HttpTraceContext"
import * as Layer from "effect/Layer"
import * as OtlpExporter from "effect/observability/OtlpExporter"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Schema from "effect/Schema"
import * as Tracer from "effect/Tracer"
import { PATH as METRICS_PATH } from "./Metrics.ts"
import * as SettingKinds from "./SettingKinds.ts"
import type { InvalidSetting } from "./SettingKinds.ts"

/** An `http://` or `https://` URL with a host (the OpenTelemetry variable's syntax). */
export const parseEndpoint = (text: string): Option.Option<string> => {
  const value = text.trim()
  if (!URL.canParse(value)) return Option.none()
  const url = new URL(value)
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "" ? Option.some(value) : Option.none()
}

/**
 * `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL (spans are posted
 * to `<endpoint>/v1/traces`); None: tracing off.
 */
export const OTEL_EXPORTER_OTLP_ENDPOINT = SettingKinds.optional(
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  SettingKinds.kind(Schema.String, "an http:// or https:// URL, e.g. http://localhost:4318", parseEndpoint)
)

/** `OTEL_SERVICE_NAME`: the exported spans' `service.name`; None: the process's own name. */
export const OTEL_SERVICE_NAME = SettingKinds.optional(
  "OTEL_SERVICE_NAME",
  SettingKinds.kind(Schema.String, "a service name", (text) => Option.some(text.trim()))
)

/** Where the spans are posted: the signal's path under the base URL, as the OpenTelemetry specification builds it. */
export const tracesUrl = (endpoint: string): string => {
  const url = new URL(endpoint.trim())
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`
  return url.toString()
}

export interface TracingOptions {
  /** The collector's base URL; None: tracing off. */
  readonly endpoint: Option.Option<string>
  readonly serviceName: string
  /** False (the dispatcher): only the spans `work` and `workAfter` open are recorded. */
  readonly ambient: boolean
}

/** Probes and scrapes: a span each would bury the requests that matter. */
const untraced = (request: { readonly url: string }): boolean =>
  request.url.startsWith("/health/") || request.url === METRICS_PATH || request.url.startsWith(`${METRICS_PATH}?`)

/**
 * What a request's span would carry of the URL as sent, which may hold a key
 * (the rule of docs/operations.md "Log lines"): left out. The span's name
 * has the route's template (apps/api/src/Server.ts).
 */
const URL_AS_SENT: ReadonlySet<string> = new Set(["url.full", "url.path", "url.query"])

const withoutUrlsAsSent = (tracer: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      const span = tracer.span(options)
      const attribute = span.attribute.bind(span)
      span.attribute = (key, value) => {
        if (!URL_AS_SENT.has(key)) attribute(key, value)
      }
      return span
    },
    context: tracer.context
  })

/** The tracing the options ask for. */
export const layerFrom = (options: TracingOptions): Layer.Layer<never> =>
  Option.match(options.endpoint, {
    onNone: () => Layer.succeed(References.TracerEnabled, false),
    onSome: (endpoint) =>
      Layer.mergeAll(
        Layer.effect(
          Tracer.Tracer,
          Effect.map(
            OtlpTracer.make({ url: tracesUrl(endpoint), resource: { serviceName: options.serviceName } }),
            withoutUrlsAsSent
          )
        ).pipe(
          Layer.provideMerge(OtlpExporter.layerFlusher),
          Layer.provide(OtlpSerialization.layerJson),
          Layer.provide(FetchHttpClient.layer)
        ),
        Layer.succeed(HttpMiddleware.TracerDisabledWhen, untraced),
        options.ambient ? Layer.empty : Layer.succeed(References.TracerEnabled, false)
      )
  })

/**
 * The tracing of a process named `defaultServiceName`, as
 * OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME ask (each process lists
 * both among the settings it checks at start).
 */
export const layer = (
  defaultServiceName: string,
  options: { readonly ambient: boolean } = { ambient: true }
): Layer.Layer<never, InvalidSetting> =>
  Layer.unwrap(Effect.gen(function*() {
    const endpoint = yield* OTEL_EXPORTER_OTLP_ENDPOINT
    const serviceName = Option.getOrElse(yield* OTEL_SERVICE_NAME, () => defaultServiceName)
    return layerFrom({ endpoint, serviceName, ambient: options.ambient })
  }))

/** Whether spans leave the process: a tracer other than Effect's in-memory default is installed. */
export const exporting: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== Tracer.nativeTracer)

/**
 * A span around `effect`, recorded wherever spans leave the process, also
 * where ambient spans are off (the dispatcher); nothing at all otherwise.
 */
export const work = (name: string, options?: Tracer.SpanOptionsNoTrace) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(exporting, (on) =>
    on
      ? Effect.withTracerEnabled(Effect.withSpan(effect, name, { ...options, captureStackTrace: false }), true)
      : effect)

/**
 * For a poll: runs `effect` and, where spans leave the process and `worth`
 * holds of its result, records one span `name` over the time it took (a
 * root, with the result's `links` and `attributes`). A poll that found
 * nothing leaves no span.
 */
export const workAfter = <A>(name: string, options: {
  readonly worth: (result: A) => boolean
  readonly attributes?: (result: A) => Readonly<Record<string, unknown>>
  readonly links?: (result: A) => ReadonlyArray<Tracer.SpanLink>
}) =>
<E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.tracer, (tracer) =>
    tracer === Tracer.nativeTracer
      ? effect
      : Effect.flatMap(Clock.currentTimeNanos, (startTime) =>
        Effect.tap(effect, (result) =>
          options.worth(result)
            ? Effect.map(Clock.currentTimeNanos, (endTime) => {
              const span = tracer.span({
                name,
                parent: Option.none(),
                annotations: Context.empty(),
                links: [...(options.links?.(result) ?? [])],
                startTime,
                kind: "internal",
                root: true,
                sampled: true
              })
              for (const [key, value] of Object.entries(options.attributes?.(result) ?? {})) span.attribute(key, value)
              span.end(endTime, Exit.succeed(result))
            })
            : Effect.void)))

/** The span a W3C `traceparent` names (a parent or a link for this process's spans); None when absent or malformed. */
export const fromTraceparent = (traceparent: string | null): Option.Option<Tracer.ExternalSpan> =>
  traceparent === null ? Option.none() : HttpTraceContext.w3c(Headers.fromRecordUnsafe({ traceparent }))

/** Links to the spans that `traceparents` name (malformed ones left out), at most `max` (a collector keeps 128). */
export const linksTo = (traceparents: ReadonlyArray<string>, max = 128): Array<Tracer.SpanLink> => {
  const links: Array<Tracer.SpanLink> = []
  for (const traceparent of traceparents) {
    if (links.length >= max) break
    const span = fromTraceparent(traceparent)
    if (Option.isSome(span)) links.push({ span: span.value, attributes: {} })
  }
  return links
}
