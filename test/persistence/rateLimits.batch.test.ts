/**
 * The rate-limit store's batched statement (`RateLimits.admitAll`,
 * docs/decisions.md "Batched authentication") against a real PostgreSQL:
 * requests of several keys interleaved in batches get exactly the answers of
 * the reference model, key by key (two requests of one key in one batch take
 * two slots, as two statements would); unknown, revoked, expired and
 * wrong-secret requests in a batch with good ones are answered as alone and
 * count nothing; batches of two processes with the same keys in opposite
 * orders never deadlock; a failing batch fails whole and counts nothing.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKey } from "@school/domain"
import { type Admission, type AdmitRequest, RateLimits } from "@school/persistence/RateLimits"
import * as Fixtures from "../support/Fixtures.ts"
import { Budget, Gap, type Outcome, reference, Sequence, SEQUENCE_MAX, timesFrom, WINDOW } from "../support/RateLimitModel.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const Env = RateLimits.layer.pipe(Layer.provideMerge(TestDatabase.layer))

const window = Duration.millis(WINDOW / 1000)

const newKey = Effect.fnUntraced(function*(plan: string | null, options: Fixtures.KeyOptions = {}) {
  const { schoolId } = yield* Fixtures.school(plan, `School ${plan ?? "none"}`)
  const parsed = Option.getOrThrow(ApiKey.parseApiKey(yield* Fixtures.key(schoolId, options)))
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ id: number }>`SELECT id FROM api_keys WHERE prefix = ${parsed.prefix}`.pipe(Effect.orDie)
  return { schoolId, keyId: row?.id ?? 0, prefix: parsed.prefix, hash: ApiKey.hashSecret(parsed.secret) }
})

const KEYS = 3

const Step = Schema.Struct({
  key: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: KEYS - 1 })),
  gap: Gap,
  /** Starts a new batch (the first step always does). */
  cut: Schema.Boolean,
  budget: Budget
})

const outcomeOf = (admission: Option.Option<Admission>): Outcome => {
  const outcome = Option.getOrThrow(admission).outcome
  assert.notStrictEqual(outcome._tag, "NotCounted")
  return outcome._tag === "Rejected" ? { accepted: false, wait: outcome.wait } : { accepted: true }
}

