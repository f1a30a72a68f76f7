/**
 * The API's limiter batches its round trips (docs/decisions.md "Batched
 * authentication"): requests that reach it in the same tick share ONE
 * statement (`RateLimits.admitAll`), a lone request is the single statement
 * of before, and interleaved requests of one key and of different keys in a
 * batch get exactly the reference model's answers. The store is the real
 * one on a real PostgreSQL; the test only counts its calls.
 */
import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { RateLimiter, RateLimitOptions, defaultOptions } from "@school/api/RateLimiter"
import { ApiKey } from "@school/domain"
import { ApiKeys } from "@school/persistence/ApiKeys"
import { Notifications } from "@school/persistence/Notifications"
import { RateLimits } from "@school/persistence/RateLimits"
import * as Fixtures from "../support/Fixtures.ts"
import { reference, WINDOW } from "../support/RateLimitModel.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

/** The store's calls: the size of each statement's batch (1 for the single `admit`). */
const calls: Array<{ readonly kind: "admit" | "admitAll"; readonly size: number }> = []

const CountingStore = Layer.effect(
  RateLimits,
  Effect.gen(function*() {
    const store = yield* RateLimits
    return RateLimits.of({
      admit: (prefix, hash, limit) => Effect.suspend(() => {
        calls.push({ kind: "admit", size: 1 })
        return store.admit(prefix, hash, limit)
      }),
      admitAll: (requests, limit) => Effect.suspend(() => {
        calls.push({ kind: "admitAll", size: requests.length })
        return store.admitAll(requests, limit)
      })
    })
  })
).pipe(Layer.provide(RateLimits.layer))

/** The limiter's clock (µs). */
let now = 10 * WINDOW
const BUDGET = 3

const Env = RateLimiter.layerNoDeps.pipe(
  Layer.provide([CountingStore, ApiKeys.layer, Notifications.layer]),
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ RATE_LIMIT_WINDOW: `${WINDOW / 1000}ms` }))),
  Layer.provide(Layer.succeed(RateLimitOptions, {
    ...defaultOptions,
    clock: Option.some(Effect.sync(() => now)),
    budgets: Option.some({ byPlan: {}, fallback: BUDGET }),
    maxBatch: 16
  })),
  Layer.provideMerge(TestDatabase.layer)
)

const newKey = Effect.fnUntraced(function*() {
  const { schoolId } = yield* Fixtures.school(null, "School")
  return Option.getOrThrow(ApiKey.parseApiKey(yield* Fixtures.key(schoolId)))
})

type Answer = "unknown" | "not counted" | { readonly accepted: true } | { readonly accepted: false; readonly wait: number }

const answerOf = (admission: Option.Option<{ readonly outcome: { readonly _tag: string } & ({ readonly wait: number } | {}) }>): Answer => {
  if (Option.isNone(admission)) return "unknown"
  const { outcome } = admission.value
  if (outcome._tag === "NotCounted") return "not counted"
  return "wait" in outcome ? { accepted: false, wait: outcome.wait } : { accepted: true }
}

/** Sends every credential to the limiter at once (one tick) and returns the answers in order. */
const together = (credentials: ReadonlyArray<{ readonly prefix: string; readonly secret: string }>) =>
  Effect.flatMap(RateLimiter, (limiter) =>
    Effect.forEach(credentials, ({ prefix, secret }) => Effect.map(limiter.admit(prefix, ApiKey.hashSecret(secret)), answerOf), {
      concurrency: "unbounded"
    }))

