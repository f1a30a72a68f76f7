/**
 * The back office's sign-in throttle against a real server, from several
 * client addresses (docs/decisions.md "Back-office sessions",
 * docs/back-office.md "Signing in"): failures from one address never hold
 * back a correct password from another; spraying is throttled per address;
 * concurrent correct sign-ins are never refused; the purge and the cap on
 * live sessions; TRUST_PROXY and X-Forwarded-For; the cookie's Secure rule.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as LoginThrottle from "@school/domain/LoginThrottle"
import { hashPassword } from "@school/runtime/Passwords"
import { createSchool } from "@school/persistence/Schools"
import { MAX_LIVE_SESSIONS, purgeOnce, Sessions } from "@school/persistence/Sessions"
import * as http from "node:http"
import { parseTrustProxy, TRUST_PROXY } from "@school/api/ClientAddress"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const CRM = "/api/crm/v1"
const PASSWORD = "correct horse battery"

interface Reply {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** One request from `localAddress` (any 127.0.0.0/8 address is this machine's). */
const request = (
  baseUrl: string,
  method: string,
  path: string,
  options: { readonly from: string; readonly body?: unknown; readonly headers?: Record<string, string> }
) =>
  Effect.callback<Reply>((resume) => {
    const url = new URL(path, baseUrl)
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body)
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method,
      localAddress: options.from,
      agent: false,
      headers: {
        ...(payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }),
        ...options.headers
      }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() })))
    })
    req.on("error", (error) => resume(Effect.die(error)))
    req.end(payload)
  })

const signIn = (from: string, email: string, password: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    return yield* request(server.baseUrl, "POST", `${CRM}/sessions`, { from, body: { email, password }, headers })
  })

const tokenOf = (reply: Reply): string => (JSON.parse(reply.body) as { data: { token: string } }).data.token

let schools = 0
const owner = Effect.gen(function*() {
  const email = `owner${++schools}-${process.pid}@throttle.test`
  yield* createSchool({
    name: `Throttle ${schools}`,
    plan: "pro",
    owner: { name: "Olga Owner", email, passwordHash: yield* hashPassword(PASSWORD) }
  })
  return email
}).pipe(Effect.orDie)

const addressRow = (email: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ address: string }>`SELECT address FROM login_failures WHERE email = ${email}`
    return rows.map((row) => row.address)
  }).pipe(Effect.orDie)

