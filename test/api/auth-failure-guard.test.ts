/**
 * The guard against failed authentications per client address through the
 * whole API (`TestServer`, docs/decisions.md "Rate limits"): a client that
 * floods credentials that fail gets 429 `rate_limit_exceeded` with
 * `Retry-After` (no `X-RateLimit-*`) once it has spent its budget, answered
 * by the process (the key table is locked meanwhile and nothing waits); a
 * credential it repeats gets the same 401 from memory; a key that has
 * authenticated passes from the same address; other addresses are not
 * affected; waiting `Retry-After` lets a new credential be looked up again.
 * A property runs generated sequences of good, unknown, repeated and
 * malformed credentials, each from a fresh address.
 *
 * Clients are told apart by the socket's address: the requests here bind
 * their own loopback address (127.0.0.x, all of 127/8 is the loopback on
 * Linux), which the raw client cannot do.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { request } from "node:http"
import { AuthFailureGuardOptions, defaultOptions } from "@school/api/AuthFailureGuard"
import { ApiKey } from "@school/domain"
import { errorOf, JSON_CONTENT_TYPE, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const BURST = 3
const INTERVAL_MS = 2_000
const STUDENTS = `${V1}/students?per_page=1`

interface Reply {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly json: unknown
}

/** Per test (and per generated run), a loopback address of its own: 127.x.y.z. */
let nextAddress = 2
const freshAddress = () => {
  const n = nextAddress++
  return `127.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`
}

class Api extends Context.Service<Api, {
  /** GET `path` with `key` as the bearer token, from the local address `from`. */
  readonly get: (from: string, key: string, path?: string) => Effect.Effect<Reply>
}>()("test/api/auth-failure-guard/Api") {
  static readonly layer = Layer.effect(
    Api,
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const url = new URL(baseUrl)
      const get = (from: string, key: string, path = STUDENTS) =>
        Effect.callback<Reply>((resume) => {
          const req = request({
            host: url.hostname,
            port: url.port,
            path,
            localAddress: from,
            agent: false,
            headers: { authorization: `Bearer ${key}` }
          }, (res) => {
            const chunks: Array<Buffer> = []
            res.on("data", (chunk: Buffer) => chunks.push(chunk))
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString("utf8")
              let json: unknown = undefined
              try {
                json = JSON.parse(text)
              } catch {
                json = undefined
              }
              resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, json }))
            })
          })
          req.on("error", (error) => resume(Effect.die(error)))
          req.end()
        })
      return Api.of({ get })
    })
  )
}

const Env = Api.layer.pipe(
  Layer.provideMerge(TestServer.layer()),
  Layer.provide(Layer.succeed(AuthFailureGuardOptions, {
    ...defaultOptions,
    budget: Option.some({ burst: BURST, interval: INTERVAL_MS * 1_000 })
  })),
  Layer.provideMerge(TestDatabase.layer)
)

/** A well-formed key nobody issued, drawn from `seed`. */
const unknownKey = (seed: string) => {
  const hex = createHash("sha256").update(seed).digest("hex")
  return ApiKey.formatApiKey({ prefix: hex.slice(0, ApiKey.PREFIX_LENGTH), secret: hex.slice(8, 8 + ApiKey.SECRET_LENGTH) })
}

const reasonOf = (reply: Reply) => {
  const error = errorOf({ status: reply.status, headers: new Headers(), bytes: new Uint8Array(), text: "", json: reply.json })
  return error.fields?.["reason"]
}

const assertBlocked = (reply: Reply) => {
  assert.strictEqual(reply.status, 429)
  assert.strictEqual(reply.headers["content-type"], JSON_CONTENT_TYPE)
  const error = errorOf({ status: reply.status, headers: new Headers(), bytes: new Uint8Array(), text: "", json: reply.json })
  assert.strictEqual(error.code, "rate_limit_exceeded")
  assert.notProperty(error, "fields")
  const retryAfter = Number(reply.headers["retry-after"])
  assert.isTrue(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= INTERVAL_MS / 1_000, String(retryAfter))
  for (const name of Object.keys(reply.headers)) assert.notMatch(name, /^x-ratelimit/i)
}

const newKey = Effect.gen(function*() {
  const { schoolId } = yield* Fixtures.school("pro", "Guarded school")
  return { schoolId, key: yield* Fixtures.key(schoolId) }
})

