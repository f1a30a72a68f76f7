/**
 * Traces (docs/operations.md "Traces"), against an OTLP/HTTP collector of
 * the test's own (a node:http server on a free port that keeps the JSON the
 * exporters post to /v1/traces):
 *
 * - the real API and dispatcher, OTEL_EXPORTER_OTLP_ENDPOINT set: a POST
 *   /leads and its lead.created delivery are one trace. The outbox row
 *   keeps the traceparent of the span that wrote it (`Leads.create`, under
 *   the request's span `POST /api/public/v1/leads`); the attempt's span
 *   `Dispatcher.send` is its child in the same trace, with `Receiver.send`
 *   under it; the fan-out's and the claim's spans link to it. The receiver
 *   gets no trace header; the request's span has no URL as sent; probes
 *   and scrapes make no span. The dispatcher exports the spans of work only:
 *   every span it sent descends from one of its four.
 * - off (no endpoint): no span is made (a named `Effect.fn` makes a no-op
 *   span) and a write keeps no traceparent.
 * - a malformed endpoint stops a process with one line naming the setting.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { currentTraceparent } from "@school/persistence/Outbox"
import { freePort } from "@school/runtime/Ports"
import * as Tracing from "@school/runtime/Tracing"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import { V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { entryPoints, run, startApi, startDispatcher } from "../support/Processes.ts"
import { startReceiver } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "../dispatcher/support.ts"

/** One exported span, as OTLP/JSON spells it, with the service that sent it. */
interface Exported {
  readonly service: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly attributes: ReadonlyArray<string>
}

interface Collector {
  readonly url: string
  readonly spans: Array<Exported>
  /** The paths posted to. */
  readonly paths: Array<string>
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null
const arrayOf = (u: unknown): ReadonlyArray<unknown> => (Array.isArray(u) ? u : [])
const text = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

/** The spans of one OTLP/JSON traces payload. */
const spansOf = (payload: unknown): Array<Exported> => {
  const out: Array<Exported> = []
  for (const resourceSpans of arrayOf(isRecord(payload) ? payload.resourceSpans : undefined)) {
    if (!isRecord(resourceSpans)) continue
    const resource = isRecord(resourceSpans.resource) ? resourceSpans.resource : {}
    const nameAttribute = arrayOf(resource.attributes).find((a) => isRecord(a) && a.key === "service.name")
    const service = isRecord(nameAttribute) && isRecord(nameAttribute.value) ? text(nameAttribute.value.stringValue) ?? "" : ""
    for (const scopeSpans of arrayOf(resourceSpans.scopeSpans)) {
      if (!isRecord(scopeSpans)) continue
      for (const span of arrayOf(scopeSpans.spans)) {
        if (!isRecord(span)) continue
        out.push({
          service,
          traceId: text(span.traceId) ?? "",
          spanId: text(span.spanId) ?? "",
          parentSpanId: text(span.parentSpanId),
          name: text(span.name) ?? "",
          kind: typeof span.kind === "number" ? span.kind : 0,
          links: arrayOf(span.links).flatMap((link) =>
            isRecord(link) ? [{ traceId: text(link.traceId) ?? "", spanId: text(link.spanId) ?? "" }] : []
          ),
          attributes: arrayOf(span.attributes).flatMap((attribute) =>
            isRecord(attribute) && typeof attribute.key === "string" ? [attribute.key] : []
          )
        })
      }
    }
  }
  return out
}

/** An OTLP/HTTP collector on a free port: keeps every span posted as JSON; closed with the scope. */
const startCollector = Effect.acquireRelease(
  Effect.callback<{ collector: Collector; server: Http.Server }>((resume) => {
    const collector: Collector = { url: "", spans: [], paths: [] }
    const server = Http.createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        collector.paths.push(request.url ?? "")
        if (request.headers["content-type"]?.startsWith("application/json") === true) {
          collector.spans.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString("utf8"))))
        }
        response.writeHead(200, { "content-type": "application/json" })
        response.end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = address !== null && typeof address === "object" ? address.port : 0
      resume(Effect.succeed({ collector: { ...collector, url: `http://127.0.0.1:${port}` }, server }))
    })
  }),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ collector }) => collector))

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/

/** The span's ancestors within its service's spans, nearest first (by parentSpanId). */
const ancestors = (spans: ReadonlyArray<Exported>, span: Exported): Array<Exported> => {
  const out: Array<Exported> = []
  let current = span
  while (current.parentSpanId !== undefined) {
    const parent = spans.find((s) => s.spanId === current.parentSpanId && s.traceId === current.traceId)
    if (parent === undefined) break
    out.push(parent)
    current = parent
  }
  return out
}

