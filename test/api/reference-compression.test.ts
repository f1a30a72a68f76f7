/**
 * The reference pages and the OpenAPI documents on the wire
 * (docs/operations.md "Process endpoints"; apps/api/src/http/CompressedBody.ts):
 * brotli when `Accept-Encoding` takes `br`, else gzip, else the identity
 * bytes, each coding decoding to exactly the same bytes (for the documents,
 * the bytes `OpenApi.fromApi` gives as JSON); a strong ETag per coding,
 * `Vary: Accept-Encoding`, `Cache-Control: no-cache`; `If-None-Match` → 304
 * without a body; HEAD with GET's headers and no body. Requests go through
 * `node:http`, which (unlike fetch) leaves the body as sent.
 *
 * And `CompressedBody.route` on its own: its source is made once, however
 * many requests arrive together first.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import * as CompressedBody from "@school/api/http/CompressedBody"
import { BACK_OFFICE_DOCS_PATH, BACK_OFFICE_OPENAPI_PATH, DOCS_PATH, OPENAPI_PATH } from "@school/api/Server"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { PublicApi } from "@school/domain/api/PublicApi"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { OpenApi } from "effect/http-api"
import { createHash } from "node:crypto"
import * as Http from "node:http"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

interface WireReply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  /** The body exactly as it came over the socket, not decoded. */
  readonly bytes: Buffer
}

/** One request over `node:http`, the body kept as sent. */
const wire = (baseUrl: string, path: string, headers: Readonly<Record<string, string>> = {}, method = "GET") =>
  Effect.promise(() =>
    new Promise<WireReply>((resolve, reject) => {
      const request = Http.request(`${baseUrl}${path}`, { method, headers: { ...headers }, agent: false }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, bytes: Buffer.concat(chunks) }))
        response.on("error", reject)
      })
      request.on("error", reject)
      request.end()
    })
  )

const sha256Tag = (bytes: Uint8Array) => `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 22)}"`

const json = (document: OpenApi.OpenAPISpec) => Buffer.from(JSON.stringify(document), "utf8")

const routes = [
  { path: DOCS_PATH, contentType: "text/html", identity: undefined, page: true },
  { path: BACK_OFFICE_DOCS_PATH, contentType: "text/html", identity: undefined, page: true },
  { path: OPENAPI_PATH, contentType: "application/json; charset=utf-8", identity: json(OpenApi.fromApi(PublicApi)), page: false },
  { path: BACK_OFFICE_OPENAPI_PATH, contentType: "application/json; charset=utf-8", identity: json(OpenApi.fromApi(BackOfficeApi)), page: false }
] as const

/** The headers every answer of these routes carries, whatever its coding. */
const assertCacheHeaders = (reply: WireReply, label: string) => {
  assert.strictEqual(reply.headers["vary"], "accept-encoding", label)
  assert.strictEqual(reply.headers["cache-control"], "no-cache", label)
  assert.match(String(reply.headers["etag"]), /^"[\w-]{22}"$/u, `${label}: a strong ETag`)
}

