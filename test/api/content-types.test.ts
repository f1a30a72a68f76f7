/**
 * What a request body is (docs/decisions.md "Requests and
 * responses", "Idempotency"): JSON in UTF-8, uncompressed, checked once for
 * every write before its Idempotency-Key is claimed (apps/api/src/RequestBody.ts):
 * - a body without a Content-Type, or with a media type other than
 *   application/json: 415 unsupported_media_type;
 * - a charset other than UTF-8: 415; bytes that are not UTF-8: 422
 *   validation_failed; never a silent U+FFFD;
 * - none of these is stored: the same key then runs with a readable body;
 * generated over charsets, media-type spellings (parameters, case,
 * whitespace) and byte sequences (valid and invalid UTF-8, a BOM).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { connect } from "node:net"
import { expectError, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, funnel } from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly schoolId: number
  readonly writeKey: string
}>()("test/api/content-types/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const school = yield* Fixtures.school("pro", "Bodies")
      yield* funnel(school.schoolId, "Main", true, [["Incoming", 10]])
      return World.of({ schoolId: school.schoolId, writeKey: yield* Fixtures.key(school.schoolId, { scope: "write" }) })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

let n = 0
const freshKey = () => `bodies-${++n}-${Math.random().toString(36).slice(2)}`
const encode = (text: string) => new TextEncoder().encode(text)
const lead = encode(JSON.stringify({ phone: "12345", name: "Zoë" }))

/** POST /leads with exactly these headers (a missing Content-Type stays missing) over a raw socket: status and body. */
const postRaw = (headers: ReadonlyArray<string>, body: Uint8Array) =>
  Effect.flatMap(TestServer, (server) =>
    Effect.callback<{ readonly status: number; readonly body: string }>((resume) => {
      const url = new URL(server.baseUrl)
      const socket = connect(Number(url.port), url.hostname)
      const chunks: Array<Buffer> = []
      socket.on("data", (chunk: Buffer) => chunks.push(chunk))
      socket.on("close", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        const end = text.indexOf("\r\n\r\n")
        resume(Effect.succeed({ status: Number(text.split(" ")[1]), body: end < 0 ? "" : text.slice(end + 4) }))
      })
      const head = [
        `POST ${V1}/leads HTTP/1.1`,
        `Host: ${url.host}`,
        "Connection: close",
        `Content-Length: ${body.length}`,
        ...headers
      ].join("\r\n")
      socket.write(Buffer.concat([Buffer.from(`${head}\r\n\r\n`, "latin1"), body]))
      return Effect.sync(() => socket.destroy())
    }))

const send = (idempotencyKey: string, body: Uint8Array, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    return yield* server.raw.post(`${V1}/leads`, { key: world.writeKey, idempotencyKey, body, headers })
  })

/** Refused with `status`/`code`, nothing stored or created; the same key then runs with a readable body. */
const refusedThenRuns = (refuse: (key: string) => Effect.Effect<void, unknown, TestServer | World>) =>
  Effect.gen(function*() {
    const world = yield* World
    const key = freshKey()
    const records = yield* count("idempotency_keys", world.schoolId)
    const leads = yield* count("leads", world.schoolId)
    yield* refuse(key)
    assert.strictEqual(yield* count("idempotency_keys", world.schoolId), records)
    assert.strictEqual(yield* count("leads", world.schoolId), leads)
    const ran = yield* send(key, lead, { "content-type": "application/json" })
    assert.strictEqual(ran.status, 201, ran.text)
    assert.isNull(ran.headers.get("idempotent-replayed"))
    assert.strictEqual(yield* count("leads", world.schoolId), leads + 1)
  })

