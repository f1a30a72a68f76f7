/**
 * The rate-limit store (`@school/persistence/RateLimits`) against a real
 * PostgreSQL: its SQL transition decides exactly like the pure one and the
 * reference model and leaves the very same ring behind; the plan's budget is
 * read per request; a request that does not authenticate and a rejected one
 * write nothing; concurrent requests never take more than the budget.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKey, RateLimit } from "@school/domain"
import { RateLimits } from "@school/persistence/RateLimits"
import * as Fixtures from "../support/Fixtures.ts"
import { Budget, Gap, type Outcome, reference, Sequence, SEQUENCE_MAX, timesFrom, WINDOW } from "../support/RateLimitModel.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const Env = RateLimits.layer.pipe(Layer.provideMerge(TestDatabase.layer))

const window = Duration.millis(WINDOW / 1000)

const newKey = Effect.fnUntraced(function*(plan: string | null, options: Fixtures.KeyOptions = {}) {
  const { schoolId } = yield* Fixtures.school(plan, `School ${plan ?? "none"}`)
  const parsed = ApiKey.parseApiKey(yield* Fixtures.key(schoolId, options))
  if (Option.isNone(parsed)) return yield* Effect.die("the fixture issued a malformed key")
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ id: number }>`SELECT id FROM api_keys WHERE prefix = ${parsed.value.prefix}`.pipe(Effect.orDie)
  return {
    schoolId,
    keyId: row?.id ?? 0,
    prefix: parsed.value.prefix,
    hash: ApiKey.hashSecret(parsed.value.secret)
  }
})

interface StoredRing {
  readonly ring: ReadonlyArray<number>
  readonly head: number
  /** Row versions of the head row and every chunk: equal means nothing was written. */
  readonly version: string
}

/** The key's ring as the pure model sees it (missing chunks are empty slots), and its row versions. */
const stored = Effect.fnUntraced(function*(keyId: number) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<StoredRing>`
    SELECT coalesce((
             SELECT array_agg(coalesce(c.slots[g % 32 + 1], 0) ORDER BY g)::float8[]
             FROM generate_series(0, r.size - 1) AS g
             LEFT JOIN rate_limit_slots c ON c.school_id = r.school_id AND c.key_id = r.key_id AND c.chunk = g / 32),
             '{}') AS ring,
           r.head,
           r.xmin::text || '/' || r.ctid::text || ' ' || coalesce((
             SELECT string_agg(c.xmin::text || '/' || c.ctid::text, ' ' ORDER BY c.chunk)
             FROM rate_limit_slots c WHERE c.school_id = r.school_id AND c.key_id = r.key_id), '') AS version
    FROM rate_limits r WHERE r.key_id = ${keyId}`.pipe(Effect.orDie)
  return Option.fromNullishOr(rows[0])
})

const Backwards = Schema.Int.check(Schema.isBetween({ minimum: -WINDOW, maximum: 0 }))

/**
 * Sends the requests through the store with their times and budgets, and
 * checks every decision, wait and the stored ring against the pure
 * transition (and the reference model's outcomes when given).
 */
const replay = Effect.fnUntraced(function*(
  requests: ReadonlyArray<{ readonly at: number; readonly budget: number }>,
  expected?: ReadonlyArray<Outcome>
) {
  const store = yield* RateLimits
  const sql = yield* SqlClient.SqlClient
  const key = yield* newKey(null)
  let state = RateLimit.initial
  for (const [i, { at, budget }] of requests.entries()) {
    const admission = yield* store.admit(key.prefix, key.hash, { window, at, budgets: { byPlan: {}, fallback: budget } })
    const outcome = Option.getOrThrow(admission).outcome
    assert.notStrictEqual(outcome._tag, "NotCounted")
    const got: Outcome = outcome._tag === "Rejected" ? { accepted: false, wait: outcome.wait } : { accepted: true }
    const decision = RateLimit.take(state, at, budget, WINDOW)
    assert.deepStrictEqual(
      got,
      decision._tag === "Rejected" ? { accepted: false, wait: decision.wait } : { accepted: true },
      `request ${i}`
    )
    if (expected !== undefined) assert.deepStrictEqual(got, expected[i], `request ${i} (reference)`)
    if (decision._tag === "Accepted") state = decision.state
    const row = yield* stored(key.keyId)
    assert.deepStrictEqual(
      Option.map(row, ({ ring, head }) => ({ ring, head })),
      state.ring.length === 0 ? Option.none() : Option.some({ ring: state.ring, head: state.head })
    )
  }
  yield* sql`DELETE FROM api_keys WHERE id = ${key.keyId}`.pipe(Effect.orDie)
})

