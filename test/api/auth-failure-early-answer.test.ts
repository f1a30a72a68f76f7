/**
 * The guard's 429 for a blocked client address answered before routing
 * (apps/api/src/Server.ts `EarlyRefusals`; docs/decisions.md "Rate limits")
 * is the answer the bearer middleware gives through the whole request path.
 *
 * Two servers composed as the API process serves (request ids, the access
 * log and the request metrics: `serveMiddleware`), one answering early and
 * one with `answerEarly` off, each with a fresh guard; the same client
 * address spends its failures on each, then sends the same requests: plain
 * blocked requests (answered early), and requests that must take the whole
 * path on both (HEAD, a body, an unknown route, a malformed or a working key,
 * two Host headers). For every request: the same status line, headers and
 * body, byte for byte (the Date, a generated request id and the seconds of
 * Retry-After aside, which the moment decides: both of the latter are checked
 * on their own), the same access line (its timestamp, fiber and duration
 * aside), the same counts in `/metrics`; and the server's `request` listeners
 * (Effect's handler) saw exactly the requests that took the whole path.
 */
import { assert, layer } from "@effect/vitest"
import { AuthFailureGuardOptions, defaultOptions } from "@school/api/AuthFailureGuard"
import { ApiNodeServer, AppRoutes, createApiServer, listenApi, serveApi } from "@school/api/Server"
import { ApiKey } from "@school/domain"
import * as Sql from "@school/persistence/Sql"
import { jsonLine } from "@school/runtime/Logging"
import * as RuntimeMetrics from "@school/runtime/Metrics"
import { ConfigProvider, Context, Duration, Effect, Layer, Logger, Option } from "effect"
import { HttpServer } from "effect/http"
import { createHash } from "node:crypto"
import { connect } from "node:net"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const BURST = 2
const V1 = "/api/public/v1"
/** The address every request here comes from (127/8 is the loopback on Linux). */
const CLIENT = "127.0.9.1"

/** A well-formed key nobody issued, drawn from `seed`. */
const unknownKey = (seed: string) => {
  const hex = createHash("sha256").update(seed).digest("hex")
  return ApiKey.formatApiKey({ prefix: hex.slice(0, ApiKey.PREFIX_LENGTH), secret: hex.slice(8, 8 + ApiKey.SECRET_LENGTH) })
}

/** One request as sent on the wire (`Connection: close`), and whether it must take the whole path. */
interface Case {
  readonly name: string
  readonly early: boolean
  readonly lines: (key: string) => ReadonlyArray<string>
  readonly body?: string
}

const get = (path: string, authorization: string, extra: ReadonlyArray<string> = []) => [
  `GET ${path} HTTP/1.1`,
  "Host: api.example",
  `Authorization: ${authorization}`,
  ...extra
]

