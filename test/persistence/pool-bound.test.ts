/**
 * The processes' bounded client (libs/persistence/src/Sql.ts `makeGate`;
 * docs/operations.md "Settings": DATABASE_ACQUIRE_TIMEOUT) against a real
 * PostgreSQL, with a pool of two connections:
 * - a statement that finds both connections taken waits at most the bound,
 *   then fails with a `ConnectionError`; `PoolStats` counts it as waiting;
 * - waiting statements get their connection first come, first served (one
 *   connection going round them, the other held);
 * - an interrupted waiter gives up its place and leaks no connection;
 * - a LISTEN holds a connection of its own, so statements get one fewer
 *   while it listens, and the notification reaches it;
 * - many concurrent statements never use more than the pool's connections.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { SqlError } from "effect/sql/SqlError"
import * as Sql from "@school/persistence/Sql"
import { TestDatabase } from "../support/TestDatabase.ts"

/** Short, for the test that waits it out. */
const BOUND = Duration.millis(300)
/** Long, for the tests that check who waits and in which order on a busy machine. */
const PATIENT = Duration.seconds(20)
const APPLICATION = "pool-bound-test"

/** A bounded client of two connections on this file's database, closed with the scope. */
const boundedClient = (bound: Duration.Duration) => Effect.gen(function*() {
  const { url } = yield* TestDatabase
  const context = yield* Layer.build(
    Sql.layer({ url, maxConnections: 2, acquireTimeout: bound, applicationName: APPLICATION })
  )
  const stats = Context.get(context, Sql.PoolStats)
  assert.isDefined(stats)
  return {
    sql: Context.get(context, SqlClient.SqlClient),
    pg: Context.get(context, PgClient.PgClient),
    stats: stats!
  }
})

/** A transaction that holds its connection until `release` is completed. */
const holdConnection = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const holding = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const fiber = yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`SELECT 1`
      yield* Deferred.succeed(holding, undefined)
      yield* Deferred.await(release)
    })).pipe(Effect.forkChild)
    yield* Deferred.await(holding)
    return { fiber, release: Deferred.succeed(release, undefined).pipe(Effect.andThen(Fiber.join(fiber))) }
  })

/** Until `check` holds (at most 2 s). */
const eventually = (check: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !check(); i++) yield* Effect.sleep("10 millis")
    assert.isTrue(check())
  })