layer(Env, { excludeTestServices: true, timeout: 60_000 })("reference pages and OpenAPI documents, compressed", (it) => {
  it.effect("br, gzip and identity decode to the same bytes; each coding its own ETag, of the bytes it sends", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      for (const route of routes) {
        const plain = yield* wire(baseUrl, route.path)
        const br = yield* wire(baseUrl, route.path, { "accept-encoding": "gzip, deflate, br" })
        const gzip = yield* wire(baseUrl, route.path, { "accept-encoding": "gzip" })
        const identity = yield* wire(baseUrl, route.path, { "accept-encoding": "identity" })
        for (const [name, reply] of [["none", plain], ["br", br], ["gzip", gzip], ["identity", identity]] as const) {
          const label = `${route.path} (${name})`
          assert.strictEqual(reply.status, 200, label)
          assert.strictEqual(reply.headers["content-type"], route.contentType, label)
          assert.strictEqual(Number(reply.headers["content-length"]), reply.bytes.length, label)
          assertCacheHeaders(reply, label)
          // The ETag is the SHA-256 of the bytes sent in that coding.
          assert.strictEqual(reply.headers["etag"], sha256Tag(reply.bytes), label)
        }
        assert.isUndefined(plain.headers["content-encoding"], route.path)
        assert.isUndefined(identity.headers["content-encoding"], route.path)
        assert.strictEqual(br.headers["content-encoding"], "br", route.path)
        assert.strictEqual(gzip.headers["content-encoding"], "gzip", route.path)

        // One body, three codings.
        assert.isTrue(identity.bytes.equals(plain.bytes), `${route.path}: identity`)
        assert.isTrue(brotliDecompressSync(br.bytes).equals(plain.bytes), `${route.path}: br decodes to the identity bytes`)
        assert.isTrue(gunzipSync(gzip.bytes).equals(plain.bytes), `${route.path}: gzip decodes to the identity bytes`)
        if (route.identity !== undefined) {
          assert.isTrue(plain.bytes.equals(route.identity), `${route.path}: the bytes OpenApi.fromApi gives, as JSON`)
        } else {
          assert.match(plain.bytes.subarray(0, 200).toString("utf8"), /<!doctype html>/iu, route.path)
        }
        assert.strictEqual(new Set([plain, br, gzip].map((reply) => reply.headers["etag"])).size, 3, `${route.path}: an ETag per coding`)
        // Worth it: brotli sends under a quarter of the bytes and fewer than gzip, gzip under a third.
        assert.isBelow(br.bytes.length, plain.bytes.length / 4, `${route.path}: br ${br.bytes.length} of ${plain.bytes.length}`)
        assert.isBelow(br.bytes.length, gzip.bytes.length, `${route.path}: br ${br.bytes.length}, gzip ${gzip.bytes.length}`)
        assert.isBelow(gzip.bytes.length, plain.bytes.length / 3, `${route.path}: gzip ${gzip.bytes.length} of ${plain.bytes.length}`)
        // Compressed once: the same bytes on every request.
        const again = yield* wire(baseUrl, route.path, { "accept-encoding": "br" })
        assert.isTrue(again.bytes.equals(br.bytes), `${route.path}: the same br bytes again`)
      }
    }))

  it.effect("the coding follows Accept-Encoding: q-values, q=0, *, x-gzip", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const cases: ReadonlyArray<readonly [string, string | undefined]> = [
        ["br", "br"],
        ["BR;q=1", "br"],
        ["gzip;q=1, br;q=0.5", "gzip"],
        ["br;q=0, gzip", "gzip"],
        ["br;q=0.8, gzip;q=0.8", "br"],
        ["*", "br"],
        ["*;q=0", undefined],
        ["gzip;q=0, *", "br"],
        ["x-gzip", "gzip"],
        ["deflate", undefined],
        ["identity;q=0", undefined],
        ["br;q=2", undefined],
        ["", undefined]
      ]
      for (const [acceptEncoding, coding] of cases) {
        const reply = yield* wire(baseUrl, OPENAPI_PATH, { "accept-encoding": acceptEncoding })
        assert.strictEqual(reply.status, 200, acceptEncoding)
        assert.strictEqual(reply.headers["content-encoding"], coding, `Accept-Encoding: ${acceptEncoding}`)
      }
    }))

  it.effect("If-None-Match with a coding's ETag: 304, no body, the same ETag and headers", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      for (const route of routes) {
        const replies = {
          br: yield* wire(baseUrl, route.path, { "accept-encoding": "br" }),
          gzip: yield* wire(baseUrl, route.path, { "accept-encoding": "gzip" }),
          identity: yield* wire(baseUrl, route.path)
        }
        for (const [coding, reply] of Object.entries(replies)) {
          const etag = String(reply.headers["etag"])
          const acceptEncoding = coding === "identity" ? "identity" : coding
          for (const ifNoneMatch of [etag, `W/${etag}`, `"stale", ${etag}`, "*"]) {
            const label = `${route.path} ${coding}: If-None-Match ${ifNoneMatch}`
            const revalidated = yield* wire(baseUrl, route.path, { "accept-encoding": acceptEncoding, "if-none-match": ifNoneMatch })
            assert.strictEqual(revalidated.status, 304, label)
            assert.strictEqual(revalidated.bytes.length, 0, label)
            assert.strictEqual(revalidated.headers["etag"], etag, label)
            assertCacheHeaders(revalidated, label)
            assert.isUndefined(revalidated.headers["content-encoding"], label)
            if (route.page) {
              assert.strictEqual(revalidated.headers["content-security-policy"], reply.headers["content-security-policy"], label)
            }
          }
        }
        // A browser that holds the br body and still takes br and gzip: 304 for what it holds.
        const held = yield* wire(baseUrl, route.path, { "accept-encoding": "gzip, br", "if-none-match": String(replies.br.headers["etag"]) })
        assert.strictEqual(held.status, 304, route.path)
        // A body in a coding the request no longer takes, or another body: the whole answer.
        const notTaken = yield* wire(baseUrl, route.path, { "accept-encoding": "identity", "if-none-match": String(replies.br.headers["etag"]) })
        assert.strictEqual(notTaken.status, 200, route.path)
        assert.isTrue(notTaken.bytes.equals(replies.identity.bytes), route.path)
        const stale = yield* wire(baseUrl, route.path, { "accept-encoding": "br", "if-none-match": "\"AAAAAAAAAAAAAAAAAAAAAA\"" })
        assert.strictEqual(stale.status, 200, route.path)
        assert.isTrue(stale.bytes.equals(replies.br.bytes), route.path)
      }
    }))

  it.effect("HEAD: GET's status and headers, no body", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      for (const route of routes) {
        for (const acceptEncoding of ["br", "gzip", "identity"]) {
          const label = `HEAD ${route.path} (${acceptEncoding})`
          const get = yield* wire(baseUrl, route.path, { "accept-encoding": acceptEncoding })
          const head = yield* wire(baseUrl, route.path, { "accept-encoding": acceptEncoding }, "HEAD")
          assert.strictEqual(head.status, 200, label)
          assert.strictEqual(head.bytes.length, 0, label)
          for (const name of ["content-type", "content-length", "content-encoding", "etag", "vary", "cache-control", "content-security-policy"]) {
            assert.strictEqual(head.headers[name], get.headers[name], `${label}: ${name}`)
          }
          const notModified = yield* wire(baseUrl, route.path, { "accept-encoding": acceptEncoding, "if-none-match": String(get.headers["etag"]) }, "HEAD")
          assert.strictEqual(notModified.status, 304, label)
        }
      }
    }))
})

