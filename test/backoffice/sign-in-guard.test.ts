/**
 * SignInGuard's waits (apps/api/src/http/backoffice/SignInGuard.ts,
 * docs/decisions.md "Back-office sessions") against the real throttle
 * tables, with the TestClock driving the waits: an attempt that finds every
 * hash slot taken for `CHECK_WAIT` is 429 with Retry-After 1; one that waits
 * `TURN_WAIT` behind its own address's attempt is 429 too; neither counts
 * against the address (no password was checked); another address's attempt
 * is not held back by the queue of the first.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { Sessions } from "@school/persistence/Sessions"
import { CHECK_WAIT, MAX_CHECKS, SignInGuard, TURN_WAIT } from "@school/api/http/backoffice/SignInGuard"
import { TestDatabase } from "../support/TestDatabase.ts"

const Env = SignInGuard.layer.pipe(Layer.provideMerge(Sessions.layer), Layer.provideMerge(TestDatabase.layer))

/** The refusal's status and Retry-After, or "ok: <value>". */
const outcome = <A>(exit: Exit.Exit<A, unknown>) => {
  if (Exit.isSuccess(exit)) return `ok: ${String(exit.value)}`
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  const failure = error?._tag === "Fail" ? error.error : undefined
  return failure instanceof Object && "_tag" in failure && "headers" in failure
    ? `${String(failure._tag)} retry-after ${JSON.stringify(failure.headers)}`
    : `other: ${String(exit.cause)}`
}

const addressRows = (address: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM login_addresses WHERE address = ${address}`
    return rows[0]?.n ?? 0
  }).pipe(Effect.orDie)

layer(Env)("SignInGuard's waits", (it) => {
  it.effect("every hash slot taken for CHECK_WAIT: 429 with Retry-After 1; once one frees, checks run again", () =>
    Effect.gen(function*() {
      const guard = yield* SignInGuard
      const gate = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      let running = 0
      const holders = yield* Effect.forEach(
        Array.from({ length: MAX_CHECKS }, (_, i) => i),
        () =>
          guard.hashing(Effect.gen(function*() {
            if (++running === MAX_CHECKS) yield* Deferred.succeed(started, undefined)
            yield* Deferred.await(gate)
          })).pipe(Effect.forkChild)
      )
      yield* Deferred.await(started)
      const waiting = yield* guard.hashing(Effect.succeed("checked")).pipe(Effect.exit, Effect.forkChild)
      yield* TestClock.adjust(Duration.subtract(CHECK_WAIT, Duration.millis(1)))
      assert.isUndefined(waiting.pollUnsafe(), "refused before CHECK_WAIT")
      yield* TestClock.adjust(Duration.millis(1))
      assert.strictEqual(
        outcome(yield* Fiber.join(waiting)),
        `BackOfficeTooManyAttempts retry-after {"retry-after":1}`
      )
      yield* Deferred.succeed(gate, undefined)
      yield* Effect.forEach(holders, Fiber.join)
      assert.strictEqual(yield* guard.hashing(Effect.succeed("checked")), "checked")
    }))

  it.effect("an attempt waiting TURN_WAIT behind its own address's attempt is 429, not counted; another address goes ahead", () =>
    Effect.gen(function*() {
      const guard = yield* SignInGuard
      const gate = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      const first = yield* guard.guarded(
        "slow@guard.test",
        "10.77.0.1",
        Effect.andThen(Deferred.succeed(started, undefined), Effect.as(Deferred.await(gate), Option.some("first")))
      ).pipe(Effect.forkChild)
      yield* Deferred.await(started)
      const second = yield* guard.guarded("other@guard.test", "10.77.0.1", Effect.succeed(Option.some("second"))).pipe(
        Effect.exit,
        Effect.forkChild
      )
      // Another address is not in that queue.
      const elsewhere = yield* guard.guarded("slow@guard.test", "10.77.0.2", Effect.succeed(Option.some("elsewhere")))
      assert.deepStrictEqual(elsewhere, Option.some("elsewhere"))
      yield* TestClock.adjust(Duration.subtract(TURN_WAIT, Duration.millis(1)))
      assert.isUndefined(second.pollUnsafe(), "refused before TURN_WAIT")
      yield* TestClock.adjust(Duration.millis(1))
      assert.strictEqual(
        outcome(yield* Fiber.join(second)),
        `BackOfficeTooManyAttempts retry-after {"retry-after":1}`
      )
      // Neither wait counted against the address: it has no throttle row.
      assert.strictEqual(yield* addressRows("10.77.0.1"), 0)
      yield* Deferred.succeed(gate, undefined)
      assert.deepStrictEqual(yield* Fiber.join(first), Option.some("first"))
      // The queue is empty again: the next attempt of the address runs at once.
      assert.deepStrictEqual(
        yield* guard.guarded("other@guard.test", "10.77.0.1", Effect.succeed(Option.some("next"))),
        Option.some("next")
      )
    }))

  it.effect("a wrong password (None) counts against the pair and the address; a right one clears the pair", () =>
    Effect.gen(function*() {
      const guard = yield* SignInGuard
      const sql = yield* SqlClient.SqlClient
      const wrong = yield* guard.guarded("pair@guard.test", "10.77.0.3", Effect.succeed(Option.none()))
      assert.isTrue(Option.isNone(wrong))
      assert.strictEqual(yield* addressRows("10.77.0.3"), 1)
      const failures = () =>
        sql<{ failures: number }>`SELECT failures FROM login_failures WHERE email = 'pair@guard.test' AND address = '10.77.0.3'`
      assert.deepStrictEqual((yield* failures()).map((row) => row.failures), [1])
      yield* guard.guarded("pair@guard.test", "10.77.0.3", Effect.succeed(Option.some(true)))
      assert.deepStrictEqual(yield* failures(), [])
    }).pipe(Effect.orDie))
})
