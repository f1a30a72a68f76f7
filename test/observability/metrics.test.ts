/**
 * `/metrics` of both real processes (docs/operations.md "Metrics"): after real traffic (a 200, a 404 on a path
 * holding a key and a school id, a 429 from the key's budget, an idempotent
 * replay, a delivered webhook and failed attempts up to the final failure),
 * each scrape is parsed by a real parser (`parse-prometheus-text-format`),
 * and the families, their types, label sets and the values that must have
 * moved are asserted; no label holds a path as sent, a key, a school id, a
 * URL or a delivery id.
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Effect } from "effect"
import parse, { type Family, type Sample } from "parse-prometheus-text-format"
import { V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { startApi, startDispatcher } from "../support/Processes.ts"
import { ok, startReceiver, status } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "../dispatcher/support.ts"

const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

const request = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

const scrape = (url: string) =>
  Effect.gen(function*() {
    const reply = yield* request(url)
    assert.strictEqual(reply.status, 200, reply.text)
    assert.strictEqual(reply.headers.get("content-type"), CONTENT_TYPE)
    return { text: reply.text, families: parse(reply.text) }
  })

const family = (families: ReadonlyArray<Family>, name: string, type: Family["type"]): Family => {
  const found = families.find((f) => f.name === name)
  assert.isDefined(found, `family ${name}`)
  assert.strictEqual(found!.type, type, `type of ${name}`)
  return found!
}

const labelsOf = (sample: Sample) => sample.labels ?? {}

/** The value of the sample whose labels include `labels` (0 when there is none). */
const valueOf = (f: Family, labels: Readonly<Record<string, string>> = {}): number => {
  const sample = f.metrics.find((m) => Object.entries(labels).every(([k, v]) => labelsOf(m)[k] === v))
  return sample === undefined ? 0 : Number(sample.value ?? sample.count)
}

/** Every sample of `f` has exactly the label names `names`. */
const assertLabelNames = (f: Family, names: ReadonlyArray<string>) => {
  assert.isAbove(f.metrics.length, 0, `${f.name} has samples`)
  for (const sample of f.metrics) {
    assert.deepStrictEqual(Object.keys(labelsOf(sample)).sort(), [...names].sort(), `labels of ${f.name}`)
  }
}

/**
 * A histogram's series one by one. The parser folds every series of a
 * histogram family into one (it keeps prom2json's shape, made for a
 * histogram without labels), so its samples are read again from the same
 * text with the family's TYPE line set aside: the parser then gives each
 * `_bucket`, `_sum` and `_count` line with its labels.
 */
const histogramSeries = (text: string, name: string) => {
  const untyped = parse(text.replace(`# TYPE ${name} histogram`, `# TYPE ${name} untyped`))
  // Each series' lines come in turn (buckets, sum, count), so a name recurs as several families.
  const samples = (suffix: string) => untyped.filter((f) => f.name === `${name}${suffix}`).flatMap((f) => f.metrics)
  const key = (labels: Readonly<Record<string, string>>) =>
    JSON.stringify(Object.entries(labels).filter(([k]) => k !== "le").sort())
  const series = new Map<string, { labels: Record<string, string>; buckets: Record<string, number>; count: number; sum: number }>()
  for (const sample of samples("_count")) {
    const labels = { ...labelsOf(sample) }
    series.set(key(labels), { labels, buckets: {}, count: Number(sample.value), sum: 0 })
  }
  for (const sample of samples("_sum")) {
    const found = series.get(key(labelsOf(sample)))
    if (found !== undefined) found.sum = Number(sample.value)
  }
  for (const sample of samples("_bucket")) {
    const found = series.get(key(labelsOf(sample)))
    const le = labelsOf(sample)["le"]
    if (found !== undefined && le !== undefined) found.buckets[le] = Number(sample.value)
  }
  return [...series.values()]
}

/** Every label value of every family, for the privacy checks. */
const labelValues = (families: ReadonlyArray<Family>) =>
  families.flatMap((f) => f.metrics.flatMap((m) => Object.values(labelsOf(m))))

const env = {
  WEBHOOK_ALLOW_INSECURE_URLS: "true",
  WEBHOOK_RETRY_DELAYS: "100ms",
  WEBHOOK_TIMEOUT: "2s"
}