layer(Env, { excludeTestServices: true })("the limiter batches its round trips", (it) => {
  it.effect("a lone request is one single statement; 12 at once are one batched statement", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      const key = yield* newKey()
      now += 10 * WINDOW
      calls.length = 0
      assert.deepStrictEqual(answerOf(yield* limiter.admit(key.prefix, ApiKey.hashSecret(key.secret))), { accepted: true })
      assert.deepStrictEqual(calls, [{ kind: "admit", size: 1 }])
      // One request after the other: one statement each, none batched.
      calls.length = 0
      for (let i = 0; i < 3; i++) yield* limiter.admit(key.prefix, ApiKey.hashSecret(key.secret))
      assert.deepStrictEqual(calls, [{ kind: "admit", size: 1 }, { kind: "admit", size: 1 }, { kind: "admit", size: 1 }])

      const keys = yield* Effect.forEach(Array.from({ length: 12 }), () => newKey())
      calls.length = 0
      const answers = yield* together(keys)
      assert.deepStrictEqual(calls, [{ kind: "admitAll", size: 12 }])
      assert.deepStrictEqual(answers, keys.map(() => ({ accepted: true })))
    }))

  it.effect("more than maxBatch at once: batches of at most maxBatch", () =>
    Effect.gen(function*() {
      const keys = yield* Effect.forEach(Array.from({ length: 40 }), () => newKey())
      now += 10 * WINDOW
      calls.length = 0
      const answers = yield* together(keys)
      assert.deepStrictEqual(calls.map((call) => call.size), [16, 16, 8])
      assert.deepStrictEqual(answers, keys.map(() => ({ accepted: true })))
    }))

  it.effect("interleaved requests of one key and of others in one batch: the model's answers, key by key", () =>
    Effect.gen(function*() {
      const [a, b, c] = yield* Effect.forEach([0, 1, 2], () => newKey())
      const unknown = { prefix: "zzzzzzzz", secret: a!.secret }
      const wrong = { prefix: b!.prefix, secret: "A".repeat(ApiKey.SECRET_LENGTH) }
      now += 10 * WINDOW
      const first = now
      // a: 2 before the batch, b: 1 before.
      yield* Effect.forEach([a!, a!, b!], (key) => Effect.flatMap(RateLimiter, (l) => l.admit(key.prefix, ApiKey.hashSecret(key.secret))))
      now = first + 5_000_000
      calls.length = 0
      const batch = [a!, b!, a!, unknown, b!, a!, c!, wrong, b!, b!, c!]
      const answers = yield* together(batch)
      assert.deepStrictEqual(calls, [{ kind: "admitAll", size: batch.length }])
      // The model: a has 2 accepted at `first`, b 1; every batch request at first + 5 s.
      const model = (before: number, inBatch: number) =>
        reference([
          ...Array.from({ length: before }, () => ({ at: first, budget: BUDGET })),
          ...Array.from({ length: inBatch }, () => ({ at: first + 5_000_000, budget: BUDGET }))
        ], WINDOW).slice(before)
      const expectedA = model(2, 3)
      const expectedB = model(1, 4)
      const expectedC = model(0, 2)
      const cursor = { a: 0, b: 0, c: 0 }
      const expected = batch.map((key): Answer =>
        key === unknown
          ? "unknown"
          : key === wrong
          ? "not counted"
          : key === a
          ? expectedA[cursor.a++]!
          : key === b
          ? expectedB[cursor.b++]!
          : expectedC[cursor.c++]!
      )
      assert.deepStrictEqual(answers, expected)
      // Spelled out: a gets 1 more then waits until `first` leaves the window; b 2 more, then the same.
      assert.deepStrictEqual(expectedA, [
        { accepted: true },
        { accepted: false, wait: WINDOW - 5_000_000 },
        { accepted: false, wait: WINDOW - 5_000_000 }
      ])
      assert.deepStrictEqual(expectedB.map((answer) => answer.accepted), [true, true, false, false])
    }))

  it.effect("a statement that fails fails every request of its batch, and counts none of them", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const limiter = yield* RateLimiter
      const [good, broken] = yield* Effect.forEach([0, 1], () => newKey())
      const [row] = yield* sql<{ id: number }>`SELECT id FROM api_keys WHERE prefix = ${broken!.prefix}`.pipe(Effect.orDie)
      // A database error on the broken key's first write (a trigger that raises).
      yield* sql.unsafe(`
        CREATE FUNCTION test_fail_key() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'test: key % refused', NEW.key_id; END $$`).pipe(Effect.orDie)
      yield* sql.unsafe(`
        CREATE TRIGGER test_fail_key BEFORE INSERT ON rate_limits
          FOR EACH ROW WHEN (NEW.key_id = ${row!.id}) EXECUTE FUNCTION test_fail_key()`).pipe(Effect.orDie)
      now += 10 * WINDOW
      calls.length = 0
      const exits = yield* Effect.forEach(
        [good!, broken!, good!],
        (key) => Effect.exit(limiter.admit(key.prefix, ApiKey.hashSecret(key.secret))),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(calls, [{ kind: "admitAll", size: 3 }])
      assert.deepStrictEqual(exits.map(Exit.hasDies), [true, true, true])
      yield* sql.unsafe(`DROP TRIGGER test_fail_key ON rate_limits`).pipe(Effect.orDie)
      // Nothing was counted: the good key still has its whole budget of 3.
      const answers = yield* together([good!, good!, good!, good!])
      assert.deepStrictEqual(answers.map((answer) => typeof answer === "object" && answer.accepted), [true, true, true, false])
    }))
})
