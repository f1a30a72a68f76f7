/**
 * Requests the HTTP layer answers before any route (docs/decisions.md
 * "Requests and responses"), over raw TCP sockets: what Node's parser
 * refuses (header fields or URL too large, too many headers, the smuggling
 * shapes CL+TE and two Content-Lengths, a bad Transfer-Encoding, a garbage
 * request line) and what HTTP/1.1 forbids (no Host, two Hosts) is answered
 * in the envelope (400 bad_request, 431 request_header_fields_too_large),
 * never with an empty body, and the connection is closed; generated
 * requests around the limits always get an envelope or a success, never
 * silence or a hang.
 *
 * The server is TestServer, which listens on the API's own Node server
 * (`createApiServer`): the parser's answers belong to the Node server, not
 * to the routes.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Data, Effect, Layer, Schema } from "effect"
import { connect } from "node:net"
import { ErrorReply, JSON_CONTENT_TYPE, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class ApiPort extends Context.Service<ApiPort, { readonly port: number; readonly key: string }>()("test/api/http-parser/ApiPort") {
  static readonly layer = Layer.effect(
    ApiPort,
    Effect.gen(function*() {
      const server = yield* TestServer
      const school = yield* Fixtures.school("pro", "Parser")
      return ApiPort.of({
        port: Number(new URL(server.baseUrl).port),
        key: yield* Fixtures.key(school.schoolId, { scope: "write" })
      })
    })
  )
}

const Env = ApiPort.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

interface Reply {
  readonly status: number
  readonly headers: ReadonlyMap<string, string>
  readonly body: string
  /** The server closed the connection after the reply. */
  readonly closed: boolean
}

class NoReply extends Data.TaggedError("NoReply")<{ readonly received: string; readonly reason: string }> {}

/**
 * Sends `request` as bytes on a fresh connection and reads one HTTP/1.1
 * response (Content-Length framed, as every response of this API), or what
 * came before the server closed. No reply within `timeoutMs` is a hang.
 */
const exchange = (port: number, request: string | Uint8Array, timeoutMs = 5_000) =>
  Effect.callback<Reply, NoReply>((resume) => {
    const socket = connect(port, "127.0.0.1")
    let received = Buffer.alloc(0)
    let done = false
    const finish = (closed: boolean, reason: string) => {
      if (done) return
      const text = received.toString("latin1")
      const end = text.indexOf("\r\n\r\n")
      if (end < 0) {
        if (!closed) return
        done = true
        socket.destroy()
        return resume(Effect.fail(new NoReply({ received: text, reason })))
      }
      const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n")
      const headers = new Map<string, string>()
      for (const line of lines) {
        const at = line.indexOf(":")
        headers.set(line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim())
      }
      const length = Number(headers.get("content-length") ?? "0")
      const body = received.subarray(Buffer.byteLength(text.slice(0, end + 4), "latin1"))
      if (body.length < length && !closed) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resume(Effect.succeed({
        status: Number(statusLine.split(" ")[1]),
        headers,
        body: body.subarray(0, length).toString("utf8"),
        closed: closed || headers.get("connection")?.toLowerCase() === "close"
      }))
    }
    const timer = setTimeout(() => finish(true, "no reply in time (a hang)"), timeoutMs)
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      finish(false, "")
    })
    socket.on("end", () => finish(true, "closed without a reply"))
    socket.on("close", () => finish(true, "closed without a reply"))
    socket.on("error", (error) => finish(true, `socket error ${error.message}`))
    socket.write(request, () => {})
    return Effect.sync(() => {
      clearTimeout(timer)
      socket.destroy()
    })
  })

const decodeEnvelope = Schema.decodeUnknownSync(ErrorReply)

/** An error reply in the envelope: status, JSON content type, code, a message, a request id; the connection closed. */
const expectEnvelope = (reply: Reply, status: number, code: string) => {
  assert.strictEqual(reply.status, status, reply.body)
  assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
  assert.isAbove(reply.body.length, 0)
  const { error } = decodeEnvelope(JSON.parse(reply.body))
  assert.strictEqual(error.code, code)
  assert.isAbove(error.message.length, 0)
  assert.isTrue(reply.closed, "the connection is closed")
  // Even an answer to a request that could not be read carries a (new) request id.
  assert.match(reply.headers.get("x-request-id") ?? "", /^[A-Za-z0-9_-]{22}$/)
}

const CRLF = "\r\n"
const get = (target: string, headers: ReadonlyArray<string>) => `GET ${target} HTTP/1.1${CRLF}${headers.map((h) => h + CRLF).join("")}${CRLF}`
const post = (headers: ReadonlyArray<string>, body: string) =>
  `POST ${V1}/leads HTTP/1.1${CRLF}Host: api${CRLF}${headers.map((h) => h + CRLF).join("")}${CRLF}${body}`