layer(Env, { excludeTestServices: true })("RateLimits store, batched", (it) => {
  it.effect.prop(
    "interleaved requests of three keys in batches: exactly the reference model's answers, key by key",
    { steps: Sequence(Step) },
    ({ steps }) =>
      Effect.gen(function*() {
        const store = yield* RateLimits
        const keys = yield* Effect.forEach(Array.from({ length: KEYS }), () => newKey(null))
        const times = timesFrom(steps.map((step) => step.gap))
        // Batches: a cut starts one; a batch's budget is its first step's (the plan at that moment).
        const batches: Array<Array<{ readonly index: number; readonly key: number; readonly at: number }>> = []
        const budgets: Array<number> = []
        for (const [index, step] of steps.entries()) {
          const current = batches[batches.length - 1]
          if (current === undefined || step.cut) {
            batches.push([{ index, key: step.key, at: times[index] ?? 0 }])
            budgets.push(step.budget)
          } else {
            current.push({ index, key: step.key, at: times[index] ?? 0 })
          }
        }
        const got: Array<Outcome> = []
        for (const [b, batch] of batches.entries()) {
          const budget = budgets[b] ?? 1
          const answers = yield* store.admitAll(
            batch.map(({ key, at }): AdmitRequest => ({ prefix: keys[key]!.prefix, secretHash: keys[key]!.hash, at })),
            { window, budgets: { byPlan: {}, fallback: budget } }
          )
          assert.strictEqual(answers.length, batch.length)
          for (const [i, { index }] of batch.entries()) got[index] = outcomeOf(answers[i]!)
        }
        // The model, key by key: each key's requests in their order, each with its batch's budget.
        const budgetOf: Array<number> = []
        for (const [b, batch] of batches.entries()) for (const { index } of batch) budgetOf[index] = budgets[b] ?? 1
        for (let key = 0; key < KEYS; key++) {
          const indices = steps.flatMap((step, index) => step.key === key ? [index] : [])
          const expected = reference(indices.map((index) => ({ at: times[index] ?? 0, budget: budgetOf[index] ?? 1 })), WINDOW)
          assert.deepStrictEqual(indices.map((index) => got[index]), expected, `key ${key}`)
        }
        const sql = yield* SqlClient.SqlClient
        yield* sql`DELETE FROM api_keys WHERE id IN ${sql.in(keys.map((key) => key.keyId))}`.pipe(Effect.orDie)
      }),
    { timeout: 120_000, arbitrary: { runs: 40, size: SEQUENCE_MAX } }
  )

  it.effect("a batch of one key: the budget's worth accepted in order, then 429s with the model's waits", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      const key = yield* newKey(null)
      const at = 3 * WINDOW
      // Four requests at distinct times, budget 2: accepted, accepted, then waits until the first leaves the window.
      const answers = yield* store.admitAll(
        [0, 1_000, 2_000, 2_500].map((offset) => ({ prefix: key.prefix, secretHash: key.hash, at: at + offset })),
        { window, budgets: { byPlan: {}, fallback: 2 } }
      )
      assert.deepStrictEqual(answers.map(outcomeOf), [
        { accepted: true },
        { accepted: true },
        { accepted: false, wait: WINDOW - 2_000 },
        { accepted: false, wait: WINDOW - 2_500 }
      ])
    }))

  it.effect("unknown, revoked, expired and wrong-secret requests in a batch with good ones: answered as alone, nothing counted", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      const good = yield* newKey("basic")
      const other = yield* newKey("pro")
      const revoked = yield* newKey("basic", { revoked: true })
      const expired = yield* newKey("basic", { expired: true })
      const wrongHash = ApiKey.hashSecret("x".repeat(ApiKey.SECRET_LENGTH))
      const before = yield* Fixtures.limiterSnapshot
      const answers = yield* store.admitAll([
        { prefix: "zzzzzzzz", secretHash: good.hash },
        { prefix: good.prefix, secretHash: good.hash },
        { prefix: revoked.prefix, secretHash: revoked.hash },
        { prefix: good.prefix, secretHash: wrongHash },
        { prefix: other.prefix, secretHash: other.hash },
        { prefix: expired.prefix, secretHash: expired.hash },
        { prefix: good.prefix, secretHash: good.hash }
      ], { window })
      assert.isTrue(Option.isNone(answers[0]!))
      const tags = answers.slice(1).map((answer) => Option.getOrThrow(answer).outcome._tag)
      assert.deepStrictEqual(tags, ["Accepted", "NotCounted", "NotCounted", "Accepted", "NotCounted", "Accepted"])
      const keysOf = answers.slice(1).map((answer) => {
        const { key } = Option.getOrThrow(answer)
        return [key.id, key.revoked, key.expired, key.budget]
      })
      assert.deepStrictEqual(keysOf, [
        [good.keyId, false, false, 120],
        [revoked.keyId, true, false, 120],
        [good.keyId, false, false, 120],
        [other.keyId, false, false, 600],
        [expired.keyId, false, true, 120],
        [good.keyId, false, false, 120]
      ])
      // Only the good keys have state: two slots for `good`, one for `other`.
      const after = yield* Fixtures.limiterSnapshot
      const written = new Set(after.filter((row) => !before.some((b) => b.version === row.version)).map((row) => row.key_id))
      assert.deepStrictEqual([...written].sort(), [good.keyId, other.keyId].sort())
      const sql = yield* SqlClient.SqlClient
      const [slots] = yield* sql<{ good: number; other: number }>`
        SELECT (SELECT count(*)::int FROM rate_limit_slots c, unnest(c.slots) AS t WHERE c.key_id = ${good.keyId} AND t > 0) AS good,
               (SELECT count(*)::int FROM rate_limit_slots c, unnest(c.slots) AS t WHERE c.key_id = ${other.keyId} AND t > 0) AS other`
        .pipe(Effect.orDie)
      assert.deepStrictEqual(slots, { good: 2, other: 1 })
    }))

  it.effect("batches of the same keys in opposite orders, concurrently, never deadlock; exactly the budget is taken", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      const keys = yield* Effect.forEach(Array.from({ length: 8 }), () => newKey(null))
      const requests = keys.map((key): AdmitRequest => ({ prefix: key.prefix, secretHash: key.hash }))
      const reversed = [...requests].reverse()
      const limit = { window, budgets: { byPlan: {}, fallback: 100 } }
      // 4 connections at once (the test pool has 5), 30 batches each, half of them in reverse order.
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 120 }, (_, i) => i % 2 === 0 ? requests : reversed),
        (batch) => store.admitAll(batch, limit),
        { concurrency: 4 }
      ).pipe(Effect.timeoutOrElse({ duration: "20 seconds", orElse: () => Effect.die("the batches took over 20 s") }))
      const accepted = new Map<number, number>()
      for (const answers of outcomes) {
        for (const answer of answers) {
          const { key, outcome } = Option.getOrThrow(answer)
          assert.notStrictEqual(outcome._tag, "NotCounted")
          if (outcome._tag === "Accepted") accepted.set(key.id, (accepted.get(key.id) ?? 0) + 1)
        }
      }
      // 120 requests per key, budget 100: exactly 100 each.
      assert.deepStrictEqual([...accepted.values()], keys.map(() => 100))
    }), 60_000)

  it.effect("a batch that fails fails whole and counts none of its requests", () =>
    Effect.gen(function*() {
      const store = yield* RateLimits
      const sql = yield* SqlClient.SqlClient
      const good = yield* newKey(null)
      const broken = yield* newKey(null)
      // A database error on one key's first write (a trigger that raises): the statement fails.
      yield* sql.unsafe(`
        CREATE FUNCTION test_fail_key() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'test: key % refused', NEW.key_id; END $$`).pipe(Effect.orDie)
      yield* sql.unsafe(`
        CREATE TRIGGER test_fail_key BEFORE INSERT ON rate_limits
          FOR EACH ROW WHEN (NEW.key_id = ${broken.keyId}) EXECUTE FUNCTION test_fail_key()`).pipe(Effect.orDie)
      const before = yield* Fixtures.limiterSnapshot
      const exit = yield* Effect.exit(store.admitAll([
        { prefix: good.prefix, secretHash: good.hash },
        { prefix: broken.prefix, secretHash: broken.hash },
        { prefix: good.prefix, secretHash: good.hash }
      ], { window }))
      assert.isTrue(Exit.hasDies(exit))
      assert.deepStrictEqual(yield* Fixtures.limiterSnapshot, before)
      yield* sql.unsafe(`DROP TRIGGER test_fail_key ON rate_limits`).pipe(Effect.orDie)
      // The good key's budget is whole: its first request now is its first slot.
      const [answer] = yield* store.admitAll([{ prefix: good.prefix, secretHash: good.hash }], { window })
      assert.strictEqual(Option.getOrThrow(answer!).outcome._tag, "Accepted")
    }))
})
