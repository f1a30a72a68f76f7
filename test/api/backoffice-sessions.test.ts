/**
 * The back office's sessions over a real socket against a real database
 * (docs/decisions.md "Back-office sessions", docs/back-office.md): sign-in
 * with its cookie, the token by cookie and by `Authorization: Session`, the
 * separation from API keys, sign-out, expiry, the throttle per e-mail, the
 * cross-site request forgery check, and the back office's envelope for bad
 * input and unknown routes.
 */
import { assert, describe, layer } from "@effect/vitest"
import { beforeEach } from "vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createSchool } from "@school/persistence/Schools"
import { hashPassword } from "@school/runtime/Passwords"
import * as SessionRules from "@school/domain/Sessions"
import * as BackOfficeErrors from "@school/domain/BackOfficeErrors"
import { backOfficeClient, failsWith, JSON_CONTENT_TYPE, type RawReply, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const CRM = "/api/crm/v1"
const PASSWORD = "correct horse battery"

const strict = { onExcessProperty: "error" } as const

const Employee = Schema.Struct({ id: Schema.Int, name: Schema.String, email: Schema.String, role: Schema.String })
const LoginReply = Schema.Struct({
  success: Schema.Literal(true),
  data: Schema.Struct({ token: Schema.String, expires_at: Schema.String, employee: Employee })
})
const CurrentReply = Schema.Struct({
  success: Schema.Literal(true),
  data: Schema.Struct({ employee: Employee, expires_at: Schema.String })
})
const BackOfficeError = Schema.Struct({
  success: Schema.Literal(false),
  code: Schema.String,
  message: Schema.String,
  fields: Schema.optionalKey(Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Array(Schema.String)])))
})

/** A back-office error reply: status, JSON content type, code, a message; the envelope checked strictly. */
const expectBackOfficeError = (reply: RawReply, status: number, code: string) => {
  assert.strictEqual(reply.status, status, reply.text)
  assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
  const error = Schema.decodeUnknownSync(BackOfficeError)(reply.json, strict)
  assert.strictEqual(error.code, code)
  assert.isAbove(error.message.length, 0)
  return error
}

class World extends Context.Service<World, {
  readonly schoolId: number
  readonly ownerEmail: string
  readonly otherEmail: string
  readonly apiKey: string
}>()("test/api/backoffice-sessions/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const a = yield* createSchool({
        name: "School A",
        plan: "pro",
        owner: { name: "Anna Owner", email: "Owner@School-A.test", passwordHash: yield* hashPassword(PASSWORD) }
      })
      yield* createSchool({
        name: "School B",
        plan: "pro",
        owner: { name: "Boris Owner", email: "owner@school-b.test", passwordHash: yield* hashPassword(PASSWORD) }
      })
      return World.of({
        schoolId: a.school_id,
        ownerEmail: "owner@school-a.test",
        otherEmail: "owner@school-b.test",
        apiKey: yield* Fixtures.key(a.school_id, { scope: "write" })
      })
    }).pipe(Effect.orDie)
  )
}

// The test client is the proxy in front (TRUST_PROXY), so its X-Forwarded-Proto is believed.
const Env = Layer.mergeAll(TestServer.layer({ settings: { TRUST_PROXY: "127.0.0.1" } }), World.layer).pipe(Layer.provideMerge(TestDatabase.layer))

// Each test signs in as a client of its own behind the proxy, so the failures one test
// makes do not spend the next one's budget per address (docs/decisions.md "Back-office sessions").
let client = 0
beforeEach(() => {
  client++
})

const signIn = (email: string, password: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    return yield* server.raw.post(`${CRM}/sessions`, {
      body: { email, password },
      headers: { "x-forwarded-for": `192.0.2.${client}`, ...headers }
    })
  })

const signedIn = (email: string) =>
  Effect.gen(function*() {
    const reply = yield* signIn(email, PASSWORD)
    assert.strictEqual(reply.status, 201, reply.text)
    return Schema.decodeUnknownSync(LoginReply)(reply.json, strict).data
  })

const withCookie = (token: string) => ({ cookie: `${SessionRules.COOKIE_NAME}=${token}` })
const withSession = (token: string) => ({ authorization: `Session ${token}` })