layer(Env, { excludeTestServices: true })("request bodies: JSON in UTF-8", (it) => {
  describe("the probe's bodies", () => {
    it.effect("a body without Content-Type: 415 unsupported_media_type, not stored", () =>
      refusedThenRuns((key) =>
        Effect.gen(function*() {
          const world = yield* World
          const reply = yield* postRaw([`Authorization: Bearer ${world.writeKey}`, `Idempotency-Key: ${key}`], lead)
          assert.strictEqual(reply.status, 415, reply.body)
          assert.include(reply.body, "\"unsupported_media_type\"")
        })
      ))

    it.effect("no body and no Content-Type is not a body: validation answers (422, stored like any)", () =>
      Effect.gen(function*() {
        const world = yield* World
        const reply = yield* postRaw([`Authorization: Bearer ${world.writeKey}`, `Idempotency-Key: ${freshKey()}`], new Uint8Array())
        assert.strictEqual(reply.status, 422, reply.body)
        assert.include(reply.body, "\"validation_failed\"")
      }))

    it.effect("application/json;charset=latin1 with Latin-1 bytes: 415, not stored (never U+FFFD)", () =>
      refusedThenRuns((key) =>
        Effect.gen(function*() {
          const latin1 = new Uint8Array([...encode("{\"phone\":\"12345\",\"name\":\"Zo"), 0xeb, ...encode("\"}")])
          expectError(yield* send(key, latin1, { "content-type": "application/json;charset=latin1" }), 415, "unsupported_media_type")
        })
      ))

    it.effect("raw invalid UTF-8: 422 validation_failed without fields, not stored", () =>
      refusedThenRuns((key) =>
        Effect.gen(function*() {
          const invalid = new Uint8Array([...encode("{\"phone\":\"12345\",\"name\":\""), 0xc3, 0x28, ...encode("\"}")])
          const error = expectError(yield* send(key, invalid, { "content-type": "application/json" }), 422, "validation_failed")
          assert.isUndefined(error.fields)
        })
      ))

    it.effect("text/plain: 415 before the key is claimed", () =>
      refusedThenRuns((key) =>
        Effect.gen(function*() {
          expectError(yield* send(key, lead, { "content-type": "text/plain" }), 415, "unsupported_media_type")
        })
      ))
  })

  describe("generated", () => {
    const UTF8_LABELS = ["utf-8", "UTF-8", "utf8", "Utf8", "unicode-1-1-utf-8", "\"utf-8\"", "x-unicode20utf8"]
    const OTHER_LABELS = ["latin1", "iso-8859-1", "\"ISO-8859-1\"", "windows-1252", "utf-16", "utf-16le", "ascii", "koi8-r", "x-bogus", ""]

    const Spelling = Schema.Struct({
      type: Schema.Literals(["application/json", "Application/JSON", "APPLICATION/JSON"]),
      before: Schema.Literals(["", " "]),
      around: Schema.Literals(["", " ", "  "]),
      charset: Schema.UndefinedOr(Schema.Literals([...UTF8_LABELS, ...OTHER_LABELS])),
      extra: Schema.UndefinedOr(Schema.Literals(["q=1", "profile=x", "boundary=\"a;b\""])),
      name: Schema.Literals(["charset", "Charset", "CHARSET"])
    })

    it.effect.prop(
      "a JSON media type in any case and spacing, with any parameters: 201 with a UTF-8 charset or none, else 415 and nothing stored",
      [Spelling],
      ([s]) =>
        Effect.gen(function*() {
          const world = yield* World
          const parameters = [
            ...(s.extra === undefined ? [] : [s.extra]),
            ...(s.charset === undefined ? [] : [`${s.name}${s.around}=${s.around}${s.charset}`])
          ]
          const contentType = [s.before + s.type, ...parameters].join(`${s.around};${s.around}`)
          const records = yield* count("idempotency_keys", world.schoolId)
          const reply = yield* send(freshKey(), lead, { "content-type": contentType })
          const utf8 = s.charset === undefined || UTF8_LABELS.includes(s.charset)
          if (utf8) {
            assert.strictEqual(reply.status, 201, `${contentType}: ${reply.text}`)
            assert.include(reply.text, "Zoë")
          } else {
            expectError(reply, 415, "unsupported_media_type")
            assert.strictEqual(yield* count("idempotency_keys", world.schoolId), records)
          }
        }),
      { timeout: 60_000, arbitrary: { runs: 40 } }
    )

    it.effect.prop(
      "another media type: 415, nothing stored",
      [Schema.Literals(["text/plain", "text/json", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json-patch+json", "application/jsonx", "json", "*/*", ""])],
      ([contentType]) =>
        Effect.gen(function*() {
          const world = yield* World
          const records = yield* count("idempotency_keys", world.schoolId)
          expectError(yield* send(freshKey(), lead, { "content-type": contentType }), 415, "unsupported_media_type")
          assert.strictEqual(yield* count("idempotency_keys", world.schoolId), records)
        }),
      { timeout: 60_000, arbitrary: { runs: 20 } }
    )

    /** A name made of these bytes, inside an otherwise valid lead. */
    const Bytes = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0x20, maximum: 0xff }))).check(Schema.isMaxLength(24))

    it.effect.prop(
      "byte sequences in a string: valid UTF-8 is read as written, invalid UTF-8 is 422 and nothing stored",
      [Bytes, Schema.Boolean],
      ([bytes, bom]) =>
        Effect.gen(function*() {
          const world = yield* World
          // Neither a quote nor a backslash: the JSON stays well formed, only the encoding varies.
          const inner = new Uint8Array(bytes.filter((b) => b !== 0x22 && b !== 0x5c))
          const body = new Uint8Array([
            ...(bom ? [0xef, 0xbb, 0xbf] : []),
            ...encode("{\"phone\":\"12345\",\"comment\":\""),
            ...inner,
            ...encode("\"}")
          ])
          const records = yield* count("idempotency_keys", world.schoolId)
          const reply = yield* send(freshKey(), body, { "content-type": "application/json; charset=utf-8" })
          let text: string | undefined
          try {
            text = new TextDecoder("utf-8", { fatal: true }).decode(inner)
          } catch {
            text = undefined
          }
          if (text === undefined) {
            expectError(reply, 422, "validation_failed")
            assert.strictEqual(yield* count("idempotency_keys", world.schoolId), records)
          } else {
            // A BOM is not part of the JSON text (the UTF-8 decoder drops it).
            assert.strictEqual(reply.status, 201, reply.text)
            assert.notInclude(reply.text, "\uFFFD")
            const comment = text.trim()
            if (comment !== "") assert.include(reply.text, JSON.stringify(comment).slice(1, -1))
          }
        }),
      { timeout: 60_000, arbitrary: { runs: 40 } }
    )
  })
})
