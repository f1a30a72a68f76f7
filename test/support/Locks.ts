/**
 * Holding a request at a lock, for tests that need a write in flight: a
 * table locked in a transaction of its own, and the wait until a request
 * is blocked on it.
 */
import { Deferred, Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Holds `LOCK TABLE <table> IN EXCLUSIVE MODE` in its own transaction until `release` completes; returns once it holds it. */
export const holdLock = Effect.fnUntraced(function*(table: "leads", release: Deferred.Deferred<void>) {
  const sql = yield* SqlClient.SqlClient
  const locked = yield* Deferred.make<void>()
  const fiber = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
    yield* sql.unsafe(`LOCK TABLE ${table} IN EXCLUSIVE MODE`)
    yield* Deferred.succeed(locked, undefined)
    yield* Deferred.await(release)
  })).pipe(Effect.orDie))
  yield* Deferred.await(locked)
  return fiber
})

/** Waits, polling every 10 ms for `tries` polls at most, until a session of this database is blocked on a lock: the request reached its write. */
export const waitForBlockedSession = (tries: number) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (let i = 0; i < tries; i++) {
    const rows = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`
    if ((rows[0]?.n ?? 0) > 0) return
    yield* Effect.sleep(Duration.millis(10))
  }
  return yield* Effect.die(new Error("no request blocked on the lock"))
}).pipe(Effect.orDie)
