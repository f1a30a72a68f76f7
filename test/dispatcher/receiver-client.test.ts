/**
 * The receiver client (libs/runtime/src/Receiver.ts; docs/decisions.md
 * "Webhooks") against real receivers on loopback, no database: an attempt
 * signed with the delivery's opaque id; at most 4 KiB of a body read; a 3xx
 * not followed; a time-out covering the whole attempt, after which the
 * request is closed (the receiver sees its connection end), as it is when
 * the attempt is interrupted; a response cut off; a complete answer on a
 * connection the receiver closes after each answer (the next request, on
 * the stale pooled connection, goes again on a new one); a refused
 * connection; the connection going to the address that was checked (a name only the
 * injected resolver knows, resolved once); a name or literal resolving to
 * a private address refused without a connection; and whose failure each
 * is (`ours`): the receiver's for NXDOMAIN, refusals, time-outs of the
 * exchange; ours for our resolver failing or silent. `ownFailure` says
 * which error codes are ours.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer } from "effect"
import * as Signature from "@school/domain/WebhookSignature"
import * as ReceiverHosts from "@school/runtime/ReceiverHosts"
import type { LookupAddress } from "node:dns"
import * as Net from "node:net"
import { ownFailure, Receiver, type ReceiverOptions, RESPONSE_BODY_LIMIT } from "../../libs/runtime/src/Receiver.ts"
import { closeMidResponse, hang, ok, redirect, startReceiver, status } from "../support/Receivers.ts"

const OPTIONS: ReceiverOptions = { concurrency: 4, timeout: Duration.millis(500), allowInsecureUrls: true }

/** The client built in the test's scope, over `lookup` (default: the system resolver). */
const client = (options: Partial<ReceiverOptions> & { readonly lookup?: ReceiverHosts.Lookup } = {}) =>
  Effect.gen(function*() {
    const { lookup, ...rest } = options
    const settings = { ...OPTIONS, ...rest }
    const hosts = ReceiverHosts.ReceiverHosts.layer({
      allowInsecureUrls: settings.allowInsecureUrls,
      ...(lookup === undefined ? {} : { lookup })
    })
    const context = yield* Layer.build(Receiver.layerNoDeps(settings).pipe(Layer.provide(hosts)))
    return Context.get(context, Receiver)
  })

const post = (url: string, body = `{"n":1}`) => ({ url, headers: { "content-type": "application/json" }, body })

/** Waits until `check` holds (polling every 10 ms), at most `ms`. */
const eventually = (check: () => boolean, ms = 2_000) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (!check()) {
      if (Date.now() - started > ms) return assert.fail(`not within ${ms} ms`)
      yield* Effect.sleep("10 millis")
    }
  })

