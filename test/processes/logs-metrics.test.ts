/**
 * Logs and metrics operators can trust (docs/operations.md "Log lines",
 * "Metrics"):
 * - a JSON line names its process (`service`) and its `message` is always a
 *   string, a log call with several values included (its objects in
 *   `fields`); under `npm start` the lines of the API, the dispatcher and
 *   npm start itself each say whose they are;
 * - every counter and histogram the "Metrics" tables list exists in the
 *   first scrape of a fresh process, each counter at 0 for every label value
 *   the table names; the process series (CPU, memory, heap, event loop) are
 *   there on both processes;
 * - the event loop's p99 is over fixed windows: reading it changes nothing;
 * - METRICS_PORT moves `/metrics` to a listener of its own, and the
 *   process's own port answers 404 there, for the API and the dispatcher;
 * - `npm start` prints its banner with the ports its children reported.
 * Ports are free ones, never fixed.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { jsonLine } from "@school/runtime/Logging"
import * as RuntimeMetrics from "@school/runtime/Metrics"
import { freePort } from "@school/runtime/Ports"
import { Cause, Duration, Effect, Logger, Option, Redacted, Schema } from "effect"
import { readFileSync } from "node:fs"
import * as Net from "node:net"
import { fileURLToPath } from "node:url"
import parse, { type Family } from "parse-prometheus-text-format"
import { entryPoints, lines, run, runUntil, startApi, startDispatcher } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

const get = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

/** A scrape that must answer 200 in the Prometheus text format: its families. */
const scrape = (url: string) =>
  Effect.gen(function*() {
    const reply = yield* get(url)
    assert.strictEqual(reply.status, 200, `${url}: ${reply.text}`)
    assert.strictEqual(reply.headers.get("content-type"), CONTENT_TYPE)
    return parse(reply.text)
  })

// ---------------------------------------------------------------------------
// What docs/operations.md "Metrics" lists
// ---------------------------------------------------------------------------

const DOC = readFileSync(fileURLToPath(new URL("../../docs/operations.md", import.meta.url)), "utf8")

interface Listed {
  readonly name: string
  readonly type: string
  /** A counter's label and the values the table names for it, each a series at 0 from the start. */
  readonly values: Option.Option<{ readonly label: string; readonly values: ReadonlyArray<string> }>
}

/** The rows of the table that follows `heading` in the "Metrics" section. */
const listed = (heading: string): ReadonlyArray<Listed> => {
  const start = DOC.indexOf("\n## Metrics\n")
  const section = DOC.slice(start, DOC.indexOf("\n## ", start + 1))
  const table = section.slice(section.indexOf(`\n${heading}`)).split("\n\n")[1] ?? ""
  return table.split("\n").flatMap((row) => {
    const cells = row.split(" | ")
    const name = /^\| `([a-z_0-9]+)`$/.exec(cells[0] ?? "")?.[1]
    if (name === undefined) return []
    const type = (cells[1] ?? "").trim()
    const labels = type === "counter" && cells.length > 3 ? cells[2] ?? "" : ""
    const named = /^`([a-z_]+)`:/.exec(labels)
    const tokens = [...labels.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? "")
    return [{
      name,
      type,
      values: named === null ? Option.none() : Option.some({ label: named[1] ?? "", values: tokens.slice(1) })
    }]
  })
}

const API_SERIES = [...listed("API ("), ...listed("Both processes, read at each scrape")]
const DISPATCHER_SERIES = [...listed("Dispatcher ("), ...listed("Both processes, read at each scrape")]

/** Every listed series is in the scrape with its type; counters at 0, for every value the table names. */
const assertFromTheStart = (families: ReadonlyArray<Family>, series: ReadonlyArray<Listed>) => {
  for (const one of series) {
    const family = families.find((f) => f.name === one.name)
    assert.isDefined(family, `${one.name} is in the first scrape`)
    assert.strictEqual(family!.type, one.type.toUpperCase(), `type of ${one.name}`)
    assert.isAbove(family!.metrics.length, 0, `${one.name} has a series`)
    if (one.type !== "counter" || one.name === "process_cpu_seconds_total") continue
    for (const sample of family!.metrics) assert.strictEqual(Number(sample.value), 0, `${one.name} starts at 0`)
    if (Option.isSome(one.values)) {
      const { label, values } = one.values.value
      const present = family!.metrics.map((sample) => sample.labels?.[label])
      assert.includeMembers(present, [...values], `${one.name} has a series for each ${label}`)
    }
  }
}