layer(TestDatabase.layer, { excludeTestServices: true })("/metrics", (it) => {
  it.effect("both processes, after real traffic: families, types, labels, values; no key, path, school or URL in a label", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const { schoolId } = yield* Fixtures.school("basic", "Metrics school")
      const writeKey = yield* Fixtures.key(schoolId, { scope: "write" })
      const floodKey = yield* Fixtures.key(schoolId)
      // A lead goes to the school's main funnel: it needs one.
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
      const good = yield* startReceiver(() => ok)
      const bad = yield* startReceiver(() => status(500))
      const goodSub = yield* T.subscription(schoolId, good.url, ["lead.created"])
      const badSub = yield* T.subscription(schoolId, bad.url, ["lead.created"])
      const port = yield* freePort
      yield* startApi(database.url, port)
      const dispatcher = yield* startDispatcher(database.url, env)
      const api = `http://127.0.0.1:${port}`
      const auth = (key: string) => ({ authorization: `Bearer ${key}` })

      // A 200, a 404 on a path holding a key and the school's id, a write and its replay.
      assert.strictEqual((yield* request(`${api}${V1}/students`, { headers: auth(writeKey) })).status, 200)
      const strayPath = `${V1}/${writeKey}/schools/${schoolId}`
      assert.strictEqual((yield* request(`${api}${strayPath}?key=${writeKey}`, { headers: auth(writeKey) })).status, 404)
      const write = {
        method: "POST",
        headers: { ...auth(writeKey), "content-type": "application/json", "idempotency-key": "metrics-lead-1" },
        body: JSON.stringify({ name: "Metric Lead", phone: "+79001234567" })
      }
      assert.strictEqual((yield* request(`${api}${V1}/leads`, write)).status, 201)
      const replay = yield* request(`${api}${V1}/leads`, write)
      assert.strictEqual(replay.status, 201)
      assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
      // The budget of a basic plan is 120 a minute: the 121st request is a 429.
      let limited = 0
      for (let i = 0; i < 125; i++) {
        if ((yield* request(`${api}${V1}/filials`, { headers: auth(floodKey) })).status === 429) limited++
      }
      assert.isAtLeast(limited, 1)

      // The lead's event: delivered to one receiver, failed (then finally) at the other.
      yield* good.waitFor(1, 15_000)
      yield* bad.waitFor(2, 15_000)
      yield* T.eventually(
        "both deliveries finished",
        T.deliveries(schoolId),
        (rows) => rows.length === 2 && rows.every((row) => row.status !== "pending"),
        15_000
      )

      // -- The API ----------------------------------------------------------
      const apiScrape = yield* scrape(`${api}/metrics`)
      const requests = family(apiScrape.families, "http_server_requests_total", "COUNTER")
      assertLabelNames(requests, ["method", "route", "status"])
      assert.isAtLeast(valueOf(requests, { method: "GET", route: `${V1}/students`, status: "200" }), 1)
      assert.isAtLeast(valueOf(requests, { method: "GET", route: "(no route)", status: "404" }), 1)
      assert.isAtLeast(valueOf(requests, { method: "GET", route: `${V1}/filials`, status: "429" }), limited)
      assert.strictEqual(valueOf(requests, { method: "POST", route: `${V1}/leads`, status: "201" }), 2)
      family(apiScrape.families, "http_server_request_duration_seconds", "HISTOGRAM")
      const durations = histogramSeries(apiScrape.text, "http_server_request_duration_seconds")
      for (const series of durations) assert.deepStrictEqual(Object.keys(series.labels).sort(), ["method", "route"])
      const studentsLatency = durations.find((series) => series.labels["route"] === `${V1}/students`)
      assert.isDefined(studentsLatency)
      assert.strictEqual(studentsLatency!.count, 1)
      assert.isAbove(studentsLatency!.sum, 0)
      assert.includeMembers(Object.keys(studentsLatency!.buckets), ["0.001", "0.1", "10", "+Inf"])
      assert.strictEqual(studentsLatency!.buckets["+Inf"], 1)
      const leads = durations.find((series) => series.labels["route"] === `${V1}/leads`)
      assert.deepStrictEqual(leads?.labels, { method: "POST", route: `${V1}/leads` })
      assert.strictEqual(leads?.count, 2)
      // Route labels are templates: each starts with "/" and holds no id, or is "(no route)".
      for (const sample of requests.metrics) {
        const route = labelsOf(sample)["route"] ?? ""
        assert.isTrue(route === "(no route)" || (route.startsWith("/") && !/\/\d+(\/|$)/.test(route)), route)
      }
      const rejections = family(apiScrape.families, "api_rate_limit_rejections_total", "COUNTER")
      assertLabelNames(rejections, ["limit"])
      assert.strictEqual(valueOf(rejections, { limit: "key" }), limited)
      assert.strictEqual(valueOf(rejections, { limit: "sign_in" }), 0)
      assert.strictEqual(valueOf(family(apiScrape.families, "api_idempotent_replays_total", "COUNTER")), 1)
      assert.strictEqual(valueOf(family(apiScrape.families, "api_idempotency_in_progress_total", "COUNTER")), 0)
      const pool = family(apiScrape.families, "db_pool_connections", "GAUGE")
      assertLabelNames(pool, ["state"])
      // Nothing runs now but this scrape, which takes no connection (the idempotency purge may, for a moment).
      assert.isAtMost(valueOf(pool, { state: "in_use" }), 1)
      assert.isAtLeast(valueOf(pool, { state: "idle" }), 1)
      assert.isAtMost(valueOf(pool, { state: "idle" }), 10)
      assert.strictEqual(valueOf(family(apiScrape.families, "db_pool_waiting", "GAUGE")), 0)
      assert.strictEqual(valueOf(family(apiScrape.families, "db_pool_max_connections", "GAUGE")), 10)
      assert.isAbove(valueOf(family(apiScrape.families, "process_resident_memory_bytes", "GAUGE")), 10_000_000)
      const started = valueOf(family(apiScrape.families, "process_start_time_seconds", "GAUGE"))
      assert.isTrue(started > Date.now() / 1000 - 120 && started <= Date.now() / 1000, String(started))
      const loopDelay = valueOf(family(apiScrape.families, "nodejs_eventloop_delay_p99_seconds", "GAUGE"))
      assert.isTrue(loopDelay >= 0 && loopDelay < 5, String(loopDelay))

      // -- The dispatcher -----------------------------------------------------
      const dispatcherScrape = yield* scrape(`http://127.0.0.1:${dispatcher.port}/metrics`)
      const d = dispatcherScrape.families
      const deliveries = family(d, "webhook_deliveries_total", "COUNTER")
      assertLabelNames(deliveries, ["outcome"])
      assert.strictEqual(valueOf(deliveries, { outcome: "delivered" }), 1)
      assert.strictEqual(valueOf(deliveries, { outcome: "retrying" }), 1)
      assert.strictEqual(valueOf(deliveries, { outcome: "failed" }), 1)
      const attempts = family(d, "webhook_attempts_total", "COUNTER")
      assertLabelNames(attempts, ["result"])
      assert.strictEqual(valueOf(attempts, { result: "2xx" }), 1)
      assert.strictEqual(valueOf(attempts, { result: "5xx" }), 2)
      const attemptDuration = family(d, "webhook_attempt_duration_seconds", "HISTOGRAM")
      assert.strictEqual(Number(attemptDuration.metrics[0]?.count), 3)
      assert.strictEqual(Number(attemptDuration.metrics[0]?.buckets?.["+Inf"]), 3)
      assert.strictEqual(valueOf(family(d, "webhook_deliveries_due", "GAUGE")), 0)
      assert.strictEqual(valueOf(family(d, "webhook_oldest_due_delivery_age_seconds", "GAUGE")), 0)
      assert.strictEqual(valueOf(family(d, "webhook_subscriptions_problematic", "GAUGE")), 1)
      assert.strictEqual(valueOf(family(d, "webhook_fanout_lag_seconds", "GAUGE")), 0)
      family(d, "process_resident_memory_bytes", "GAUGE")
      family(d, "nodejs_eventloop_delay_p99_seconds", "GAUGE")

      // -- Privacy and cardinality ---------------------------------------------
      const deliveryIds = (yield* T.deliveries(schoolId)).map((row) => String(row.id))
      const forbidden = [writeKey, floodKey, writeKey.slice(0, 12), strayPath, good.url, bad.url, String(good.port), String(bad.port)]
      for (const text of [apiScrape.text, dispatcherScrape.text]) {
        for (const secret of forbidden) assert.notInclude(text, secret)
      }
      for (const value of [...labelValues(apiScrape.families), ...labelValues(d)]) {
        assert.notStrictEqual(value, String(schoolId), "a school id as a label")
        assert.notInclude(deliveryIds, value, "a delivery id as a label")
        assert.notStrictEqual(value, String(goodSub.id))
        assert.notStrictEqual(value, String(badSub.id))
      }

      yield* T.setStatus(schoolId, goodSub.id, "disabled")
      yield* T.setStatus(schoolId, badSub.id, "disabled")
    }), { timeout: 90_000 })
})