layer(Env, { excludeTestServices: true })("back-office sessions", (it) => {
  describe("sign-in", () => {
    it.effect("201 with the token, the employee and the cookie; the token works by cookie and by Authorization: Session", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const world = yield* World
        const reply = yield* signIn("  OWNER@school-a.test ", PASSWORD)
        assert.strictEqual(reply.status, 201, reply.text)
        const { data } = Schema.decodeUnknownSync(LoginReply)(reply.json, strict)
        assert.deepStrictEqual(data.employee, {
          id: data.employee.id,
          name: "Anna Owner",
          email: world.ownerEmail,
          role: "owner"
        })
        assert.match(data.token, /^[A-Za-z0-9_-]{43}$/u)
        assert.match(data.expires_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u)
        const ttl = Date.parse(data.expires_at) - Date.now()
        assert.isTrue(ttl > 11.9 * 3600_000 && ttl <= 12 * 3600_000, `expires in ${ttl} ms`)
        assert.strictEqual(
          reply.headers.get("set-cookie"),
          `crm_session=${data.token}; HttpOnly; SameSite=Lax; Path=/api/crm`
        )

        for (const headers of [withCookie(data.token), withSession(data.token)]) {
          const current = yield* server.raw.request(`${CRM}/sessions/current`, { headers })
          assert.strictEqual(current.status, 200, current.text)
          const body = Schema.decodeUnknownSync(CurrentReply)(current.json, strict)
          assert.deepStrictEqual(body.data, { employee: data.employee, expires_at: data.expires_at })
        }
        // Only the token's hash is stored.
        const sql = yield* SqlClient.SqlClient
        const stored = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM sessions WHERE token_hash = ${SessionRules.hashToken(data.token)}`
        assert.strictEqual(stored[0]?.n, 1)
        const plain = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM sessions WHERE encode(token_hash, 'escape') LIKE ${"%" + data.token + "%"}`
        assert.strictEqual(plain[0]?.n, 0)
      }))

    it.effect("Secure is added when the request came over HTTPS (X-Forwarded-Proto)", () =>
      Effect.gen(function*() {
        const world = yield* World
        const reply = yield* signIn(world.ownerEmail, PASSWORD, { "x-forwarded-proto": "https" })
        assert.strictEqual(reply.status, 201, reply.text)
        assert.match(reply.headers.get("set-cookie") ?? "", /; HttpOnly; SameSite=Lax; Path=\/api\/crm; Secure$/u)
      }))

    it.effect("a wrong e-mail and a wrong password get the same 401 body", () =>
      Effect.gen(function*() {
        const world = yield* World
        const unknown = yield* signIn("nobody@school-a.test", PASSWORD)
        const wrong = yield* signIn(world.otherEmail, "wrong password 123")
        expectBackOfficeError(unknown, 401, "UNAUTHENTICATED")
        expectBackOfficeError(wrong, 401, "UNAUTHENTICATED")
        assert.strictEqual(unknown.text, wrong.text)
        assert.isNull(unknown.headers.get("set-cookie"))
        // The owner of B is not throttled by one failure.
        yield* signedIn(world.otherEmail)
      }))

    it.effect("an unknown e-mail costs what a wrong password costs (a dummy scrypt check): the fastest of each within 2x", () =>
      Effect.gen(function*() {
        const world = yield* World
        const timed = (email: string, password: string) =>
          Effect.gen(function*() {
            const started = performance.now()
            expectBackOfficeError(yield* signIn(email, password), 401, "UNAUTHENTICATED")
            return performance.now() - started
          })
        // The fastest of each: load on the machine only adds time, so the minimum is each path's own cost (a
        // missing dummy check would make the unknown e-mail's ~20x cheaper), where a median of 4 moved with the load.
        const fastest = (values: ReadonlyArray<number>) => Math.min(...values)
        const unknown: Array<number> = []
        const wrong: Array<number> = []
        // Interleaved, 4 each: under the 5 free failures of the known e-mail.
        for (let i = 0; i < 4; i++) {
          unknown.push(yield* timed(`nobody-${i}@timing.test`, PASSWORD))
          wrong.push(yield* timed(world.otherEmail, `wrong password ${i}`))
        }
        const ratio = fastest(unknown) / fastest(wrong)
        assert.isTrue(ratio > 0.5 && ratio < 2, `unknown ${unknown.join(",")} ms, wrong ${wrong.join(",")} ms`)
        yield* signedIn(world.otherEmail)
      }))

    it.effect("a malformed body is 422 VALIDATION_FAILED with fields", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const reply = yield* server.raw.post(`${CRM}/sessions`, { body: { email: 5 } })
        const error = expectBackOfficeError(reply, 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), ["email", "password"])
        const notJson = yield* server.raw.post(`${CRM}/sessions`, { body: "{" })
        expectBackOfficeError(notJson, 422, "VALIDATION_FAILED")
      }))
  })

  describe("separate domains", () => {
    it.effect("an API key gets 401 UNAUTHENTICATED here; a session token gets 401 on the public API", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const world = yield* World
        const byKey = yield* server.raw.request(`${CRM}/sessions/current`, { key: world.apiKey })
        expectBackOfficeError(byKey, 401, "UNAUTHENTICATED")
        const none = yield* server.raw.request(`${CRM}/sessions/current`)
        expectBackOfficeError(none, 401, "UNAUTHENTICATED")

        const { token } = yield* signedIn(world.ownerEmail)
        const publicBySession = yield* server.raw.request(`${V1}/students`, { headers: withSession(token) })
        assert.strictEqual(publicBySession.status, 401, publicBySession.text)
        const publicByBearer = yield* server.raw.request(`${V1}/students`, { key: token })
        assert.strictEqual(publicByBearer.status, 401, publicByBearer.text)
        const publicByCookie = yield* server.raw.request(`${V1}/students`, { headers: withCookie(token) })
        assert.strictEqual(publicByCookie.status, 401, publicByCookie.text)
      }))
  })

  describe("sign-out and expiry", () => {
    it.effect("DELETE /sessions/current kills the token at once", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const world = yield* World
        const { token } = yield* signedIn(world.ownerEmail)
        const other = yield* signedIn(world.ownerEmail)
        const out = yield* server.raw.request(`${CRM}/sessions/current`, {
          method: "DELETE",
          headers: { ...withCookie(token), "content-type": "application/json" }
        })
        assert.strictEqual(out.status, 200, out.text)
        assert.deepStrictEqual(out.json, { success: true, data: {} })
        assert.match(out.headers.get("set-cookie") ?? "", /^crm_session=; HttpOnly; SameSite=Lax; Path=\/api\/crm; Max-Age=0$/u)
        for (const headers of [withCookie(token), withSession(token)]) {
          const after = yield* server.raw.request(`${CRM}/sessions/current`, { headers })
          expectBackOfficeError(after, 401, "UNAUTHENTICATED")
        }
        // Another session of the same employee lives on.
        const still = yield* server.raw.request(`${CRM}/sessions/current`, { headers: withSession(other.token) })
        assert.strictEqual(still.status, 200, still.text)
      }))

    it.effect("an expired session is 401", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const world = yield* World
        const { token } = yield* signedIn(world.ownerEmail)
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE token_hash = ${SessionRules.hashToken(token)}`
        const reply = yield* server.raw.request(`${CRM}/sessions/current`, { headers: withSession(token) })
        expectBackOfficeError(reply, 401, "UNAUTHENTICATED")
      }))
  })

  describe("cross-site request forgery", () => {
    it.effect("a cross-origin cookie DELETE is 403 FORBIDDEN and changes nothing; same origin passes", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const world = yield* World
        const { token } = yield* signedIn(world.ownerEmail)
        const host = new URL(server.baseUrl).host
        const cross = yield* server.raw.request(`${CRM}/sessions/current`, {
          method: "DELETE",
          headers: { ...withCookie(token), origin: "https://evil.example" }
        })
        expectBackOfficeError(cross, 403, "FORBIDDEN")
        const formBody = yield* server.raw.request(`${CRM}/sessions/current`, {
          method: "DELETE",
          body: "a=1",
          headers: { ...withCookie(token), "content-type": "application/x-www-form-urlencoded" }
        })
        expectBackOfficeError(formBody, 403, "FORBIDDEN")
        // No content type at all: refused too (CSRF needs application/json on every cookie call that changes state).
        const bare = yield* server.raw.request(`${CRM}/sessions/current`, { method: "DELETE", headers: withCookie(token) })
        expectBackOfficeError(bare, 403, "FORBIDDEN")
        const alive = yield* server.raw.request(`${CRM}/sessions/current`, { headers: withCookie(token) })
        assert.strictEqual(alive.status, 200, alive.text)
        const same = yield* server.raw.request(`${CRM}/sessions/current`, {
          method: "DELETE",
          headers: { ...withCookie(token), origin: `http://${host}`, "content-type": "application/json" }
        })
        assert.strictEqual(same.status, 200, same.text)
        // The Authorization header is not a browser's ambient credential: no content type needed.
        const other = yield* signedIn(world.ownerEmail)
        const byHeader = yield* server.raw.request(`${CRM}/sessions/current`, { method: "DELETE", headers: withSession(other.token) })
        assert.strictEqual(byHeader.status, 200, byHeader.text)
      }))
  })

  describe("the typed client", () => {
    it.effect("decodes successes and the back office's errors to the table's classes", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const world = yield* World
        const anonymous = yield* backOfficeClient(server.baseUrl)
        const signedIn = yield* anonymous.login.create({ payload: { email: world.ownerEmail, password: PASSWORD } })
        assert.strictEqual(signedIn.employee.role, "owner")
        const wrong = yield* anonymous.login.create({ payload: { email: "nobody@x.test", password: "nope nope nope" } })
          .pipe(failsWith(BackOfficeErrors.Unauthenticated))
        assert.strictEqual(wrong.message, "Wrong e-mail or password.")
        yield* anonymous.sessions.current().pipe(failsWith(BackOfficeErrors.Unauthenticated))
        const api = yield* backOfficeClient(server.baseUrl, signedIn.token)
        const current = yield* api.sessions.current()
        assert.deepStrictEqual(current.employee, signedIn.employee)
        yield* api.sessions.delete()
        yield* api.sessions.current().pipe(failsWith(BackOfficeErrors.Unauthenticated))
      }))
  })

  describe("routes", () => {
    it.effect("OpenAPI at /api/crm/v1/openapi.json; unknown routes and methods in the back office's envelope", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const openapi = yield* server.raw.get(`${CRM}/openapi.json`)
        assert.strictEqual(openapi.status, 200)
        assert.include(openapi.text, "/api/crm/v1/sessions/current")
        expectBackOfficeError(yield* server.raw.get(`${CRM}/nothing-here`), 404, "NOT_FOUND")
        // A body over 256 KiB, and one that is not JSON: the back office's envelope too.
        const large = yield* server.raw.post(`${CRM}/sessions`, { body: `{"email":"${"a".repeat(300 * 1024)}"}` })
        expectBackOfficeError(large, 413, "PAYLOAD_TOO_LARGE")
        const plain = yield* server.raw.post(`${CRM}/sessions`, { body: "email=a", headers: { "content-type": "text/plain" } })
        expectBackOfficeError(plain, 415, "UNSUPPORTED_MEDIA_TYPE")
        const put = yield* server.raw.request(`${CRM}/sessions/current`, { method: "PUT" })
        expectBackOfficeError(put, 405, "METHOD_NOT_ALLOWED")
        assert.strictEqual(put.headers.get("allow"), "GET, DELETE")
      }))
  })

  describe("brute force", () => {
    it.effect("30 concurrent wrong guesses for one e-mail: at most 5 are checked, the rest 429", () =>
      Effect.gen(function*() {
        const email = "burst@school-a.test"
        const passwordHash = yield* hashPassword(PASSWORD)
        yield* createSchool({ name: "School Burst", plan: null, owner: { name: "B", email, passwordHash } })
        const replies = yield* Effect.forEach(
          Array.from({ length: 30 }, (_, i) => i),
          (i) => signIn(email, `wrong password ${i}`),
          { concurrency: "unbounded" }
        )
        const checked = replies.filter((reply) => reply.status === 401).length
        const throttled = replies.filter((reply) => reply.status === 429).length
        assert.strictEqual(checked + throttled, 30, replies.map((reply) => reply.status).join(","))
        assert.isAtLeast(checked, 1)
        assert.isAtMost(checked, SessionRules.FREE_FAILURES)
        // Even the right password waits now.
        expectBackOfficeError(yield* signIn(email, PASSWORD), 429, "TOO_MANY_ATTEMPTS")
      }))

    it.effect("after 5 failures for one e-mail: 429 TOO_MANY_ATTEMPTS with Retry-After; other e-mails unaffected; success after the wait", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const email = "teacher@school-a.test"
        const passwordHash = yield* hashPassword(PASSWORD)
        yield* createSchool({ name: "School T", plan: null, owner: { name: "T", email, passwordHash } })
        for (let i = 0; i < SessionRules.FREE_FAILURES; i++) {
          expectBackOfficeError(yield* signIn(email, `wrong password ${i}`), 401, "UNAUTHENTICATED")
        }
        // Even the right password waits now.
        const throttled = yield* signIn(email, PASSWORD)
        expectBackOfficeError(throttled, 429, "TOO_MANY_ATTEMPTS")
        assert.strictEqual(throttled.headers.get("retry-after"), "1")
        // Another e-mail is not slowed down.
        yield* signedIn(world.otherEmail)
        yield* Effect.sleep("1100 millis")
        yield* signedIn(email)
        // A success forgets the failures.
        const left = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM login_failures WHERE email = ${email}`
        assert.strictEqual(left[0]?.n, 0)
      }))
  })
})