describe("CompressedBody", () => {
  it.effect("the source is made once, on the first requests, however many arrive together", () =>
    Effect.gen(function*() {
      let made = 0
      const source = Effect.sync((): CompressedBody.Source => {
        made++
        return { bytes: Buffer.from("x".repeat(10_000), "utf8"), contentType: "text/plain", headers: { "x-source": "yes" } }
      }).pipe(Effect.delay("20 millis"))
      const { dispose, handler } = HttpRouter.toWebHandler(CompressedBody.route("/fixed", source, "no-cache"))
      const ask = (acceptEncoding: string) =>
        Effect.promise(() => handler(new Request("http://localhost/fixed", { headers: { "accept-encoding": acceptEncoding } })))
      assert.strictEqual(made, 0, "nothing is made before the first request")
      const first = yield* Effect.all([ask("br"), ask("gzip"), ask("identity"), ask("br"), ask("gzip")], { concurrency: "unbounded" })
      const later = yield* Effect.all([ask("br"), ask("identity")], { concurrency: "unbounded" })
      assert.strictEqual(made, 1)
      assert.deepStrictEqual([...first, ...later].map((response) => response.headers.get("content-encoding")), ["br", "gzip", null, "br", "gzip", "br", null])
      assert.deepStrictEqual([...first, ...later].map((response) => response.headers.get("x-source")), Array(7).fill("yes"))
      yield* Effect.promise(() => dispose())
    }))

  it("Accept-Encoding: the codings a request takes, best first", () => {
    assert.deepStrictEqual(CompressedBody.preferred(undefined), ["identity"])
    assert.deepStrictEqual(CompressedBody.preferred("gzip, deflate, br, zstd"), ["br", "gzip", "identity"])
    assert.deepStrictEqual(CompressedBody.preferred("gzip;q=0.9, br;q=0.1"), ["gzip", "br", "identity"])
    assert.deepStrictEqual(CompressedBody.preferred("br;q=0.000"), ["identity"])
    assert.deepStrictEqual(CompressedBody.preferred("br ; q=0.5 , gzip;Q=0.4"), ["br", "gzip", "identity"])
    assert.deepStrictEqual(CompressedBody.preferred("*;q=0.3, gzip"), ["gzip", "br", "identity"])
    assert.deepStrictEqual(CompressedBody.preferred("br;q=abc, gzip"), ["gzip", "identity"])
  })
})