const CASES: ReadonlyArray<Case> = [
  { name: "a list", early: true, lines: (key) => get(`${V1}/students?per_page=1`, `Bearer ${key}`) },
  { name: "a route with a parameter", early: true, lines: (key) => get(`${V1}/students/12345`, `Bearer ${key}`) },
  { name: "the scheme in lower case, several spaces", early: true, lines: (key) => get(`${V1}/filials`, `bearer    ${key}`) },
  {
    name: "X-Forwarded-For from a peer that is not a trusted proxy (ignored)",
    early: true,
    lines: (key) => get(`${V1}/groups`, `Bearer ${key}`, ["X-Forwarded-For: 10.1.2.3"])
  },
  { name: "no request id of its own", early: true, lines: (key) => get(`${V1}/lessons?per_page=3`, `Bearer ${key}`) },
  {
    name: "a write without a body",
    early: true,
    lines: (key) => [`POST ${V1}/leads HTTP/1.1`, "Host: api.example", `Authorization: Bearer ${key}`, "Content-Length: 0"]
  },
  {
    name: "a write with a body",
    early: false,
    lines: (key) => [
      `POST ${V1}/leads HTTP/1.1`,
      "Host: api.example",
      `Authorization: Bearer ${key}`,
      "Content-Type: application/json",
      "Idempotency-Key: early-answer-1",
      "Content-Length: 2"
    ],
    body: "{}"
  },
  { name: "HEAD", early: false, lines: (key) => [`HEAD ${V1}/students HTTP/1.1`, "Host: api.example", `Authorization: Bearer ${key}`] },
  { name: "an unknown route", early: false, lines: (key) => get(`${V1}/nothing-here`, `Bearer ${key}`) },
  { name: "a route in another case", early: false, lines: (key) => get(`${V1}/Students`, `Bearer ${key}`) },
  { name: "a malformed key", early: false, lines: () => get(`${V1}/students`, "Bearer svc_nope") },
  {
    name: "two Host headers",
    early: false,
    lines: (key) => [`GET ${V1}/students HTTP/1.1`, "Host: a.example", "Host: b.example", `Authorization: Bearer ${key}`]
  },
  { name: "a route outside the public API", early: false, lines: (key) => get("/health/live", `Bearer ${key}`) },
  { name: "a key that has authenticated (elsewhere)", early: false, lines: (key) => get(`${V1}/filials?per_page=1`, `Bearer ${key}`) },
  { name: "a working key not yet seen to authenticate", early: true, lines: (key) => get(`${V1}/filials`, `Bearer ${key}`) }
]

/** The cases sent with a key that works: the one the server has seen authenticate, and one it has not. */
const keyOf = (entry: Case, index: number, keys: { readonly known: string; readonly unseen: string }) =>
  entry.name === "a key that has authenticated (elsewhere)" || entry.name === "a route outside the public API"
    ? keys.known
    : entry.name === "a working key not yet seen to authenticate"
    ? keys.unseen
    : unknownKey(`case ${index}`)

/** The request id a case sends (none for the case that tests a generated one). */
const requestIdOf = (index: number) => CASES[index]!.name === "no request id of its own" ? undefined : `early-${index}`

/** Sends `text` from CLIENT and reads the whole answer (the server closes the connection). */
const exchange = (port: number, text: string, from = CLIENT) =>
  Effect.callback<string>((resume) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress: from })
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("error", (error) => resume(Effect.die(error)))
    socket.on("close", () => resume(Effect.succeed(Buffer.concat(chunks).toString("latin1"))))
    socket.write(text)
  })

const message = (lines: ReadonlyArray<string>, body = "") => [...lines, "Connection: close", "", ""].join("\r\n") + body

/** The value of a sample of `name` whose labels include `labels`, in a Prometheus text; 0 when none. */
const sample = (text: string, name: string, labels: Readonly<Record<string, string>>): number => {
  const line = text.split("\n").find((line) =>
    line.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))
  )
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
}

const COUNTED = [
  ["http_server_requests_total", { method: "GET", route: `${V1}/students`, status: "429" }],
  ["http_server_requests_total", { method: "GET", route: `${V1}/students/:id`, status: "429" }],
  ["http_server_requests_total", { method: "POST", route: `${V1}/leads`, status: "429" }],
  ["http_server_requests_total", { method: "GET", route: "(no route)", status: "404" }],
  ["http_server_request_duration_seconds_count", { method: "GET", route: `${V1}/filials` }],
  ["api_rate_limit_rejections_total", { limit: "auth_failures" }],
  ["api_rate_limit_rejections_total", { limit: "key" }]
] as const

const counts = Effect.map(RuntimeMetrics.render, (text) => COUNTED.map(([name, labels]) => sample(text, name, labels)))

interface Run {
  /** Per case, the answer as sent. */
  readonly answers: ReadonlyArray<string>
  /** Per case, its access line (JSON), if any. */
  readonly lines: ReadonlyArray<string | undefined>
  /** Per case, whether the server's `request` listeners saw it. */
  readonly seen: ReadonlyArray<boolean>
  /** What COUNTED moved by over the cases. */
  readonly moved: ReadonlyArray<number>
}

