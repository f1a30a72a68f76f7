/**
 * The per-key rate limit through the whole API (`TestServer`), against a real
 * PostgreSQL (docs/integrators.md "Limits", docs/decisions.md "Rate limits"): exactly the budget, then 429
 * `rate_limit_exceeded` with a correct `Retry-After` and no `X-RateLimit-*`
 * headers; waiting `Retry-After` is enough; per-plan budgets; keys of one
 * school are independent; a plan change applies to the next request; requests
 * that do not authenticate write nothing; a key known to be over budget is
 * rejected by the process without the database.
 *
 * The limiter's clock is injected (a variable, in µs), so a minute passes in
 * no time; the two-process test (`test/processes/rateLimit.test.ts`) uses the
 * database's clock and a short window instead.
 */
import { assert, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKey } from "@school/domain"
import { errorOf, JSON_CONTENT_TYPE, type RawReply, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const STUDENTS = `${V1}/students?per_page=1`
const SECOND = 1_000_000
/** The injected clock's origin: a realistic time, µs since the epoch. */
const T0 = 1_800_000_000 * SECOND

const sleep = (ms: number) => Effect.sleep(`${ms} millis`)

/**
 * Repeats `self` until `done`, for at most `ms`: for what reaches the
 * process by NOTIFY (milliseconds after the commit).
 */
const eventually = <A, E, R>(ms: number, self: Effect.Effect<A, E, R>, done: (a: A) => boolean) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (true) {
      const result = yield* self
      if (done(result) || Date.now() > deadline) return result
      yield* sleep(5)
    }
  })

/** The limiter's clock (µs): each request sets it first. */
let now = T0