layer(Env, { excludeTestServices: true })("requests the HTTP layer answers before any route", (it) => {
  describe("the probe's requests, in the envelope", () => {
    const cases: ReadonlyArray<readonly [string, string, number, string]> = [
      ["a 60 kB header", get(`${V1}/students`, ["Host: api", `X-Big: ${"a".repeat(60_000)}`]), 431, "request_header_fields_too_large"],
      ["a 100 kB URL", get(`${V1}/students?q=${"a".repeat(100_000)}`, ["Host: api"]), 431, "request_header_fields_too_large"],
      [
        "3,000 headers",
        get(`${V1}/students`, ["Host: api", ...Array.from({ length: 3_000 }, (_, i) => `X-H${i}: 1`)]),
        431,
        "request_header_fields_too_large"
      ],
      ["Content-Length with Transfer-Encoding", post(["Content-Length: 5", "Transfer-Encoding: chunked"], "0\r\n\r\n"), 400, "bad_request"],
      ["two Content-Lengths", post(["Content-Length: 5", "Content-Length: 6"], "hello!"), 400, "bad_request"],
      ["Transfer-Encoding: gzip", post(["Content-Type: application/json", "Transfer-Encoding: gzip"], "abc"), 400, "bad_request"],
      ["Transfer-Encoding: chunked, gzip", post(["Transfer-Encoding: chunked, gzip"], "0\r\n\r\n"), 400, "bad_request"],
      ["no Host", get(`${V1}/students`, []), 400, "bad_request"],
      ["two Hosts", get(`${V1}/students`, ["Host: api", "Host: other"]), 400, "bad_request"],
      ["a garbage request line", `\u0000\u0001garbage${CRLF}${CRLF}`, 400, "bad_request"],
      ["a method without a target", `GET${CRLF}${CRLF}`, 400, "bad_request"],
      ["HTTP/2's preface on HTTP/1.1", `PRI * HTTP/2.0${CRLF}${CRLF}SM${CRLF}${CRLF}`, 400, "bad_request"]
    ]
    it.effect("under /api/crm/ the middleware's 400 is in the back office's envelope: BAD_REQUEST", () =>
      Effect.gen(function*() {
        const { port } = yield* ApiPort
        const reply = yield* exchange(
          port,
          `POST /api/crm/v1/sessions HTTP/1.1${CRLF}Host: api${CRLF}Content-Type: application/json${CRLF}Transfer-Encoding: gzip${CRLF}${CRLF}abc`
        )
        assert.strictEqual(reply.status, 400, reply.body)
        assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
        assert.isTrue(reply.closed, "the connection is closed")
        const body = Schema.decodeUnknownSync(Schema.Struct({ success: Schema.Literal(false), code: Schema.String, message: Schema.String }))(
          JSON.parse(reply.body),
          { onExcessProperty: "error" }
        )
        assert.strictEqual(body.code, "BAD_REQUEST")
        assert.isAbove(body.message.length, 0)
      }))

    for (const [name, request, status, code] of cases) {
      it.effect(`${name}: ${status} ${code}`, () =>
        Effect.gen(function*() {
          const { port } = yield* ApiPort
          expectEnvelope(yield* exchange(port, request), status, code)
        }))
    }

    it.effect("a smuggled second request behind CL+TE never reaches a route: one answer, then the connection closes", () =>
      Effect.gen(function*() {
        const { port, key } = yield* ApiPort
        const smuggled = get(`${V1}/students`, ["Host: api", `Authorization: Bearer ${key}`])
        const reply = yield* exchange(port, post(["Content-Length: 4", "Transfer-Encoding: chunked"], `0${CRLF}${CRLF}${smuggled}`))
        expectEnvelope(reply, 400, "bad_request")
      }))

    it.effect("HTTP/1.0 without Host is still served (Host is required from HTTP/1.1 on)", () =>
      Effect.gen(function*() {
        const { port } = yield* ApiPort
        const reply = yield* exchange(port, `GET /health/live HTTP/1.0${CRLF}${CRLF}`)
        assert.isBelow(reply.status, 400, reply.body)
      }))

    it.effect("a plain request on the same server succeeds", () =>
      Effect.gen(function*() {
        const { key, port } = yield* ApiPort
        const reply = yield* exchange(port, get(`${V1}/students`, ["Host: api", `Authorization: Bearer ${key}`]))
        assert.strictEqual(reply.status, 200, reply.body)
        assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
      }))
  })

  describe("generated requests: an envelope or a success, never an empty body or a hang", () => {
    /** Node's limit on the header section (the target, header names and values) is 16 KiB. */
    const LIMIT = 16 * 1024

    const expectAnswered = (reply: Reply) => {
      if (reply.status < 400) return
      assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE, `${reply.status} ${reply.body}`)
      const { error } = decodeEnvelope(JSON.parse(reply.body))
      assert.isAbove(error.message.length, 0)
    }

    it.effect.prop(
      "header sizes around the limit: a success below it, 431 above it",
      [Schema.Int.check(Schema.isBetween({ minimum: LIMIT - 2_000, maximum: LIMIT + 2_000 }))],
      ([size]) =>
        Effect.gen(function*() {
          const { key, port } = yield* ApiPort
          const head = get(`${V1}/students`, ["Host: api", `Authorization: Bearer ${key}`, "X-Pad: "])
          const padding = Math.max(0, size - head.length)
          const request = get(`${V1}/students`, ["Host: api", `Authorization: Bearer ${key}`, `X-Pad: ${"p".repeat(padding)}`])
          const reply = yield* exchange(port, request)
          expectAnswered(reply)
          if (request.length > LIMIT + 100) expectEnvelope(reply, 431, "request_header_fields_too_large")
          if (request.length < LIMIT - 100) assert.strictEqual(reply.status, 200, reply.body)
        }),
      { timeout: 60_000, arbitrary: { runs: 30 } }
    )

    it.effect.prop(
      "header counts around the limits: an envelope or a success",
      [Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4_000 })), Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 12 }))],
      ([count, width]) =>
        Effect.gen(function*() {
          const { key, port } = yield* ApiPort
          const extra = Array.from({ length: count }, (_, i) => `X-${i}: ${"v".repeat(width)}`)
          const headers = ["Host: api", `Authorization: Bearer ${key}`, ...extra]
          const request = get(`${V1}/students`, headers)
          const reply = yield* exchange(port, request)
          expectAnswered(reply)
          // Node counts the target and each header's name and value against its limit, not the
          // ": " and CRLF between them, so with many short headers the request's own length
          // runs 4 bytes a header ahead of what is counted.
          const counted = V1.length + "/students".length + headers.reduce((n, header) => n + header.length - 2, 0)
          if (counted > LIMIT + 100) expectEnvelope(reply, 431, "request_header_fields_too_large")
        }),
      { timeout: 60_000, arbitrary: { runs: 30 } }
    )

    it.effect.prop(
      "garbage request lines: an envelope or a success",
      [Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 255 }))).check(Schema.isMaxLength(200))],
      ([bytes]) =>
        Effect.gen(function*() {
          const { port } = yield* ApiPort
          const request = new Uint8Array([...bytes, ...new TextEncoder().encode(`${CRLF}Host: api${CRLF}${CRLF}`)])
          const reply = yield* exchange(port, request)
          expectAnswered(reply)
        }),
      { timeout: 60_000, arbitrary: { runs: 60 } }
    )

    const Framing = Schema.Struct({
      // Each Content-Length is the body's length less 0..3 bytes (the rest is a next, pipelined request):
      // one longer than the body would leave the server rightly waiting for the bytes still owed.
      shortBy: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 }))).check(Schema.isMaxLength(3)),
      transferEncoding: Schema.UndefinedOr(Schema.Literals(["chunked", "gzip", "chunked, gzip", "gzip, chunked", "identity", "Chunked", " chunked", "x"])),
      body: Schema.Literals(["", "0\r\n\r\n", "{\"phone\":\"12345\"}", "5\r\nhello\r\n0\r\n\r\n"])
    })

    it.effect.prop(
      "Content-Length / Transfer-Encoding combinations: an envelope or a success; CL with TE and unequal CLs are 400 bad_request",
      [Framing],
      ([framing]) =>
        Effect.gen(function*() {
          const { key, port } = yield* ApiPort
          // A chunked body always ends (an empty one is the last chunk), or the server rightly waits for it.
          const chunked = /chunked\s*$/i.test(framing.transferEncoding ?? "")
          const body = chunked && framing.body === "" ? `0${CRLF}${CRLF}` : framing.body
          const contentLengths = framing.shortBy.map((n) => Math.max(0, body.length - n))
          const headers = [
            `Authorization: Bearer ${key}`,
            "Content-Type: application/json",
            `Idempotency-Key: parser-${Math.random().toString(36).slice(2)}`,
            ...contentLengths.map((n) => `Content-Length: ${n}`),
            ...(framing.transferEncoding === undefined ? [] : [`Transfer-Encoding: ${framing.transferEncoding}`])
          ]
          const reply = yield* exchange(port, post(headers, body))
          expectAnswered(reply)
          const distinct = new Set(contentLengths)
          if (framing.transferEncoding !== undefined && contentLengths.length > 0) {
            expectEnvelope(reply, 400, "bad_request")
          }
          if (distinct.size > 1) expectEnvelope(reply, 400, "bad_request")
        }),
      { timeout: 60_000, arbitrary: { runs: 60 } }
    )
  })
})