const valueOf = (families: ReadonlyArray<Family>, name: string): number => {
  const family = families.find((f) => f.name === name)
  assert.isDefined(family, name)
  return Number(family!.metrics[0]?.value)
}

// ---------------------------------------------------------------------------
// JSON log lines
// ---------------------------------------------------------------------------

const LogLine = Schema.Struct({
  message: Schema.String,
  level: Schema.String,
  service: Schema.Literals(["api", "dispatcher", "cli"]),
  fields: Schema.optional(Schema.Record(Schema.String, Schema.Unknown)),
  cause: Schema.optional(Schema.String)
})
const decodeLine = Schema.decodeUnknownSync(Schema.fromJsonString(LogLine))

/** What `jsonLine(service)` writes for what `self` logs. */
const written = <A>(service: "api" | "dispatcher" | "cli", self: Effect.Effect<A>) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const logger = jsonLine(service)
    yield* self.pipe(Effect.provide(Logger.layer([Logger.make((options) => void out.push(logger.log(options)))])))
    return out.map((line) => decodeLine(line))
  })

describe("JSON log lines", () => {
  it.effect("name the service; a call with several values has a string message and its objects in fields", () =>
    Effect.gen(function*() {
      const [several, plain, failed] = yield* written(
        "dispatcher",
        Effect.andThen(
          Effect.logInfo("dispatcher ready;", 3, { port: 3001 }, [1, 2], { timeout: "10s" }, Redacted.make("secret")),
          Effect.andThen(Effect.logInfo("plain"), Effect.logError("failed", Cause.fail("boom")))
        )
      )
      assert.deepStrictEqual(several, {
        message: "dispatcher ready; 3 [1,2] <redacted>",
        level: "INFO",
        service: "dispatcher",
        fields: { port: 3001, timeout: "10s" }
      })
      assert.deepStrictEqual(plain, { message: "plain", level: "INFO", service: "dispatcher" })
      assert.strictEqual(failed?.message, "failed")
      assert.include(failed?.cause ?? "", "boom")
    }))

  it.effect("a value that is not a string alone is still a string message", () =>
    Effect.gen(function*() {
      const [objectOnly, numberOnly] = yield* written("api", Effect.andThen(Effect.logInfo({ n: 1 }), Effect.logInfo(42)))
      assert.deepStrictEqual(objectOnly, { message: "", level: "INFO", service: "api", fields: { n: 1 } })
      assert.deepStrictEqual(numberOnly, { message: "42", level: "INFO", service: "api" })
    }))
})

// ---------------------------------------------------------------------------
// The event loop's p99: fixed windows, never reset by a read
// ---------------------------------------------------------------------------

describe("the event loop's p99", () => {
  it.live("is the last complete window's: a loop blocked shows, and reading it again and again changes nothing", () =>
    Effect.gen(function*() {
      yield* RuntimeMetrics.processGaugesWith({ window: Duration.seconds(2) })
      const p99 = Effect.map(RuntimeMetrics.render, (text) => {
        const families = parse(text)
        const value = valueOf(families, "nodejs_eventloop_lag_p99_seconds")
        assert.strictEqual(valueOf(families, "nodejs_eventloop_delay_p99_seconds"), value, "the earlier name, the same value")
        return value
      })
      assert.strictEqual(yield* p99, 0, "nothing before the first window closes")
      // Blocks this process's event loop 150 ms at a time, as CPU-bound handlers would: a p99 sees it.
      for (let i = 0; i < 8; i++) {
        yield* Effect.sleep("30 millis")
        yield* Effect.sync(() => {
          const until = Date.now() + 150
          while (Date.now() < until) {
            // busy
          }
        })
      }
      // Once the window that saw it closes (at about 2 s), it shows, until the next one closes.
      const started = Date.now()
      let seen = yield* p99
      while (seen < 0.1 && Date.now() - started < 5_000) {
        yield* Effect.sleep("50 millis")
        seen = yield* p99
      }
      assert.isAtLeast(seen, 0.1)
      const reads = [seen]
      for (let i = 0; i < 5; i++) reads.push(yield* p99)
      assert.deepStrictEqual(new Set(reads).size, 1, `no read resets it: ${reads}`)
    }).pipe(Effect.scoped), 15_000)
})

