/**
 * The back office's API keys (docs/back-office.md "API keys";
 * docs/decisions.md "Plans and key issuance") over a real socket against a
 * real database: issuing (the whole key once, only its hash stored, working
 * on the public API at once; TARIFF_TOO_LOW with exactly three keys below
 * Extended or with no plan; expires_at in the future), the list (never the
 * secret nor its hash), revocation (the first time kept; `revoked_key` at
 * once; right after the key was blocked locally by the rate limiter, as
 * soon as the 0200 trigger's NOTIFY drops the block: milliseconds, never a
 * 200 meanwhile), `expired_key`, a read
 * key's `insufficient_scope`, 404 across schools, 403 for manager and
 * teacher with nothing written, 422 with fields. The server's budget is 5
 * requests a minute per key, so a key is rate limited cheaply. And the plan
 * and expiry rules as properties.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKey, Plans } from "@school/domain"
import { Meta } from "@school/domain/Pagination"
import { formatUtc } from "@school/domain/Timestamps"
import * as BackOffice from "../support/BackOffice.ts"
import { errorOf, type RawReply, V1 } from "../support/Clients.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const strict = { onExcessProperty: "error" } as const
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u
const Ts = Schema.String.check(Schema.isPattern(TIMESTAMP))
const BUDGET = 5

const Issued = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  scope: Schema.Literals(["read", "write"]),
  prefix: Schema.String.check(Schema.isPattern(/^[a-z0-9]{8}$/u)),
  key: Schema.String.check(Schema.isPattern(/^svc_[a-z0-9]{8}_[A-Za-z0-9]{32}$/u)),
  created_at: Ts,
  expires_at: Schema.NullOr(Ts)
})
const Listed = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  scope: Schema.Literals(["read", "write"]),
  prefix: Schema.String,
  created_at: Ts,
  expires_at: Schema.NullOr(Ts),
  revoked_at: Schema.NullOr(Ts)
})
const LIST_KEYS = ["created_at", "expires_at", "id", "name", "prefix", "revoked_at", "scope"]
const KeyList = Schema.Struct({ success: Schema.Literal(true), data: Schema.Array(Listed), meta: Meta })

const listOf = (reply: RawReply) => {
  assert.strictEqual(reply.status, 200, reply.text)
  return Schema.decodeUnknownSync(KeyList)(reply.json, strict)
}

const keyCount = Effect.fnUntraced(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ keys: number; routes: number; revoked: number }>`
    SELECT (SELECT count(*)::int FROM api_keys) AS keys, (SELECT count(*)::int FROM api_key_prefixes) AS routes,
           (SELECT count(*)::int FROM api_keys WHERE revoked_at IS NOT NULL) AS revoked`
  return rows[0]
}, Effect.orDie)

/** A public API read with the key. */
const students = (key: string) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    return yield* server.raw.get(`${V1}/students?per_page=1`, key)
  })

/** The top-level keys of a JSON object reply. */
const keysOf = (reply: RawReply) => Object.keys(Schema.decodeUnknownSync(Schema.Record(Schema.String, Schema.Unknown))(reply.json)).sort()

/** The public API's 401 `reason`. */
const reasonOf = (reply: RawReply) => {
  assert.strictEqual(reply.status, 401, reply.text)
  return errorOf(reply).fields?.["reason"]
}