layer(TestDatabase.layer, { excludeTestServices: true })("the bounded pool", (it) => {
  it.effect("a statement finding every connection taken waits the bound, then fails with a ConnectionError", () =>
    Effect.gen(function*() {
      const { sql, stats } = yield* boundedClient(BOUND)
      const first = yield* holdConnection(sql)
      const second = yield* holdConnection(sql)
      assert.strictEqual(stats.inUse(), 2)

      const started = Date.now()
      const waiting = yield* sql`SELECT 1`.pipe(Effect.exit, Effect.forkChild)
      yield* eventually(() => stats.waiting() === 1)
      const exit = yield* Fiber.join(waiting)
      const waited = Date.now() - started
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        assert.isDefined(error)
        const failure = error?._tag === "Fail" ? error.error : undefined
        assert.instanceOf(failure, SqlError)
        assert.strictEqual(failure?.reason._tag, "ConnectionError")
        assert.include(failure?.message, "no free database connection")
      }
      assert.isAtLeast(waited, 250)
      assert.isBelow(waited, 3_000)
      assert.strictEqual(stats.waiting(), 0)

      yield* first.release
      yield* second.release
      assert.strictEqual(stats.inUse(), 0)
      const [row] = yield* sql<{ one: number }>`SELECT 1 AS one`
      assert.strictEqual(row?.one, 1)
    }).pipe(Effect.scoped))

  it.effect("waiting statements get their connection first come, first served", () =>
    Effect.gen(function*() {
      const { sql, stats } = yield* boundedClient(PATIENT)
      const first = yield* holdConnection(sql)
      const second = yield* holdConnection(sql)
      const order: Array<number> = []
      const waiters: Array<Fiber.Fiber<unknown, unknown>> = []
      for (let n = 0; n < 3; n++) {
        waiters.push(yield* sql`SELECT ${n}::int AS n`.pipe(Effect.tap(() => Effect.sync(() => order.push(n))), Effect.forkChild))
        yield* eventually(() => stats.waiting() === n + 1)
      }
      // One connection comes free and goes round the line; the other stays held, so a statement ends before the
      // next one gets its turn and the order they end in is the order of their turns.
      yield* first.release
      for (const waiter of waiters) yield* Fiber.join(waiter)
      assert.deepStrictEqual(order, [0, 1, 2])
      assert.strictEqual(stats.inUse(), 1)
      yield* second.release
      assert.strictEqual(stats.inUse(), 0)
      assert.strictEqual(stats.waiting(), 0)
    }).pipe(Effect.scoped))

  it.effect("an interrupted waiter gives up its place and leaks no connection", () =>
    Effect.gen(function*() {
      const { sql, stats } = yield* boundedClient(PATIENT)
      const first = yield* holdConnection(sql)
      const second = yield* holdConnection(sql)
      const gaveUp = yield* sql`SELECT 1`.pipe(Effect.forkChild)
      const after = yield* sql<{ n: number }>`SELECT 2 AS n`.pipe(Effect.forkChild)
      yield* eventually(() => stats.waiting() === 2)
      yield* Fiber.interrupt(gaveUp)
      assert.strictEqual(stats.waiting(), 1)
      yield* first.release
      const [row] = yield* Fiber.join(after)
      assert.strictEqual(row?.n, 2)
      yield* second.release
      assert.strictEqual(stats.inUse(), 0)
      assert.strictEqual(stats.waiting(), 0)
      // Both connections are still there for two transactions at once.
      const again = [yield* holdConnection(sql), yield* holdConnection(sql)]
      assert.strictEqual(stats.inUse(), 2)
      for (const held of again) yield* held.release
    }).pipe(Effect.scoped))

  it.effect("a LISTEN holds a connection of its own: one fewer for statements while it listens", () =>
    Effect.gen(function*() {
      const { pg, sql, stats } = yield* boundedClient(BOUND)
      const listening = yield* Effect.gen(function*() {
        const queue = yield* pg.listen("pool_bound_test")
        const held = yield* holdConnection(sql)
        // The pool's two connections: the LISTEN's and the transaction's.
        const exit = yield* sql`SELECT 1`.pipe(Effect.exit)
        assert.isTrue(Exit.isFailure(exit))
        yield* held.release
        yield* pg.notify("pool_bound_test", "hello")
        const heard = yield* Queue.take(queue)
        assert.strictEqual(heard.payload, "hello")
        return stats.inUse()
      }).pipe(Effect.scoped)
      assert.strictEqual(listening, 0)
      // The LISTEN gone, both connections serve statements again.
      const again = [yield* holdConnection(sql), yield* holdConnection(sql)]
      for (const held of again) yield* held.release
    }).pipe(Effect.scoped))

  it.effect("many concurrent statements never use more than the pool's connections", () =>
    Effect.gen(function*() {
      const { sql, stats } = yield* boundedClient(PATIENT)
      const admin = yield* SqlClient.SqlClient
      let most = 0
      const results = yield* Effect.forEach(
        Array.from({ length: 40 }, (_, n) => n),
        (n) =>
          sql<{ n: number }>`SELECT ${n}::int AS n, pg_sleep(0.005)`.pipe(
            Effect.tap(() => Effect.sync(() => (most = Math.max(most, stats.inUse()))))
          ),
        { concurrency: "unbounded" }
      ).pipe(Effect.timeout("10 seconds"))
      assert.deepStrictEqual(results.map((rows) => rows[0]?.n), Array.from({ length: 40 }, (_, n) => n))
      assert.isAtMost(most, 2)
      const [opened] = yield* admin<{ n: number }>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${APPLICATION}`
      assert.isAtMost(opened?.n ?? 0, 2)
    }).pipe(Effect.scoped))
})