/** A server composed as the API process's, with its own guard; the client spends its failures, then sends every case. */
const run = (answerEarly: boolean, url: string, keys: { readonly known: string; readonly unseen: string }) =>
  Effect.scoped(Effect.gen(function*() {
    const logged: Array<string> = []
    const json = jsonLine("api")
    // Built as apps/api/src/main.ts builds it: the listening server first, then the routes served on it.
    const listening = yield* Layer.build(listenApi(createApiServer(Duration.seconds(1)), { port: 0, host: "127.0.0.1" }))
    const served = serveApi(AppRoutes, { accessLog: true, disableListenLog: true }).pipe(
      Layer.provide(Layer.succeedContext(listening)),
      Layer.provide(Layer.succeed(AuthFailureGuardOptions, {
        ...defaultOptions,
        answerEarly,
        budget: Option.some({ burst: BURST, interval: 60_000_000 })
      })),
      Layer.provide(Sql.layer({ url, maxConnections: 4, applicationName: "test-early-answer" })),
      Layer.provide(Logger.layer([Logger.make((options) => void logged.push(json.log(options)))])),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({}))),
      Layer.orDie
    )
    yield* Layer.build(served)
    const address = Context.get(listening, HttpServer.HttpServer).address
    const port = address._tag === "UnixPathAddress" ? 0 : address.port
    // Added after Effect's handler: called for each request the server's `request` listeners see.
    let seenCount = 0
    Context.get(listening, ApiNodeServer).on("request", () => {
      seenCount++
    })
    const elsewhere = yield* exchange(port, message(get(`${V1}/filials?per_page=1`, `Bearer ${keys.known}`)), "127.0.9.2")
    assert.match(elsewhere, /^HTTP\/1\.1 200 /)
    for (let i = 0; i < BURST; i++) {
      const spent = yield* exchange(port, message(get(`${V1}/students`, `Bearer ${unknownKey(`spend ${i}`)}`)))
      assert.match(spent, /^HTTP\/1\.1 401 /)
    }
    const before = yield* counts
    const answers: Array<string> = []
    const seen: Array<boolean> = []
    for (const [index, entry] of CASES.entries()) {
      const seenBefore = seenCount
      const id = requestIdOf(index)
      const lines = [...entry.lines(keyOf(entry, index, keys)), ...(id === undefined ? [] : [`X-Request-Id: ${id}`])]
      answers.push(yield* exchange(port, message(lines, entry.body)))
      seen.push(seenCount > seenBefore)
    }
    // Access lines come after the answers (Effect's handler, the early answers' turn of the event loop).
    yield* Effect.sleep("50 millis")
    const after = yield* counts
    const idOf = (answer: string, index: number) => requestIdOf(index) ?? /\r\nx-request-id: ([^\r]+)\r\n/.exec(answer)?.[1]
    const lineOf = (id: string | undefined) =>
      logged.find((line) => id !== undefined && line.includes(`"request_id":"${id}"`) && line.includes(`"http.route"`))
    return {
      answers,
      lines: answers.map((answer, index) => lineOf(idOf(answer, index))),
      seen,
      moved: after.map((value, i) => value - before[i]!)
    } satisfies Run
  }))

/** The seconds of Retry-After, which the moment of the request decides; checked against the message apart. */
const retryAfter = (answer: string) => {
  const header = /\r\nretry-after: (\d+)\r\n/.exec(answer)?.[1]
  const inMessage = /Retry after (\d+) seconds?\./.exec(answer)?.[1]
  // HEAD: no body to say it.
  if (inMessage !== undefined) assert.strictEqual(header, inMessage, "Retry-After and the message agree")
  return Number(header)
}