// ---------------------------------------------------------------------------
// The processes
// ---------------------------------------------------------------------------

describe("a malformed METRICS_PORT", () => {
  it.live.each([
    ["api", entryPoints.api],
    ["dispatcher", entryPoints.dispatcher],
    ["npm start", entryPoints.start]
  ] as const)("%s: one line naming it, exit 1", ([, script]) =>
    Effect.gen(function*() {
      const result = yield* run(script, [], { METRICS_PORT: "9e3", DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" })
      assert.strictEqual(result.code, 1, result.stderr)
      assert.strictEqual(result.stdout, "")
      assert.strictEqual(result.stderr, `invalid setting METRICS_PORT: expected an integer 1..65535, got "9e3"\n`)
    }), 30_000)
})

layer(TestDatabase.layer, { excludeTestServices: true })("metrics of the processes", (it) => {
  it.effect("METRICS_PORT in use: the API says so in one error line naming it, no listening line, exit 1", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const held = yield* Effect.acquireRelease(
        Effect.callback<Net.Server>((resume) => {
          const server = Net.createServer()
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const address = held.address()
      const metricsPort = address !== null && typeof address === "object" ? address.port : 0
      const result = yield* run(entryPoints.api, [], {
        DATABASE_URL: database.url,
        PORT: String(yield* freePort),
        METRICS_PORT: String(metricsPort),
        LOG_FORMAT: "json",
        WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString("base64")
      })
      assert.strictEqual(result.code, 1, result.stderr)
      assert.notMatch(result.stderr, /listening/i)
      const refusal = lines(result.stderr).map((line) => decodeLine(line)).filter((line) => line.level === "ERROR")
      assert.deepStrictEqual(refusal.map((line) => line.message), [
        `cannot listen on 127.0.0.1:${metricsPort}: the address is already in use (EADDRINUSE); choose another METRICS_PORT or stop what listens there`
      ])
    }).pipe(Effect.scoped), 60_000)

  it.effect("the first scrape of each process has every listed series, counters at 0 for each named label value", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* freePort
      yield* startApi(database.url, port)
      const dispatcher = yield* startDispatcher(database.url)
      const api = yield* scrape(`http://127.0.0.1:${port}/metrics`)
      assertFromTheStart(api, API_SERIES)
      const health = api.find((f) => f.name === "http_server_requests_total")?.metrics.map((m) => m.labels?.["route"])
      assert.includeMembers(health ?? [], ["/health/live", "/health/ready", "/metrics"])
      assertFromTheStart(yield* scrape(`http://127.0.0.1:${dispatcher.port}/metrics`), DISPATCHER_SERIES)
      for (const name of ["process_cpu_seconds_total", "nodejs_heap_used_bytes", "nodejs_eventloop_lag_p99_seconds"]) {
        assert.isTrue(API_SERIES.some((one) => one.name === name), `${name} is documented`)
      }
      assert.isAbove(valueOf(api, "process_cpu_seconds_total"), 0)
      assert.isAbove(valueOf(api, "nodejs_heap_used_bytes"), 1_000_000)
    }).pipe(Effect.scoped), 60_000)

  it.effect("METRICS_PORT: /metrics on its own listener only, 404 on the API's and the dispatcher's own ports", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* freePort
      const apiMetrics = yield* freePort
      const dispatcherMetrics = yield* freePort
      yield* startApi(database.url, port, { METRICS_PORT: String(apiMetrics) })
      const dispatcher = yield* startDispatcher(database.url, { METRICS_PORT: String(dispatcherMetrics) })

      assertFromTheStart(yield* scrape(`http://127.0.0.1:${apiMetrics}/metrics`), API_SERIES)
      // The API's public port: the same 404 as a path that names nothing.
      const onPublic = yield* get(`http://127.0.0.1:${port}/metrics`)
      const unknown = yield* get(`http://127.0.0.1:${port}/no-such-path`)
      assert.strictEqual(onPublic.status, 404)
      assert.strictEqual(onPublic.text, unknown.text)
      assert.strictEqual(onPublic.headers.get("content-type"), unknown.headers.get("content-type"))
      assert.isNotNull(onPublic.headers.get("x-request-id"))
      const elsewhere = yield* get(`http://127.0.0.1:${apiMetrics}/api/public/v1/students`)
      assert.strictEqual(elsewhere.status, 404)
      assert.isNotNull(elsewhere.headers.get("x-request-id"))

      // The dispatcher's own port.
      assert.strictEqual((yield* get(`http://127.0.0.1:${dispatcher.port}/metrics`)).status, 404)
      assert.strictEqual((yield* get(`http://127.0.0.1:${dispatcher.port}/health/live`)).status, 200)
      assertFromTheStart(yield* scrape(`http://127.0.0.1:${dispatcherMetrics}/metrics`), DISPATCHER_SERIES)
    }).pipe(Effect.scoped), 60_000)

  it.effect("npm start, LOG_FORMAT=json: every line names its process and has a string message; the banner has the children's ports", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* freePort
      const metricsPort = yield* freePort
      const result = yield* runUntil(
        entryPoints.start,
        { DATABASE_URL: database.url, PORT: String(port), DISPATCHER_PORT: "0", METRICS_PORT: String(metricsPort), LOG_FORMAT: "json" },
        "Ctrl-C stops everything",
        "SIGTERM",
        (output) => {
          const urls = /^\s*Metrics\s+(\S+) \(API\), (\S+) \(dispatcher\)$/m.exec(output)
          return Effect.gen(function*() {
            assert.isNotNull(urls, output)
            return {
              api: yield* scrape(urls![1] ?? ""),
              dispatcher: yield* scrape(urls![2] ?? ""),
              onPublic: (yield* get(`http://127.0.0.1:${port}/metrics`)).status,
              dispatcherUrl: urls![2] ?? ""
            }
          })
        }
      )
      assert.isTrue(result.becameReady, result.stderr)
      assert.strictEqual(result.code, 0, result.stderr)
      const seen = Option.getOrThrow(result.result)
      assert.strictEqual(seen.onPublic, 404)
      assert.isDefined(seen.api.find((f) => f.name === "api_rate_limit_rejections_total"))
      assert.isDefined(seen.dispatcher.find((f) => f.name === "webhook_deliveries_total"))
      assert.include(result.stdout, `http://127.0.0.1:${metricsPort}/metrics (API)`)

      // Every line on stderr is a JSON line naming its process, its message a string.
      const logged = lines(result.stderr).map((line) => decodeLine(line))
      assert.includeMembers([...new Set(logged.map((line) => line.service))], ["api", "dispatcher", "cli"])
      assert.isTrue(logged.some((line) => line.service === "cli" && line.message === "empty database: seeding the demo school"))
      assert.isTrue(logged.some((line) => line.service === "api" && line.message.startsWith("public API listening")))
      // A call with several values: the message, then the ready line's fields, with the port the banner shows.
      const ready = logged.find((line) => line.service === "dispatcher" && line.message.startsWith("dispatcher ready"))
      assert.isDefined(ready, result.stderr)
      const dispatcherPort = ready!.fields?.["port"]
      assert.isNumber(dispatcherPort)
      assert.strictEqual(seen.dispatcherUrl, `http://127.0.0.1:${dispatcherPort}/metrics`)
    }), 90_000)
})