class Api extends Context.Service<Api, {
  /** GET with this key at the limiter time `at` (µs). */
  readonly get: (key: string, at: number, path?: string) => Effect.Effect<RawReply>
}>()("test/api/rateLimit/Api") {
  static readonly layer = Layer.effect(
    Api,
    Effect.gen(function*() {
      const server = yield* TestServer
      const pg = yield* PgClient.PgClient
      const get = (key: string, at: number, path = STUDENTS) =>
        Effect.suspend(() => {
          now = at
          return server.raw.get(path, key)
        }).pipe(Effect.orDie)
      // The invalidation listener connects in the background once the routes
      // are built: wait for its LISTEN, so local blocks (and their
      // invalidation) are part of every test here.
      yield* Effect.orDie(server.raw.get("/health/live"))
      for (let attempt = 0;; attempt++) {
        const [row] = yield* pg<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND query ILIKE 'LISTEN%rate_limit_invalidate%'`.pipe(Effect.orDie)
        if ((row?.n ?? 0) > 0) break
        if (attempt === 500) return yield* Effect.die("the rate limit's LISTEN did not start")
        yield* sleep(20)
      }
      return Api.of({ get })
    })
  )
}

const Env = Api.layer.pipe(
  Layer.provideMerge(TestServer.layer({ rateLimit: { clock: Option.some(Effect.sync(() => now)) } })),
  Layer.provideMerge(TestDatabase.layer)
)

const statuses = (replies: ReadonlyArray<RawReply>) => {
  const counts: Record<number, number> = {}
  for (const { status } of replies) counts[status] = (counts[status] ?? 0) + 1
  return counts
}

/** `count` requests of one key at the same instant, a few at a time. */
const burst = (key: string, at: number, count: number) =>
  Effect.flatMap(Api, (api) =>
    Effect.forEach(Array.from({ length: count }, () => key), (k) => api.get(k, at), { concurrency: 8 }))

const newKey = Effect.fnUntraced(function*(plan: string | null, options: Fixtures.KeyOptions = {}) {
  const { schoolId } = yield* Fixtures.school(plan, `School ${plan ?? "none"}`)
  return { schoolId, key: yield* Fixtures.key(schoolId, options) }
})

const assertRateLimited = (reply: RawReply, retryAfter: number) => {
  assert.strictEqual(reply.status, 429)
  assert.strictEqual(reply.headers.get("retry-after"), String(retryAfter))
  assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
  // Exactly `{ error: { code, message } }`: the strict decode refuses anything more.
  const error = errorOf(reply)
  assert.strictEqual(error.code, "rate_limit_exceeded")
  assert.isString(error.message)
  assert.notProperty(error, "fields")
  for (const [name] of reply.headers) assert.notMatch(name, /^x-ratelimit/i)
}

layer(Env, { timeout: 120_000, excludeTestServices: true })("rate limit through the API", (it) => {
  it.effect("exactly the budget, then 429 with Retry-After; waiting it is enough; a 429 costs nothing", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const { key } = yield* newKey("basic")
      // 120 requests spread over the first 11.9 s of the window.
      for (let i = 0; i < 120; i++) {
        const reply = yield* api.get(key, T0 + i * 100_000)
        assert.strictEqual(reply.status, 200, `request ${i}`)
      }
      // 20 s in: the first request leaves the window at T0 + 60 s.
      assertRateLimited(yield* api.get(key, T0 + 20 * SECOND), 40)
      // Retry-After is rounded up to whole seconds, and never 0.
      assertRateLimited(yield* api.get(key, T0 + 20 * SECOND + 1), 40)
      assertRateLimited(yield* api.get(key, T0 + 59 * SECOND), 1)
      assertRateLimited(yield* api.get(key, T0 + 60 * SECOND - 1), 1)
      // A flood of rejected requests consumed nothing: at exactly 60 s one slot is free…
      assert.strictEqual((yield* api.get(key, T0 + 60 * SECOND)).status, 200)
      // …and only one: the next frees at T0 + 60.1 s.
      assertRateLimited(yield* api.get(key, T0 + 60 * SECOND), 1)
      assert.strictEqual((yield* api.get(key, T0 + 60 * SECOND + 100_000)).status, 200)
    }))

  it.effect("waiting exactly Retry-After after a burst succeeds", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const { key } = yield* newKey(null)
      const start = T0 + 1_234_567
      assert.deepStrictEqual(statuses(yield* burst(key, start, 120)), { 200: 120 })
      const later = start + 17_500_000
      const rejected = yield* api.get(key, later)
      assert.strictEqual(rejected.status, 429)
      const retryAfter = Number(rejected.headers.get("retry-after"))
      // 60 - 17.5 = 42.5 s, rounded up.
      assert.strictEqual(retryAfter, 43)
      assert.strictEqual((yield* api.get(key, later + retryAfter * SECOND)).status, 200)
    }))

  it.effect("budgets per plan: basic, economy, standard 120; extended 300; pro 600; none 120", () =>
    Effect.gen(function*() {
      const plans: ReadonlyArray<readonly [string | null, number]> = [
        ["basic", 120],
        ["economy", 120],
        ["standard", 120],
        ["extended", 300],
        ["pro", 600],
        [null, 120]
      ]
      for (const [plan, budget] of plans) {
        const { key } = yield* newKey(plan)
        const at = T0 + 3_600 * SECOND
        assert.deepStrictEqual(statuses(yield* burst(key, at, budget + 5)), { 200: budget, 429: 5 }, `plan ${plan}`)
      }
    }))

  it.effect("two keys of one school have their own budgets", () =>
    Effect.gen(function*() {
      const { schoolId, key: first } = yield* newKey("basic")
      const second = yield* Fixtures.key(schoolId, { scope: "write" })
      const at = T0 + 7_200 * SECOND
      assert.deepStrictEqual(statuses(yield* burst(first, at, 130)), { 200: 120, 429: 10 })
      assert.deepStrictEqual(statuses(yield* burst(second, at, 130)), { 200: 120, 429: 10 })
    }))

  it.effect("a plan change applies at once, also to a key this process had blocked", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const sql = yield* SqlClient.SqlClient
      const { schoolId, key } = yield* newKey("basic")
      const at = T0 + 10_800 * SECOND
      assert.deepStrictEqual(statuses(yield* burst(key, at, 121)), { 200: 120, 429: 1 })
      // Upgrade (what `schools set-plan` does). The key is blocked in this
      // process until at + 60 s; the change's NOTIFY lifts that block within
      // milliseconds of the commit (the database itself applies it to the
      // very next request: `test/persistence/rateLimits.store.test.ts`).
      yield* sql`UPDATE schools SET plan = 'pro' WHERE id = ${schoolId}`.pipe(Effect.orDie)
      const started = Date.now()
      const first = yield* eventually(1_000, api.get(key, at + SECOND), (reply) => reply.status === 200)
      assert.strictEqual(first.status, 200)
      assert.isBelow(Date.now() - started, 1_000)
      assert.deepStrictEqual(statuses(yield* burst(key, at + SECOND, 480)), { 200: 479, 429: 1 })
      // Downgrade: 600 in the window, budget 120 again: rejected, and the
      // wait is now counted from the 120th newest request (at + 1 s), not
      // from the block computed under `pro` (until at + 60 s).
      yield* sql`UPDATE schools SET plan = 'basic' WHERE id = ${schoolId}`.pipe(Effect.orDie)
      const retryAfter = (reply: RawReply) => reply.headers.get("retry-after")
      assertRateLimited(yield* eventually(1_000, api.get(key, at + 2 * SECOND), (r) => retryAfter(r) === "59"), 59)
      // The same key on `extended` (300): still 600 in the window.
      yield* sql`UPDATE schools SET plan = 'extended' WHERE id = ${schoolId}`.pipe(Effect.orDie)
      assertRateLimited(yield* api.get(key, at + 3 * SECOND), 58)
    }))

  it.effect("requests that do not authenticate write nothing and count nothing", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const { schoolId, key } = yield* newKey("basic")
      const revoked = yield* Fixtures.key(schoolId, { revoked: true })
      const expired = yield* Fixtures.key(schoolId, { expired: true })
      const parsed = Option.getOrThrow(ApiKey.parseApiKey(key))
      const wrongSecret = ApiKey.formatApiKey({ prefix: parsed.prefix, secret: "A".repeat(ApiKey.SECRET_LENGTH) })
      const unknown = ApiKey.formatApiKey({ prefix: "zzzzzzzz", secret: parsed.secret })
      const at = T0 + 14_400 * SECOND
      // Give the key some state first, so "nothing written" covers updates too.
      assert.strictEqual((yield* api.get(key, at)).status, 200)
      const before = yield* Fixtures.limiterSnapshot
      const cases: ReadonlyArray<readonly [string, string]> = [
        [wrongSecret, "unknown_key"],
        [unknown, "unknown_key"],
        [revoked, "revoked_key"],
        [expired, "expired_key"],
        ["svc_nonsense", "missing_or_malformed_key"]
      ]
      for (const [credential, reason] of cases) {
        for (let i = 0; i < 150; i++) {
          const reply = yield* api.get(credential, at + i)
          assert.strictEqual(reply.status, 401)
          assert.deepStrictEqual(errorOf(reply).fields, { reason })
        }
      }
      assert.deepStrictEqual(yield* Fixtures.limiterSnapshot, before)
      // And the key's budget is whole: 119 more are accepted.
      assert.deepStrictEqual(statuses(yield* burst(key, at + 1, 120)), { 200: 119, 429: 1 })
    }))

  it.effect("a key known to be over budget is rejected by the process itself", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const sql = yield* SqlClient.SqlClient
      const { key } = yield* newKey("basic")
      const { key: other } = yield* newKey("basic")
      const at = T0 + 18_000 * SECOND
      assert.deepStrictEqual(statuses(yield* burst(key, at, 121)), { 200: 120, 429: 1 })
      // With the key tables locked, any request that needs the database waits;
      // the blocked key's 429s still come at once.
      const replies = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`
        return yield* Effect.forEach(Array.from({ length: 500 }, (_, i) => i), (i) => api.get(key, at + SECOND + i), {
          concurrency: 50
        }).pipe(Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.die("timed out after 5 s") }))
      })).pipe(Effect.orDie)
      assert.deepStrictEqual(statuses(replies), { 429: 500 })
      // The other key was never affected, and the blocked one is still exact.
      assert.strictEqual((yield* api.get(other, at + 2 * SECOND)).status, 200)
      assertRateLimited(yield* api.get(key, at + 2 * SECOND), 58)
    }))

  it.effect("a revoked key stops being rate limited and answers 401 (within milliseconds)", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const sql = yield* SqlClient.SqlClient
      const { key } = yield* newKey("basic")
      const at = T0 + 21_600 * SECOND
      assert.deepStrictEqual(statuses(yield* burst(key, at, 121)), { 200: 120, 429: 1 })
      const { prefix } = Option.getOrThrow(ApiKey.parseApiKey(key))
      yield* sql`UPDATE api_keys SET revoked_at = now() WHERE prefix = ${prefix}`.pipe(Effect.orDie)
      const reply = yield* eventually(1_000, api.get(key, at + SECOND), (reply) => reply.status === 401)
      assert.strictEqual(reply.status, 401)
      assert.deepStrictEqual(errorOf(reply).fields, { reason: "revoked_key" })
    }))

  it.effect("interleaved requests of one key and of others, sent at once (batched): the model's answers and Retry-After", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const { key: a } = yield* newKey("basic")
      const { key: b } = yield* newKey("basic")
      const at = T0 + 28_800 * SECOND
      // a: 118 of its 120 in the window, taken at `at`.
      assert.deepStrictEqual(statuses(yield* burst(a, at, 118)), { 200: 118 })
      // 12.5 s later, interleaved at once: a gets its last 2, then 429 until `at` + 60 s (Retry-After 48).
      const replies = yield* Effect.forEach([a, b, a, b, a, b, a, b, a], (key) => api.get(key, at + 12_500_000), {
        concurrency: "unbounded"
      })
      const of = (key: string) => replies.filter((_, i) => (i % 2 === 0 ? a : b) === key)
      assert.deepStrictEqual(statuses(of(a)), { 200: 2, 429: 3 })
      for (const reply of of(a).filter((reply) => reply.status === 429)) assertRateLimited(reply, 48)
      assert.deepStrictEqual(statuses(of(b)), { 200: 4 })
    }))

  it.effect("every authenticated request counts, whatever its outcome", () =>
    Effect.gen(function*() {
      const api = yield* Api
      const { key } = yield* newKey("basic")
      const at = T0 + 25_200 * SECOND
      const outcomes: Record<number, number> = {}
      for (let i = 0; i < 120; i++) {
        // 404 not_found, 422 validation_failed and 200, in turn.
        const path = [`${V1}/students/999999`, `${V1}/students?per_page=500`, STUDENTS][i % 3]
        const reply = yield* api.get(key, at, path)
        outcomes[reply.status] = (outcomes[reply.status] ?? 0) + 1
      }
      assert.deepStrictEqual(outcomes, { 200: 40, 404: 40, 422: 40 })
      assert.strictEqual((yield* api.get(key, at)).status, 429)
    }))
})