layer(Env, { excludeTestServices: true })("RateLimits store", (it) => {
  it.effect.prop(
    "the SQL transition: the same decisions, waits and ring as the pure one and the reference model",
    { steps: Sequence(Schema.Struct({ gap: Gap, budget: Budget })) },
    ({ steps }) => {
      const times = timesFrom(steps.map((step) => step.gap))
      const requests = steps.map((step, i) => ({ at: times[i] ?? 0, budget: step.budget }))
      return replay(requests, reference(requests, WINDOW))
    },
    { timeout: 120_000, arbitrary: { runs: 40, size: SEQUENCE_MAX } }
  )

  it.effect.prop(
    "times in any order (processes racing): the same decisions, waits and ring as the pure one",
    { steps: Sequence(Schema.Struct({ jump: Schema.Union([Gap, Backwards]), budget: Budget })) },
    ({ steps }) => {
      let at = 2 * WINDOW
      const requests = steps.map(({ jump, budget }) => ({ at: (at = Math.max(WINDOW, at + jump)), budget }))
      return replay(requests)
    },
    { timeout: 120_000, arbitrary: { runs: 40, size: SEQUENCE_MAX } }
  )

  it.effect("the budget is the school's plan, read on every request", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      const sql = yield* SqlClient.SqlClient
      const expected: ReadonlyArray<readonly [string | null, number]> = [
        ["basic", 120],
        ["economy", 120],
        ["standard", 120],
        ["extended", 300],
        ["pro", 600],
        [null, 120]
      ]
      for (const [plan, budget] of expected) {
        const key = yield* newKey(plan)
        const admission = yield* store.admit(key.prefix, key.hash, { window })
        assert.strictEqual(Option.getOrThrow(admission).key.budget, budget, `plan ${plan}`)
      }
      const key = yield* newKey("basic")
      yield* sql`UPDATE schools SET plan = 'pro' WHERE id = ${key.schoolId}`.pipe(Effect.orDie)
      const admission = yield* store.admit(key.prefix, key.hash, { window })
      assert.strictEqual(Option.getOrThrow(admission).key.budget, 600)
    }))

  it.effect("a request that does not authenticate counts nothing and writes nothing", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      const good = yield* newKey("basic")
      const wrongHash = ApiKey.hashSecret("x".repeat(ApiKey.SECRET_LENGTH))
      const wrong = yield* store.admit(good.prefix, wrongHash, { window })
      assert.strictEqual(Option.getOrThrow(wrong).outcome._tag, "NotCounted")
      assert.isTrue(Option.isNone(yield* stored(good.keyId)))

      for (const options of [{ revoked: true }, { expired: true }]) {
        const key = yield* newKey("basic", options)
        const admission = yield* store.admit(key.prefix, key.hash, { window })
        assert.strictEqual(Option.getOrThrow(admission).outcome._tag, "NotCounted")
        assert.isTrue(Option.isNone(yield* stored(key.keyId)))
      }
      assert.isTrue(Option.isNone(yield* store.admit("zzzzzzzz", wrongHash, { window })))

      // A key with state: a wrong secret leaves its row untouched (same version).
      assert.strictEqual(Option.getOrThrow(yield* store.admit(good.prefix, good.hash, { window })).outcome._tag, "Accepted")
      const before = Option.getOrThrow(yield* stored(good.keyId))
      yield* store.admit(good.prefix, wrongHash, { window })
      assert.deepStrictEqual(Option.getOrThrow(yield* stored(good.keyId)), before)
    }))

  it.effect("a deleted key's state goes with it", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      const sql = yield* SqlClient.SqlClient
      const key = yield* newKey("pro")
      assert.strictEqual(Option.getOrThrow(yield* store.admit(key.prefix, key.hash, { window })).outcome._tag, "Accepted")
      assert.isTrue(Option.isSome(yield* stored(key.keyId)))
      yield* sql`DELETE FROM api_keys WHERE id = ${key.keyId}`.pipe(Effect.orDie)
      const [left] = yield* sql<{ n: number }>`
        SELECT (SELECT count(*) FROM rate_limits WHERE key_id = ${key.keyId})::int
             + (SELECT count(*) FROM rate_limit_slots WHERE key_id = ${key.keyId})::int AS n`.pipe(Effect.orDie)
      assert.strictEqual(left?.n, 0)
    }))

  it.effect("a rejected request writes nothing", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      const key = yield* newKey(null)
      const limit = { window, budgets: { byPlan: {}, fallback: 3 } }
      for (let i = 0; i < 3; i++) {
        assert.strictEqual(Option.getOrThrow(yield* store.admit(key.prefix, key.hash, limit)).outcome._tag, "Accepted")
      }
      const before = Option.getOrThrow(yield* stored(key.keyId))
      for (let i = 0; i < 20; i++) {
        const outcome = Option.getOrThrow(yield* store.admit(key.prefix, key.hash, limit)).outcome
        assert.strictEqual(outcome._tag, "Rejected")
        if (outcome._tag === "Rejected") {
          assert.isAbove(outcome.wait, WINDOW - 10_000_000)
          assert.isAtMost(outcome.wait, WINDOW)
        }
      }
      assert.deepStrictEqual(Option.getOrThrow(yield* stored(key.keyId)), before)
    }))

  it.effect("concurrent requests of one key within its budget are all accepted", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      for (const at of [undefined, 7 * WINDOW]) {
        const key = yield* newKey(null)
        const limit = { window, budgets: { byPlan: {}, fallback: 150 }, ...(at === undefined ? {} : { at }) }
        const outcomes = yield* Effect.forEach(
          Array.from({ length: 150 }, () => key),
          ({ prefix, hash }) => Effect.map(store.admit(prefix, hash, limit), (a) => Option.getOrThrow(a).outcome._tag),
          { concurrency: 16 }
        )
        assert.deepStrictEqual(
          outcomes.filter((tag) => tag !== "Accepted"),
          [],
          `clock: ${at ?? "database"}`
        )
        const next = Option.getOrThrow(yield* store.admit(key.prefix, key.hash, limit)).outcome
        assert.strictEqual(next._tag, "Rejected")
      }
    }))

  it.effect("concurrent requests of one key: exactly the budget is accepted", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      for (const at of [undefined, 5 * WINDOW]) {
        const key = yield* newKey(null)
        const limit = { window, budgets: { byPlan: {}, fallback: 7 }, ...(at === undefined ? {} : { at }) }
        const outcomes = yield* Effect.forEach(
          Array.from({ length: 60 }, () => key),
          ({ prefix, hash }) => Effect.map(store.admit(prefix, hash, limit), (a) => Option.getOrThrow(a).outcome._tag),
          { concurrency: 30 }
        )
        assert.strictEqual(outcomes.filter((tag) => tag === "Accepted").length, 7, `clock: ${at ?? "database"}`)
        assert.strictEqual(outcomes.filter((tag) => tag === "Rejected").length, 53)
      }
    }))
})