layer(Env, { excludeTestServices: true })("failed authentications per client address", (it) => {
  it.effect("a flood of unknown keys is cut off after the burst, without the database; a working key still passes", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const sql = yield* SqlClient.SqlClient
      const { key } = yield* newKey
      const attacker = freshAddress()
      // The integrator's key has authenticated (from anywhere) before the flood.
      assert.strictEqual((yield* api.get(freshAddress(), key)).status, 200)
      const started = Date.now()
      const replies: Array<Reply> = []
      for (let i = 0; i < 20; i++) replies.push(yield* api.get(attacker, unknownKey(`flood ${i}`)))
      const refills = Math.floor((Date.now() - started) / INTERVAL_MS)
      const unauthorized = replies.filter((reply) => reply.status === 401)
      assert.strictEqual(unauthorized.length, BURST + refills)
      for (const reply of unauthorized) assert.strictEqual(reasonOf(reply), "unknown_key")
      for (const reply of replies.slice(BURST + refills)) assertBlocked(reply)

      // With the key table locked, anything that asks the database waits; the
      // blocked address's new keys and its repeats are answered at once, and
      // the working key waits for the database like any other.
      const answered = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`
        return yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) =>
          api.get(attacker, i % 2 === 0 ? unknownKey(`locked ${i}`) : unknownKey("flood 0")), { concurrency: 10 }).pipe(
            Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.die("the blocked address waited for the database") })
          )
      })).pipe(Effect.orDie)
      for (const [i, reply] of answered.entries()) {
        if (i % 2 === 0) assertBlocked(reply)
        else assert.deepStrictEqual([reply.status, reasonOf(reply)], [401, "unknown_key"])
      }
      // The same address with a key that works: 200, every time.
      for (let i = 0; i < 5; i++) assert.strictEqual((yield* api.get(attacker, key)).status, 200)
      // Another address is not affected.
      const other = freshAddress()
      assert.deepStrictEqual(reasonOf(yield* api.get(other, unknownKey("another address"))), "unknown_key")
    }))

  it.effect("a repeated bad key gets its own 401 from memory; revoked and expired keys too", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const sql = yield* SqlClient.SqlClient
      const { schoolId } = yield* newKey
      const revoked = yield* Fixtures.key(schoolId, { revoked: true })
      const expired = yield* Fixtures.key(schoolId, { expired: true })
      const client = freshAddress()
      const cases = [[revoked, "revoked_key"], [expired, "expired_key"], [unknownKey("repeat"), "unknown_key"]] as const
      for (const [credential, reason] of cases) assert.strictEqual(reasonOf(yield* api.get(client, credential)), reason)
      const replies = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`
        return yield* Effect.forEach(Array.from({ length: 90 }, (_, i) => cases[i % 3]!), ([credential, reason]) =>
          Effect.map(api.get(client, credential), (reply) => [reply.status, reasonOf(reply), reason] as const), {
          concurrency: 10
        }).pipe(Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.die("a repeat waited for the database") }))
      })).pipe(Effect.orDie)
      for (const [status, got, reason] of replies) assert.deepStrictEqual([status, got], [401, reason])
    }))

  it.effect("a key that has not yet authenticated waits Retry-After on a blocked address, then passes", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const { key } = yield* newKey
      const client = freshAddress()
      for (let i = 0; i < BURST; i++) assert.strictEqual((yield* api.get(client, unknownKey(`spend ${i}`))).status, 401)
      const blocked = yield* api.get(client, key)
      assertBlocked(blocked)
      yield* Effect.sleep(`${Number(blocked.headers["retry-after"])} seconds`)
      assert.strictEqual((yield* api.get(client, key)).status, 200)
    }))

  const Credential = Schema.Union([
    Schema.Struct({ kind: Schema.Literal("good") }),
    Schema.Struct({ kind: Schema.Literal("unknown"), seed: Schema.Int }),
    Schema.Struct({ kind: Schema.Literal("repeat"), index: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 40 })) }),
    Schema.Struct({ kind: Schema.Literal("malformed"), text: Schema.String.check(Schema.isMaxLength(60)) })
  ])

  it.effect.prop(
    "any sequence from one address: a working key always passes, a malformed one is always 401, a repeat never costs the budget, and at most the burst of new bad keys is looked up",
    { sequence: Schema.Array(Credential).check(Schema.isMinLength(20), Schema.isMaxLength(40)) },
    ({ sequence }) =>
      Effect.gen(function*() {
        const api = yield* Api
        const { key } = yield* newKey
        assert.strictEqual((yield* api.get(freshAddress(), key)).status, 200)
        const client = freshAddress()
        const started = Date.now()
        const failed: Array<string> = []
        let lookedUp = 0
        for (const credential of sequence) {
          switch (credential.kind) {
            case "good":
              assert.strictEqual((yield* api.get(client, key)).status, 200)
              break
            case "malformed": {
              const text = `Bearer-less ${credential.text}`.replace(/[^\x21-\x7e]/g, "_")
              assert.strictEqual(reasonOf(yield* api.get(client, text)), "missing_or_malformed_key")
              break
            }
            case "repeat": {
              const previous = failed[credential.index % Math.max(1, failed.length)]
              if (previous === undefined) break
              const reply = yield* api.get(client, previous)
              assert.deepStrictEqual([reply.status, reasonOf(reply)], [401, "unknown_key"])
              break
            }
            case "unknown": {
              const bad = unknownKey(`${client} ${credential.seed}`)
              const reply = yield* api.get(client, bad)
              if (failed.includes(bad)) {
                assert.deepStrictEqual([reply.status, reasonOf(reply)], [401, "unknown_key"])
              } else if (reply.status === 401) {
                assert.strictEqual(reasonOf(reply), "unknown_key")
                failed.push(bad)
                lookedUp++
              } else {
                assertBlocked(reply)
              }
            }
          }
        }
        assert.isAtMost(lookedUp, BURST + Math.floor((Date.now() - started) / INTERVAL_MS))
      }),
    { timeout: 120_000, arbitrary: { runs: 30 } }
  )
})