layer(TestDatabase.layer, { excludeTestServices: true })("traces over OTLP", (it) => {
  it.effect("POST /leads to its delivery attempt: one trace, through the outbox's traceparent", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const sql = yield* SqlClient.SqlClient
      const collector = yield* startCollector
      const { schoolId } = yield* Fixtures.school("pro", "Traced school")
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
      const key = yield* Fixtures.key(schoolId, { scope: "write" })
      const receiver = yield* startReceiver()
      const sub = yield* T.subscription(schoolId, receiver.url, ["lead.created"])
      const env = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }
      const port = yield* freePort
      const api = yield* startApi(database.url, port, env)
      const dispatcher = yield* startDispatcher(database.url, { ...env, WEBHOOK_ALLOW_INSECURE_URLS: "true" })

      const created = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}${V1}/leads`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": "traced-1" },
          body: JSON.stringify({ phone: "+79001234567", name: "Traced" })
        }).then(async (response) => ({ status: response.status, body: await response.text() }))
      )
      assert.strictEqual(created.status, 201, created.body)
      // Probes and scrapes make no span.
      for (const path of ["/health/live", "/health/ready", "/metrics"]) {
        const probed = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}${path}`).then((response) => response.status))
        assert.strictEqual(probed, 200, path)
      }
      const [delivered] = yield* receiver.waitFor(1)
      // Nothing of the trace goes to the receiver.
      for (const header of ["traceparent", "tracestate", "b3", "x-b3-traceid"]) {
        assert.notProperty(delivered?.headers ?? {}, header)
      }
      yield* T.eventually(
        "delivered",
        T.deliveries(schoolId),
        (rows) => rows.length === 1 && rows[0]?.status === "delivered",
        10_000
      )

      // Each process sends what it has left when it stops.
      api.stop()
      dispatcher.signal("SIGTERM")
      assert.strictEqual(yield* Effect.promise(() => api.exited), 0, api.log())
      assert.strictEqual(yield* Effect.promise(() => dispatcher.exited), 0, dispatcher.log())
      assert.isTrue(collector.paths.every((path) => path === "/v1/traces"), collector.paths.join(", "))

      const [event] = yield* sql<{ traceparent: string | null }>`
        SELECT traceparent FROM outbox_events WHERE school_id = ${schoolId}`
      const match = TRACEPARENT.exec(event?.traceparent ?? "")
      assert.isNotNull(match, `the outbox row's traceparent: ${event?.traceparent}`)
      const [, traceId, writerId] = match ?? []

      const apiSpans = collector.spans.filter((span) => span.service === "school-api")
      const dispatcherSpans = collector.spans.filter((span) => span.service === "school-dispatcher")

      // The API: the request's span, and under it the span that wrote the event.
      const request = apiSpans.find((span) => span.name === `POST ${V1}/leads`)
      assert.isDefined(request, apiSpans.map((span) => span.name).join(", "))
      assert.strictEqual(request?.traceId, traceId)
      assert.strictEqual(request?.kind, 2, "a server span")
      assert.includeMembers([...request!.attributes], ["http.request.method", "http.response.status_code"])
      for (const asSent of ["url.full", "url.path", "url.query"]) {
        assert.notInclude(request!.attributes, asSent, "never the URL as sent")
      }
      assert.isFalse(apiSpans.some((span) => /^GET \/(health|metrics)/.test(span.name)), "no span for a probe or a scrape")
      const writer = apiSpans.find((span) => span.spanId === writerId)
      assert.isDefined(writer, "the span the traceparent names was exported")
      assert.strictEqual(writer?.name, "Leads.create")
      assert.strictEqual(writer?.traceId, traceId)
      assert.include(ancestors(apiSpans, writer!).map((span) => span.spanId), request!.spanId)
      assert.include(ancestors(apiSpans, writer!).map((span) => span.name), "PublicApi.leads.create")

      // The dispatcher: the attempt under the writer, in the same trace; the fan-out and the claim link to it.
      const send = dispatcherSpans.filter((span) => span.name === "Dispatcher.send")
      assert.strictEqual(send.length, 1)
      assert.strictEqual(send[0]?.traceId, traceId)
      assert.strictEqual(send[0]?.parentSpanId, writerId)
      const post = dispatcherSpans.find((span) => span.name === "Receiver.send")
      assert.strictEqual(post?.parentSpanId, send[0]?.spanId)
      for (const name of ["Dispatcher.fanOut", "Dispatcher.claim"]) {
        const linked = dispatcherSpans.filter((span) => span.name === name)
        assert.isTrue(
          linked.some((span) => span.links.some((link) => link.traceId === traceId && link.spanId === writerId)),
          `${name} links to the write`
        )
      }
      assert.isTrue(dispatcherSpans.some((span) => span.name === "Dispatcher.record"))
      // Polls that found nothing leave no span: every span descends from one of the four.
      const work = ["Dispatcher.fanOut", "Dispatcher.claim", "Dispatcher.send", "Dispatcher.record"]
      for (const span of dispatcherSpans) {
        const root = [span, ...ancestors(dispatcherSpans, span)].at(-1)
        assert.include(work, root?.name, `${span.name} descends from a span of work`)
      }
      yield* T.setStatus(schoolId, sub.id, "disabled")
    }), { timeout: 60_000 })

  it.effect("a malformed OTEL_EXPORTER_OTLP_ENDPOINT stops the process with one line", () =>
    Effect.gen(function*() {
      const finished = yield* run(entryPoints.api, [], { OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" })
      assert.strictEqual(finished.code, 1)
      assert.strictEqual(
        finished.stderr,
        `invalid setting OTEL_EXPORTER_OTLP_ENDPOINT: expected an http:// or https:// URL, e.g. http://localhost:4318, got "localhost:4318"\n`
      )
    }))
})

describe("tracing off", () => {
  it.effect("no endpoint: spans are not made, and a write keeps no traceparent", () =>
    Effect.gen(function*() {
      const named = Effect.fn("Off.named")(function*() {
        const span = yield* Effect.currentSpan
        return { sampled: span.sampled, traceId: span.traceId, traceparent: currentTraceparent() }
      })
      const seen = yield* named().pipe(
        Effect.provide(Layer.fresh(Tracing.layerFrom({ endpoint: Option.none(), serviceName: "test", ambient: true })))
      )
      assert.deepStrictEqual(seen, { sampled: false, traceId: "noop", traceparent: null })
    }))
})