/** The answer with what the moment decides set aside: the Date, a generated request id, the seconds to wait. */
const normalized = (answer: string, generatedId: boolean) => {
  let text = answer.replace(/\r\nDate: [^\r]+\r\n/, "\r\nDate: (date)\r\n")
  if (generatedId) text = text.replace(/\r\nx-request-id: [A-Za-z0-9_-]{22}\r\n/, "\r\nx-request-id: (generated)\r\n")
  return text.replace(/\r\nretry-after: \d+\r\n/, "\r\nretry-after: (s)\r\n").replace(/Retry after \d+ seconds?\./, "Retry after (s).")
}

/** The access line with its timestamp, fiber and duration set aside, and a generated request id (it is the answer's). */
const normalizedLine = (line: string | undefined, generatedId: boolean) => {
  if (line === undefined) return undefined
  const { timestamp: _timestamp, fiberId: _fiberId, annotations, message, ...rest } = JSON.parse(line) as {
    readonly timestamp: string
    readonly fiberId: string
    readonly message: string
    readonly annotations: Readonly<Record<string, unknown>>
  }
  const { "http.duration_ms": duration, ...kept } = annotations
  assert.isNumber(duration)
  const id = generatedId ? { request_id: "(generated)" } : {}
  return { ...rest, message: message.replace(/ [\d.]+ms$/, " (ms)"), annotations: { ...kept, ...id } }
}

layer(TestDatabase.layer, { excludeTestServices: true })("a blocked address answered before routing", (it) => {
  it.effect("the same answer, access line and counts as through the router; only plain blocked requests skip it", () =>
    Effect.gen(function*() {
      const { url } = yield* TestDatabase
      const { schoolId } = yield* Fixtures.school("pro", "Early answers")
      const keys = { known: yield* Fixtures.key(schoolId), unseen: yield* Fixtures.key(schoolId) }
      const early = yield* run(true, url, keys)
      const whole = yield* run(false, url, keys)

      for (const [index, entry] of CASES.entries()) {
        const [a, b] = [early.answers[index]!, whole.answers[index]!]
        const generatedId = requestIdOf(index) === undefined
        assert.strictEqual(normalized(a, generatedId), normalized(b, generatedId), entry.name)
        if (/^HTTP\/1\.1 429 /.test(a)) assert.isAtMost(Math.abs(retryAfter(a) - retryAfter(b)), 1, entry.name)
        assert.deepStrictEqual(
          normalizedLine(early.lines[index], generatedId),
          normalizedLine(whole.lines[index], generatedId),
          `${entry.name}: access line`
        )
        assert.isDefined(early.lines[index], `${entry.name}: logged`)
        // Effect's handler saw every request of the server without early answers, and only the others here.
        assert.isTrue(whole.seen[index], `${entry.name}: through the router with answerEarly off`)
        assert.strictEqual(early.seen[index], !entry.early, `${entry.name}: ${entry.early ? "answered early" : "the whole path"}`)
      }
      // The answer itself: the guard's 429 in the envelope, no fields, no X-RateLimit-*.
      const first = early.answers[0]!
      assert.match(first, /^HTTP\/1\.1 429 Too Many Requests\r\ncontent-type: application\/json; charset=utf-8\r\n/)
      assert.match(first, /\r\nx-request-id: early-0\r\n/)
      assert.include(first, `{"error":{"code":"rate_limit_exceeded","message":"Too many failed authentications from this address.`)
      assert.notMatch(first, /x-ratelimit/i)
      assert.match(early.answers[4]!, /\r\nx-request-id: [A-Za-z0-9_-]{22}\r\n/)
      // The same series moved by the same counts: the 429s and their durations, the limit that refused them.
      assert.deepStrictEqual(early.moved, whole.moved)
      // GET /students, GET /students/:id, POST /leads (with and without a body); the early ones and HEAD and the body.
      assert.deepStrictEqual(early.moved.slice(0, 3), [1, 1, 2])
      assert.strictEqual(early.moved[5], CASES.filter((entry) => entry.early).length + 2)
      assert.strictEqual(early.moved[6], 0)
    }), { timeout: 60_000 })
})