const Env = TestServer.layer({
  rateLimit: { budgets: Option.some({ byPlan: {}, fallback: BUDGET }) }
}).pipe(Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true })("back-office API keys", (it) => {
  describe("POST /api-keys", () => {
    it.effect("issued on Extended and Pro by owner and administrator: 201, the whole key once, only its hash stored, working at once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        for (const plan of ["extended", "pro"] as const) {
          const school = yield* BackOffice.staffSchool(plan)
          for (const role of ["owner", "administrator"] as const) {
            const session = yield* BackOffice.crm(school.emails[role])
            const reply = yield* session.post("/api-keys", { name: `  ${role}'s site  `, scope: "read" })
            const issued = BackOffice.dataOf(Issued, reply, 201)
            assert.strictEqual(issued.name, `${role}'s site`)
            assert.strictEqual(issued.scope, "read")
            assert.isNull(issued.expires_at)
            const parsed = Option.getOrThrow(ApiKey.parseApiKey(issued.key))
            assert.strictEqual(parsed.prefix, issued.prefix)

            const [row] = yield* sql<{ secret_hash: Uint8Array; route: number }>`
              SELECT k.secret_hash, p.school_id AS route FROM api_keys k
              JOIN api_key_prefixes p ON p.prefix = k.prefix
              WHERE k.school_id = ${school.schoolId} AND k.id = ${issued.id}`
            assert.isDefined(row)
            assert.strictEqual(row.route, school.schoolId)
            assert.deepStrictEqual(Buffer.from(row.secret_hash), Buffer.from(ApiKey.hashSecret(parsed.secret)))
            // The secret itself is nowhere in the database's row.
            const [text] = yield* sql<{ row: string }>`
              SELECT k::text AS row FROM api_keys k WHERE school_id = ${school.schoolId} AND id = ${issued.id}`
            assert.notInclude(text?.row ?? "", parsed.secret)

            // Works on the public API at once; never on the back office.
            assert.strictEqual((yield* students(issued.key)).status, 200)
            const server = yield* TestServer
            BackOffice.expectError(yield* server.raw.get(`${BackOffice.CRM}/api-keys`, issued.key), 401, "UNAUTHENTICATED")
          }
        }
      }))

    it.effect("expires_at in the future (any offset) is kept as its UTC instant; null or omitted: never", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool("pro")
        const owner = yield* BackOffice.crm(school.emails.owner)
        const reply = yield* owner.post("/api-keys", { name: "CRM sync", scope: "write", expires_at: "2099-03-04T05:06:07.5+03:00" })
        const issued = BackOffice.dataOf(Issued, reply, 201)
        assert.strictEqual(issued.expires_at, "2099-03-04T02:06:07.500000Z")
        assert.strictEqual(issued.scope, "write")
        assert.strictEqual((yield* students(issued.key)).status, 200)
        const never = BackOffice.dataOf(Issued, yield* owner.post("/api-keys", { name: "n", scope: "read", expires_at: null }), 201)
        assert.isNull(never.expires_at)
      }))

    it.effect("below Extended or with no plan: 403 with exactly success, code TARIFF_TOO_LOW and message; nothing written", () =>
      Effect.gen(function*() {
        const before = yield* keyCount()
        for (const plan of ["basic", "economy", "standard", null] as const) {
          const school = yield* BackOffice.staffSchool(plan)
          const owner = yield* BackOffice.crm(school.emails.owner)
          const reply = yield* owner.post("/api-keys", { name: "site", scope: "read" })
          BackOffice.expectError(reply, 403, "TARIFF_TOO_LOW")
          assert.deepStrictEqual(keysOf(reply), ["code", "message", "success"])
          const body = Schema.decodeUnknownSync(Schema.Struct({
            success: Schema.Literal(false),
            code: Schema.Literal("TARIFF_TOO_LOW"),
            message: Schema.String
          }))(reply.json, strict)
          assert.match(body.message, /Extended/u)
          assert.include(body.message, plan === null ? "no plan" : plan)
        }
        assert.deepStrictEqual(yield* keyCount(), before)
      }))

    it.effect("422 with fields: name, scope, expires_at (malformed, no offset, past, now); nothing written", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool("pro")
        const owner = yield* BackOffice.crm(school.emails.owner)
        const before = yield* keyCount()
        const cases: ReadonlyArray<readonly [unknown, ReadonlyArray<string>]> = [
          [{ scope: "read" }, ["name"]],
          [{ name: "   ", scope: "read" }, ["name"]],
          [{ name: "x".repeat(256), scope: "read" }, ["name"]],
          [{ name: 5, scope: "read" }, ["name"]],
          [{ name: "site" }, ["scope"]],
          [{ name: "site", scope: "admin" }, ["scope"]],
          [{ name: "site", scope: "READ" }, ["scope"]],
          [{ name: "site", scope: "read", expires_at: "tomorrow" }, ["expires_at"]],
          [{ name: "site", scope: "read", expires_at: "2099-01-01T00:00:00" }, ["expires_at"]],
          [{ name: "site", scope: "read", expires_at: "2099-02-30T00:00:00Z" }, ["expires_at"]],
          [{ name: "site", scope: "read", expires_at: 4102444800 }, ["expires_at"]],
          [{ name: "site", scope: "read", expires_at: "2020-01-01T00:00:00Z" }, ["expires_at"]],
          [{ name: "site", scope: "read", expires_at: new Date(Date.now() - 1000).toISOString() }, ["expires_at"]],
          [{}, ["name", "scope"]]
        ]
        for (const [body, fields] of cases) {
          const error = BackOffice.expectError(yield* owner.post("/api-keys", body), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), fields, JSON.stringify(body))
        }
        const past = BackOffice.expectError(
          yield* owner.post("/api-keys", { name: "site", scope: "read", expires_at: "2020-01-01T00:00:00+05:00" }),
          422,
          "VALIDATION_FAILED"
        )
        assert.deepStrictEqual(past.fields, { expires_at: ["Expected an instant in the future"] })
        assert.deepStrictEqual(yield* keyCount(), before)
      }))
  })

  describe("GET /api-keys", () => {
    it.effect("the school's keys only, by ascending id, paginated; exactly the listed fields, never the secret nor its hash", () =>
      Effect.gen(function*() {
        const a = yield* BackOffice.staffSchool("pro")
        const b = yield* BackOffice.staffSchool("extended")
        const owner = yield* BackOffice.crm(a.emails.owner)
        const issued: Array<typeof Issued.Type> = []
        for (const scope of ["read", "write", "read"] as const) {
          issued.push(BackOffice.dataOf(Issued, yield* owner.post("/api-keys", { name: `key ${scope}`, scope }), 201))
        }
        BackOffice.dataOf(Issued, yield* (yield* BackOffice.crm(b.emails.owner)).post("/api-keys", { name: "b's", scope: "read" }), 201)

        const reply = yield* owner.get("/api-keys")
        const all = listOf(reply)
        assert.deepStrictEqual(all.meta, { page: 1, per_page: 20, total: 3 })
        assert.deepStrictEqual(all.data, issued.map(({ key: _, ...rest }) => ({ ...rest, revoked_at: null })))
        for (const item of Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)) }))(reply.json).data) {
          assert.deepStrictEqual(Object.keys(item).sort(), LIST_KEYS)
        }
        for (const { key } of issued) {
          const { secret } = Option.getOrThrow(ApiKey.parseApiKey(key))
          assert.notInclude(reply.text, secret)
          assert.notInclude(reply.text, Buffer.from(ApiKey.hashSecret(secret)).toString("hex"))
          assert.notInclude(reply.text, Buffer.from(ApiKey.hashSecret(secret)).toString("base64"))
        }

        const second = listOf(yield* owner.get("/api-keys?page=2&per_page=2"))
        assert.deepStrictEqual(second.meta, { page: 2, per_page: 2, total: 3 })
        assert.deepStrictEqual(second.data.map((key) => key.id), [issued[2]?.id])
        const error = BackOffice.expectError(yield* owner.get("/api-keys?per_page=101"), 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["per_page"])
      }))
  })

  describe("DELETE /api-keys/{id}", () => {
    it.effect("revokes: 200 with the key as listed; revoked_key on the public API at once; a second revocation keeps the first time", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool("pro")
        const owner = yield* BackOffice.crm(school.emails.owner)
        const admin = yield* BackOffice.crm(school.emails.administrator)
        const issued = BackOffice.dataOf(Issued, yield* owner.post("/api-keys", { name: "site", scope: "write" }), 201)
        assert.strictEqual((yield* students(issued.key)).status, 200)

        const first = yield* admin.delete(`/api-keys/${issued.id}`)
        const revoked = BackOffice.dataOf(Listed, first)
        const { key: _, ...shown } = issued
        assert.deepStrictEqual({ ...revoked, revoked_at: null }, { ...shown, revoked_at: null })
        assert.isNotNull(revoked.revoked_at)
        assert.strictEqual(reasonOf(yield* students(issued.key)), "revoked_key")

        const again = BackOffice.dataOf(Listed, yield* owner.delete(`/api-keys/${issued.id}`))
        assert.deepStrictEqual(again, revoked)
        assert.deepStrictEqual(listOf(yield* owner.get("/api-keys")).data, [revoked])
        assert.strictEqual(reasonOf(yield* students(issued.key)), "revoked_key")
      }))

    it.effect("revoked right after the rate limiter blocked the key locally: the very next request is revoked_key", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const school = yield* BackOffice.staffSchool("pro")
        const owner = yield* BackOffice.crm(school.emails.owner)
        for (let round = 0; round < 3; round++) {
          const issued = BackOffice.dataOf(Issued, yield* owner.post("/api-keys", { name: `flooded ${round}`, scope: "read" }), 201)
          const flood = yield* Effect.forEach(Array.from({ length: BUDGET + 3 }, (_, i) => i), () => students(issued.key))
          assert.deepStrictEqual(flood.map((reply) => reply.status), [
            ...Array.from({ length: BUDGET }, () => 200),
            429,
            429,
            429
          ])
          // The block is the process's own: with the key tables locked, the 429 still comes at once.
          const blocked = yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`
            return yield* students(issued.key).pipe(
              Effect.timeoutOrElse({ duration: "3 seconds", orElse: () => Effect.die("not blocked locally") })
            )
          })).pipe(Effect.orDie)
          assert.strictEqual(blocked.status, 429)

          BackOffice.dataOf(Listed, yield* owner.delete(`/api-keys/${issued.id}`))
          // The revoking process drops its own block before it answers (the other
          // processes on the trigger's NOTIFY: test/processes/revocation.test.ts).
          assert.strictEqual(reasonOf(yield* students(issued.key)), "revoked_key")
          // And it stays revoked_key.
          assert.strictEqual(reasonOf(yield* students(issued.key)), "revoked_key")
        }
      }))

    it.effect("another school's key, a missing id: the same 404 NOT_FOUND, nothing changed; a malformed id: 422 fields.id", () =>
      Effect.gen(function*() {
        const a = yield* BackOffice.staffSchool("pro")
        const b = yield* BackOffice.staffSchool("pro")
        const theirs = BackOffice.dataOf(Issued, yield* (yield* BackOffice.crm(b.emails.owner)).post("/api-keys", { name: "b", scope: "read" }), 201)
        const owner = yield* BackOffice.crm(a.emails.owner)
        const before = yield* keyCount()
        const foreign = BackOffice.expectError(yield* owner.delete(`/api-keys/${theirs.id}`), 404, "NOT_FOUND")
        const missing = BackOffice.expectError(yield* owner.delete(`/api-keys/2147483000`), 404, "NOT_FOUND")
        assert.strictEqual(foreign.message.replace(String(theirs.id), "N"), missing.message.replace("2147483000", "N"))
        assert.deepStrictEqual(yield* keyCount(), before)
        assert.strictEqual((yield* students(theirs.key)).status, 200)
        for (const id of ["abc", "0", "-1", "1.5", "2147483648"]) {
          const error = BackOffice.expectError(yield* owner.delete(`/api-keys/${id}`), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["id"], id)
        }
      }))
  })

  describe("on the public API", () => {
    it.effect("an expired key answers expired_key; a read key gets 403 insufficient_scope on a POST, a write key may", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const server = yield* TestServer
        const school = yield* BackOffice.staffSchool("pro")
        const owner = yield* BackOffice.crm(school.emails.owner)
        const expiring = BackOffice.dataOf(Issued, yield* owner.post("/api-keys", { name: "short", scope: "read", expires_at: "2099-01-01T00:00:00Z" }), 201)
        assert.strictEqual((yield* students(expiring.key)).status, 200)
        yield* sql`UPDATE api_keys SET expires_at = now() - interval '1 second'
                   WHERE school_id = ${school.schoolId} AND id = ${expiring.id}`.pipe(Effect.orDie)
        assert.strictEqual(reasonOf(yield* students(expiring.key)), "expired_key")

        const read = BackOffice.dataOf(Issued, yield* owner.post("/api-keys", { name: "reader", scope: "read" }), 201)
        const write = BackOffice.dataOf(Issued, yield* owner.post("/api-keys", { name: "writer", scope: "write" }), 201)
        const lead = { phone: "+7 900 123-45-67", name: "From the site" }
        const refused = yield* server.raw.post(`${V1}/leads`, { key: read.key, idempotencyKey: "k-1", body: lead })
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(errorOf(refused).code, "insufficient_scope")
        const accepted = yield* server.raw.post(`${V1}/leads`, { key: write.key, idempotencyKey: "k-2", body: lead })
        assert.strictEqual(accepted.status, 201, accepted.text)
      }))
  })

  describe("roles and sessions", () => {
    it.effect("manager and teacher: 403 FORBIDDEN on every call, valid body or not, nothing changed; no session: 401", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool("pro")
        const owner = yield* BackOffice.crm(school.emails.owner)
        const issued = BackOffice.dataOf(Issued, yield* owner.post("/api-keys", { name: "site", scope: "read" }), 201)
        const before = yield* keyCount()
        for (const role of ["manager", "teacher"] as const) {
          const session = yield* BackOffice.crm(school.emails[role])
          BackOffice.expectError(yield* session.post("/api-keys", { name: "mine", scope: "write" }), 403, "FORBIDDEN")
          BackOffice.expectError(yield* session.post("/api-keys", { scope: "nope" }), 403, "FORBIDDEN")
          BackOffice.expectError(yield* session.get("/api-keys"), 403, "FORBIDDEN")
          BackOffice.expectError(yield* session.delete(`/api-keys/${issued.id}`), 403, "FORBIDDEN")
          BackOffice.expectError(yield* session.delete(`/api-keys/abc`), 403, "FORBIDDEN")
        }
        assert.deepStrictEqual(yield* keyCount(), before)
        assert.strictEqual((yield* students(issued.key)).status, 200)
        const server = yield* TestServer
        for (const reply of [
          yield* server.raw.post(`${BackOffice.CRM}/api-keys`, { body: { name: "anon", scope: "read" } }),
          yield* server.raw.get(`${BackOffice.CRM}/api-keys`),
          yield* server.raw.request(`${BackOffice.CRM}/api-keys/${issued.id}`, { method: "DELETE" })
        ]) {
          BackOffice.expectError(reply, 401, "UNAUTHENTICATED")
        }
        assert.deepStrictEqual(yield* keyCount(), before)
      }))
  })
})

describe("the plan and expiry rules (properties)", () => {
  it.prop("only Extended and Pro may issue keys; no plan or an unknown one may not", [Schema.NullOr(Schema.String)], ([plan]) => {
    assert.strictEqual(Plans.canIssueKeys(plan), plan === "extended" || plan === "pro")
    if (!Plans.canIssueKeys(plan)) assert.match(Plans.keysNeedPlanMessage(plan), /Extended/u)
  })

  it("every plan of the list, by name", () => {
    assert.deepStrictEqual(Plans.Plan.literals.filter((plan) => Plans.canIssueKeys(plan)), ["extended", "pro"])
  })

  const Micros = Schema.Int.check(Schema.isBetween({ minimum: -5_000_000_000, maximum: 5_000_000_000 }))
  const NowMs = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4_000_000_000_000 }))

  it.prop("an expiry is accepted exactly when it is after now, to the microsecond", [NowMs, Micros], ([nowMs, deltaMicros]) => {
    const target = nowMs * 1000 + deltaMicros
    const epochSeconds = Math.floor(target / 1_000_000)
    const text = formatUtc({ epochSeconds, micros: target - epochSeconds * 1_000_000 })
    assert.strictEqual(ApiKey.expiryProblem(text, nowMs) === undefined, deltaMicros > 0, `${text} vs ${nowMs}`)
  })

  it("a malformed expiry says why", () => {
    assert.isDefined(ApiKey.expiryProblem("2099-01-01", 0))
    assert.strictEqual(ApiKey.expiryProblem("2000-01-01T00:00:00Z", Date.now()), ApiKey.EXPIRY_IN_PAST_MESSAGE)
  })
})