const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true, timeout: 120_000 })("sign-in throttle (TRUST_PROXY off)", (it) => {
  it.effect("an attacker polling the owner's e-mail past the wait never keeps the owner out", () =>
    Effect.gen(function*() {
      const email = yield* owner
      const statuses: Array<number> = []
      for (let round = 0; round < 12; round++) {
        statuses.push((yield* signIn("127.0.0.2", email, `guess ${round}`)).status)
        const ownReply = yield* signIn("127.0.0.3", email, PASSWORD)
        assert.strictEqual(ownReply.status, 201, ownReply.body)
      }
      // Five free guesses, then the attacker waits (and each 429 counts against its address).
      assert.deepStrictEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401])
      assert.isTrue(statuses.slice(5).every((status) => status === 429), String(statuses))
      const refused = yield* signIn("127.0.0.2", email, PASSWORD)
      assert.strictEqual(refused.status, 429)
      assert.match(String(refused.headers["retry-after"]), /^[1-9]\d*$/u)
      assert.deepStrictEqual(yield* addressRow(email), ["127.0.0.2"])
      // Past each wait the attacker gets one counted guess; the owner signs in at once every time.
      for (let round = 0; round < 2; round++) {
        const wait = Number((yield* signIn("127.0.0.2", email, "poll")).headers["retry-after"] ?? 0)
        yield* Effect.sleep(`${wait * 1000 + 100} millis`)
        assert.strictEqual((yield* signIn("127.0.0.2", email, `late guess ${round}`)).status, 401)
        assert.strictEqual((yield* signIn("127.0.0.3", email, PASSWORD)).status, 201)
      }
    }))

  it.effect("spraying 60 e-mails from one address: 429 after 30; the owner from another address is unaffected", () =>
    Effect.gen(function*() {
      const email = yield* owner
      const statuses: Array<number> = []
      for (let i = 0; i < 60; i++) {
        statuses.push((yield* signIn("127.0.0.4", `sprayed${i}@throttle.test`, "Winter2024!")).status)
      }
      assert.deepStrictEqual(statuses.slice(0, LoginThrottle.ADDRESS_BUDGET.burst), Array(30).fill(401))
      assert.deepStrictEqual(statuses.slice(30), Array(30).fill(429))
      // The spraying address is held back even with a right password; another address is not.
      assert.strictEqual((yield* signIn("127.0.0.4", email, PASSWORD)).status, 429)
      assert.strictEqual((yield* signIn("127.0.0.5", email, PASSWORD)).status, 201)
    }))

  it.effect("40 concurrent correct sign-ins from one address all get 201 (more than its budget of 30)", () =>
    Effect.gen(function*() {
      const email = yield* owner
      const replies = yield* Effect.forEach(
        Array.from({ length: 40 }, (_, i) => i),
        () => signIn("127.0.0.6", email, PASSWORD),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(replies.map((reply) => reply.status), Array(40).fill(201))
    }))

  it.effect("60 concurrent wrong guesses from one address: exactly 30 are checked, 30 get 429; the owner elsewhere gets in", () =>
    Effect.gen(function*() {
      const email = yield* owner
      const [replies, own] = yield* Effect.all([
        Effect.forEach(
          Array.from({ length: 60 }, (_, i) => i),
          (i) => signIn("127.0.0.11", `concurrent${i}@throttle.test`, "Winter2024!"),
          { concurrency: "unbounded" }
        ),
        // The owner arrives in the middle of the spray, from another address.
        Effect.andThen(Effect.sleep("100 millis"), signIn("127.0.0.12", email, PASSWORD))
      ], { concurrency: "unbounded" })
      const statuses = replies.map((reply) => reply.status)
      assert.strictEqual(statuses.filter((status) => status === 401).length, LoginThrottle.ADDRESS_BUDGET.burst, String(statuses))
      assert.strictEqual(statuses.filter((status) => status === 429).length, 30, String(statuses))
      assert.strictEqual(own.status, 201, own.body)
    }))

  it.effect("wrong current passwords count like failed sign-ins: five 422, then 429 for the change and the sign-in from that address", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const email = yield* owner
      const token = tokenOf(yield* signIn("127.0.0.13", email, PASSWORD))
      const change = (current: string) =>
        request(server.baseUrl, "POST", `${CRM}/sessions/current/password`, {
          from: "127.0.0.13",
          headers: { authorization: `Session ${token}` },
          body: { current_password: current, new_password: "a brand new password" }
        })
      for (let i = 0; i < 5; i++) {
        const wrong = yield* change(`not it ${i}`)
        assert.strictEqual(wrong.status, 422, wrong.body)
        assert.deepStrictEqual(Object.keys(JSON.parse(wrong.body).fields), ["current_password"])
      }
      const refused = yield* change(PASSWORD)
      assert.strictEqual(refused.status, 429, refused.body)
      assert.strictEqual(JSON.parse(refused.body).code, "TOO_MANY_ATTEMPTS")
      assert.match(String(refused.headers["retry-after"]), /^[1-9]\d*$/u)
      // The same pair is held back at sign-in too; another address is not.
      assert.strictEqual((yield* signIn("127.0.0.13", email, PASSWORD)).status, 429)
      assert.strictEqual((yield* signIn("127.0.0.14", email, PASSWORD)).status, 201)
      // Past the wait the right current password changes it.
      yield* Effect.sleep(`${Number(refused.headers["retry-after"]) * 1000 + 100} millis`)
      const changed = yield* change(PASSWORD)
      assert.strictEqual(changed.status, 200, changed.body)
    }))

  it.effect("the live sessions of an employee are capped: the oldest ends when one more is created", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const email = yield* owner
      const tokens: Array<string> = []
      for (let i = 0; i <= MAX_LIVE_SESSIONS; i++) {
        const reply = yield* signIn("127.0.0.7", email, PASSWORD)
        assert.strictEqual(reply.status, 201, reply.body)
        tokens.push(tokenOf(reply))
      }
      const current = (token: string) =>
        request(server.baseUrl, "GET", `${CRM}/sessions/current`, {
          from: "127.0.0.7",
          headers: { authorization: `Session ${token}` }
        })
      assert.strictEqual((yield* current(tokens[0]!)).status, 401)
      assert.strictEqual((yield* current(tokens[1]!)).status, 200)
      assert.strictEqual((yield* current(tokens[MAX_LIVE_SESSIONS]!)).status, 200)
    }))

  it.effect("the purge removes old failures, idle addresses, expired and revoked sessions", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const email = yield* owner
      const fresh = yield* signIn("127.0.0.8", email, "wrong")
      assert.strictEqual(fresh.status, 401)
      const live = tokenOf(yield* signIn("127.0.0.8", email, PASSWORD))
      yield* sql`INSERT INTO login_failures (email, address, failures, last_failed_at)
                 VALUES ('old@throttle.test', '10.0.0.1', 7, now() - interval '1 hour')`
      yield* sql`INSERT INTO login_addresses (address, next_failure_at) VALUES ('10.0.0.1', now() - interval '1 second')`
      yield* sql`INSERT INTO login_failures (email, address, failures, last_failed_at)
                 VALUES ('recent@throttle.test', '10.0.0.2', 7, now())`
      yield* sql`INSERT INTO login_addresses (address, next_failure_at) VALUES ('10.0.0.2', now() + interval '1 minute')`
      const newest = yield* sql<{ school_id: number; employee_id: number }>`
        SELECT school_id, employee_id FROM sessions ORDER BY created_at DESC LIMIT 1`
      const { school_id, employee_id } = newest[0]!
      yield* sql`INSERT INTO sessions (school_id, employee_id, token_hash, expires_at)
                 VALUES (${school_id}, ${employee_id}, '\\x01', now() - interval '1 second')`
      yield* sql`INSERT INTO sessions (school_id, employee_id, token_hash, expires_at, revoked_at)
                 VALUES (${school_id}, ${employee_id}, '\\x02', now() + interval '1 hour', now())`
      const sessions = yield* Effect.provide(Effect.gen(function*() {
        return yield* Sessions
      }), Sessions.layer)
      assert.isAtLeast(yield* purgeOnce(sessions), 4)
      const left = yield* sql<{ email: string }>`SELECT email FROM login_failures ORDER BY email`
      assert.isFalse(left.some((row) => row.email === "old@throttle.test"))
      assert.isTrue(left.some((row) => row.email === "recent@throttle.test"))
      const addresses = yield* sql<{ address: string }>`SELECT address FROM login_addresses`
      assert.isFalse(addresses.some((row) => row.address === "10.0.0.1"))
      assert.isTrue(addresses.some((row) => row.address === "10.0.0.2"))
      const ended = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM sessions WHERE expires_at <= now() OR revoked_at IS NOT NULL`
      assert.strictEqual(ended[0]?.n, 0)
      // The live session still works.
      const server = yield* TestServer
      const current = yield* request(server.baseUrl, "GET", `${CRM}/sessions/current`, {
        from: "127.0.0.8",
        headers: { authorization: `Session ${live}` }
      })
      assert.strictEqual(current.status, 200)
    }).pipe(Effect.orDie))

  it.effect("a spoofed X-Forwarded-For changes nothing when the peer is not trusted", () =>
    Effect.gen(function*() {
      const email = yield* owner
      const reply = yield* signIn("127.0.0.9", email, "wrong", { "x-forwarded-for": "203.0.113.7" })
      assert.strictEqual(reply.status, 401)
      assert.deepStrictEqual(yield* addressRow(email), ["127.0.0.9"])
    }))

  it.effect("the cookie is Secure unless the Host is a loopback address; X-Forwarded-Proto from an untrusted peer is ignored", () =>
    Effect.gen(function*() {
      const email = yield* owner
      const cookie = (reply: Reply) => String(reply.headers["set-cookie"] ?? "")
      const loopback = yield* signIn("127.0.0.10", email, PASSWORD, { "x-forwarded-proto": "https" })
      assert.strictEqual(loopback.status, 201)
      assert.notMatch(cookie(loopback), /Secure/u)
      const local = yield* signIn("127.0.0.10", email, PASSWORD, { host: "localhost:3000" })
      assert.notMatch(cookie(local), /Secure/u)
      const remote = yield* signIn("127.0.0.10", email, PASSWORD, { host: "crm.school.example" })
      assert.strictEqual(remote.status, 201)
      assert.match(cookie(remote), /; HttpOnly; SameSite=Lax; Path=\/api\/crm; Secure$/u)
    }))
})

const Trusting = TestServer.layer({ settings: { TRUST_PROXY: "127.0.0.1, 10.0.0.0/8" } }).pipe(
  Layer.provideMerge(TestDatabase.layer)
)

layer(Trusting, { excludeTestServices: true, timeout: 120_000 })("sign-in throttle (TRUST_PROXY 127.0.0.1)", (it) => {
  it.effect("X-Forwarded-For from the trusted proxy is the address the throttle uses (its right-most untrusted entry)", () =>
    Effect.gen(function*() {
      const email = yield* owner
      const viaProxy = yield* signIn("127.0.0.1", email, "wrong", {
        "x-forwarded-for": "198.51.100.1, 203.0.113.7, 10.1.2.3"
      })
      assert.strictEqual(viaProxy.status, 401)
      assert.deepStrictEqual(yield* addressRow(email), ["203.0.113.7"])
      // From a peer that is not a trusted proxy the header is ignored.
      const other = yield* owner
      assert.strictEqual((yield* signIn("127.0.0.2", other, "wrong", { "x-forwarded-for": "203.0.113.8" })).status, 401)
      assert.deepStrictEqual(yield* addressRow(other), ["127.0.0.2"])
    }))

  it.effect("failures behind the proxy from one client do not hold back another client behind it", () =>
    Effect.gen(function*() {
      const email = yield* owner
      for (let i = 0; i < 8; i++) yield* signIn("127.0.0.1", email, `guess ${i}`, { "x-forwarded-for": "203.0.113.9" })
      assert.strictEqual((yield* signIn("127.0.0.1", email, PASSWORD, { "x-forwarded-for": "203.0.113.9" })).status, 429)
      assert.strictEqual((yield* signIn("127.0.0.1", email, PASSWORD, { "x-forwarded-for": "198.51.100.2" })).status, 201)
    }))

  it.effect("the cookie is Secure when the trusted proxy says X-Forwarded-Proto: https", () =>
    Effect.gen(function*() {
      const email = yield* owner
      const https = yield* signIn("127.0.0.1", email, PASSWORD, { "x-forwarded-proto": "https" })
      assert.strictEqual(https.status, 201)
      assert.match(String(https.headers["set-cookie"] ?? ""), /; Secure$/u)
      const http = yield* signIn("127.0.0.1", email, PASSWORD)
      assert.notMatch(String(http.headers["set-cookie"] ?? ""), /Secure/u)
      const untrusted = yield* signIn("127.0.0.2", email, PASSWORD, { "x-forwarded-proto": "https" })
      assert.notMatch(String(untrusted.headers["set-cookie"] ?? ""), /Secure/u)
    }))
})

describe("TRUST_PROXY (the setting)", () => {
  it("is comma-separated addresses or CIDR ranges; empty is none", () => {
    assert.deepStrictEqual(parseTrustProxy(""), Option.some([]))
    assert.deepStrictEqual(parseTrustProxy("127.0.0.1, 10.0.0.0/8,fd00::/8"), Option.some(["127.0.0.1", "10.0.0.0/8", "fd00::/8"]))
    assert.isTrue(Option.isNone(parseTrustProxy("10.0.0.0/33")))
    assert.isTrue(Option.isNone(parseTrustProxy("proxy.local")))
  })

  it.effect("a malformed value is one line naming the setting", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.provide(TRUST_PROXY.asEffect(), ConfigProvider.layer(ConfigProvider.fromUnknown({ TRUST_PROXY: "nope" })))
      )
      assert.strictEqual(error.setting, "TRUST_PROXY")
      assert.isTrue(error.message.startsWith("invalid setting TRUST_PROXY: expected comma-separated"), error.message)
    }))
})