/** A port on 127.0.0.1 where nothing listens. */
const closedPort = Effect.callback<number>((resume) => {
  const server = Net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = address !== null && typeof address === "object" ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

const coded = (code: string): Error => Object.assign(new Error(`getaddrinfo ${code}`), { code })

describe("the receiver client", () => {
  it.live("an attempt: signed with this attempt's time and the delivery's opaque id; 2xx is delivered", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver(() => status(200, "thanks"))
      const receiverClient = yield* client()
      const deliveryId = `msg_${"0".repeat(31)}7`
      const body = Signature.deliveryBody({ event: "student.created", accountId: 7, payloadJson: `{"student_id":1}`, timestamp: "2026-01-01T00:00:00+00:00" })
      const at = new Date("2026-01-01T00:00:05Z")
      const outcome = yield* receiverClient.postAttempt({ url: receiver.url, secret: "whsec_c2VjcmV0", deliveryId, event: "student.created", body, at })
      assert.deepStrictEqual({ ...outcome, durationMs: 0 }, {
        ok: true,
        responseCode: 200,
        error: null,
        detail: null,
        responseBody: "thanks",
        durationMs: 0,
        ours: false
      })
      const [request] = receiver.received
      assert.strictEqual(request?.body, body)
      assert.strictEqual(request?.headers["webhook-id"], deliveryId)
      assert.strictEqual(request?.headers["x-service-delivery"], deliveryId)
      assert.strictEqual(request?.headers["webhook-timestamp"], String(at.getTime() / 1000))
      assert.strictEqual(request?.headers["webhook-signature"], Signature.standardSignature("whsec_c2VjcmV0", deliveryId, at.getTime() / 1000, body))
      assert.strictEqual(request?.headers["x-service-signature"], Signature.serviceSignature("whsec_c2VjcmV0", body))
    }))

  it.live("a non-2xx answer is a failure with its code; at most 4 KiB of a body is kept", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver((index) => index === 0 ? status(503, "x".repeat(100_000)) : status(410))
      const receiverClient = yield* client()
      const big = yield* receiverClient.send(post(receiver.url))
      assert.strictEqual(big.ok, false)
      assert.strictEqual(big.responseCode, 503)
      assert.strictEqual(big.error, null)
      assert.strictEqual(big.ours, false)
      assert.strictEqual(big.responseBody?.length, RESPONSE_BODY_LIMIT)
      const gone = yield* receiverClient.send(post(receiver.url))
      assert.deepStrictEqual([gone.ok, gone.responseCode, gone.responseBody], [false, 410, ""])
    }))

  it.live("a redirect is not followed", () =>
    Effect.gen(function*() {
      const target = yield* startReceiver()
      const receiver = yield* startReceiver(() => redirect(target.url, 307))
      const outcome = yield* (yield* client()).send(post(receiver.url))
      assert.deepStrictEqual([outcome.ok, outcome.responseCode, outcome.ours], [false, 307, false])
      assert.strictEqual(target.connections(), 0)
    }))

  it.live("the time-out covers the whole attempt; then the request is closed; the receiver's failure", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver(() => hang)
      const receiverClient = yield* client({ timeout: Duration.millis(300) })
      const outcome = yield* receiverClient.send(post(receiver.url))
      assert.deepStrictEqual([outcome.ok, outcome.error, outcome.ours], [false, "timeout", false])
      assert.isAtLeast(outcome.durationMs, 290)
      assert.isBelow(outcome.durationMs, 1_000)
      yield* eventually(() => receiver.openConnections() === 0)
      assert.deepStrictEqual(yield* receiverClient.sockets, { active: 0, idle: 0 })
    }))

  it.live("an interrupted attempt closes its request", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver(() => hang)
      const receiverClient = yield* client({ timeout: Duration.seconds(30) })
      const fiber = yield* Effect.forkChild(receiverClient.send(post(receiver.url)))
      yield* receiver.waitFor(1, 2_000)
      assert.strictEqual(receiver.openConnections(), 1)
      yield* Fiber.interrupt(fiber)
      yield* eventually(() => receiver.openConnections() === 0)
    }))

  it.live("a response cut off is connection_closed with its code; a refused connection is connection_refused", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver(() => closeMidResponse)
      const receiverClient = yield* client()
      const cut = yield* receiverClient.send(post(receiver.url))
      assert.deepStrictEqual([cut.ok, cut.error, cut.responseCode, cut.ours], [false, "connection_closed", 200, false])
      const port = yield* closedPort
      const refused = yield* receiverClient.send(post(`http://127.0.0.1:${port}/hook`))
      assert.deepStrictEqual([refused.ok, refused.error, refused.ours], [false, "connection_refused", false])
    }))

  it.live("a complete answer whose connection closes at once is delivered", () =>
    Effect.gen(function*() {
      const port = yield* Effect.acquireRelease(
        Effect.callback<{ readonly server: Net.Server; readonly port: number }>((resume) => {
          const server = Net.createServer((socket) => {
            socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"))
          })
          server.listen(0, "127.0.0.1", () => {
            const address = server.address()
            resume(Effect.succeed({ server, port: address !== null && typeof address === "object" ? address.port : 0 }))
          })
        }),
        ({ server }) => Effect.callback<void>((resume) => { server.close(() => resume(Effect.void)) })
      ).pipe(Effect.map(({ port }) => port))
      const receiverClient = yield* client()
      for (let i = 0; i < 20; i++) {
        const outcome = yield* receiverClient.send(post(`http://127.0.0.1:${port}/hook`))
        assert.deepStrictEqual([outcome.ok, outcome.responseCode, outcome.responseBody, outcome.error], [true, 200, "ok", null])
      }
    }))

  it.live("a name is resolved once, by the client's resolver, and the connection goes to the checked address", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      const asked: Array<string> = []
      const lookup: ReceiverHosts.Lookup = (host) =>
        Effect.sync(() => {
          asked.push(host)
          return [{ address: "127.0.0.1", family: 4 } satisfies LookupAddress]
        })
      const receiverClient = yield* client({ lookup })
      // Only the injected resolver knows this name: the system's would say ENOTFOUND.
      const outcome = yield* receiverClient.send(post(`http://hooks.receiver.test:${receiver.port}/in`))
      assert.isTrue(outcome.ok, outcome.detail ?? "")
      assert.deepStrictEqual(asked, ["hooks.receiver.test"])
      assert.strictEqual(receiver.received[0]?.headers.host, `hooks.receiver.test:${receiver.port}`)
    }))

  it.live("a name or literal resolving to a private address is refused, no connection made", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      const lookup: ReceiverHosts.Lookup = (host) =>
        Effect.succeed(host === "rebind.receiver.test"
          ? [{ address: "93.184.215.14", family: 4 }, { address: "127.0.0.1", family: 4 }]
          : [{ address: "127.0.0.1", family: 4 }])
      const strict = yield* client({ allowInsecureUrls: false, lookup })
      for (const url of [`https://private.receiver.test:${receiver.port}/in`, `https://rebind.receiver.test:${receiver.port}/in`, `https://127.0.0.1:${receiver.port}/in`]) {
        const outcome = yield* strict.send(post(url))
        assert.deepStrictEqual([outcome.ok, outcome.error, outcome.ours], [false, "blocked_address", false], url)
      }
      const insecure = yield* strict.send(post(`http://hooks.receiver.test:${receiver.port}/in`))
      assert.deepStrictEqual([insecure.error, insecure.ours], ["invalid_url", false])
      assert.strictEqual(receiver.connections(), 0)
    }))

  it.live("NXDOMAIN is the receiver's; our resolver failing or silent is ours", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      const url = `http://hooks.receiver.test:${receiver.port}/in`
      const nx = yield* (yield* client({ lookup: ReceiverHosts.lookupFrom(() => Promise.reject(coded("ENOTFOUND"))) })).send(post(url))
      assert.deepStrictEqual([nx.error, nx.ours], ["dns_error", false])
      const again = yield* (yield* client({ lookup: ReceiverHosts.lookupFrom(() => Promise.reject(coded("EAI_AGAIN"))) })).send(post(url))
      assert.deepStrictEqual([again.error, again.ours], ["dns_error", true])
      const silent = yield* (yield* client({ timeout: Duration.millis(200), lookup: () => Effect.never })).send(post(url))
      assert.deepStrictEqual([silent.error, silent.ours], ["dns_error", true])
      assert.include(silent.detail ?? "", "resolver did not answer")
      assert.strictEqual(receiver.connections(), 0)
    }))

  it("ownFailure: which error codes are ours", () => {
    for (const code of ["EMFILE", "ENFILE", "ENOBUFS", "ENOMEM", "EADDRNOTAVAIL"]) {
      assert.isTrue(ownFailure(code, "connection"), code)
      assert.isTrue(ownFailure(code, "resolution"), code)
    }
    for (const code of ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE", "ERR_TLS_CERT_ALTNAME_INVALID", ""]) {
      assert.isFalse(ownFailure(code, "connection"), code)
    }
    for (const code of ["EAI_AGAIN", "EAI_FAIL", "ESERVFAIL", "ECONNREFUSED", "ETIMEOUT"]) {
      assert.isTrue(ownFailure(code, "resolution"), code)
    }
    for (const code of ["ENOTFOUND", "ENODATA", ""]) {
      assert.isFalse(ownFailure(code, "resolution"), code)
    }
  })

  it.live("a 2xx is delivered and keeps its connection for the next attempt", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver(() => ok)
      const receiverClient = yield* client()
      for (let i = 0; i < 3; i++) assert.isTrue((yield* receiverClient.send(post(receiver.url))).ok)
      assert.strictEqual(receiver.connections(), 1)
      assert.deepStrictEqual(yield* receiverClient.sockets, { active: 0, idle: 1 })
    }))
})
