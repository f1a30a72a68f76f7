/**
 * The limiter's functions read their tables by index on a connection that
 * planned them while the tables were empty (migration 1400, docs/decisions.md
 * "The rate limiter"): a fresh database, or any after a crash (the tables are
 * UNLOGGED), starts them empty, and PL/pgSQL keeps a connection's plans until
 * an ANALYZE. Without the migration the plans made here, on statistics that
 * say the tables are empty, scan both tables once they hold 5 000 keys.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Sql from "@school/persistence/Sql"
import { TestDatabase } from "../support/TestDatabase.ts"

const WINDOW_US = 60_000_000
const BUDGET = 600
/** Keys the one connection plans on, then calls again once the tables have grown. */
const EARLY_KEYS = 8
const GROWN_KEYS = 5_000

const Scans = Schema.Array(Schema.Struct({ relname: Schema.String, seq_scan: Schema.Number, idx_scan: Schema.Number }))

layer(TestDatabase.layer, { excludeTestServices: true })("rate_limit_take's plans", (it) => {
  it.effect("stay index scans after the tables grow under a connection that planned them empty", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      // One connection: every call below runs on it, with the plans its first calls made.
      const context = yield* Layer.build(Sql.layer({ url: database.url, maxConnections: 1, applicationName: "test-plans" }))
      const sql = Context.get(context, SqlClient.SqlClient)
      const take = (from: number, to: number) =>
        sql`SELECT rate_limit_take(1, k, ${BUDGET}::int4, NULL, ${WINDOW_US}::int8) FROM generate_series(${from}::int4, ${to}::int4) AS k`
      // Statistics that say empty, as a VACUUM ANALYZE or autovacuum leaves them
      // on a database whose limiter holds nothing yet (a new one, or one after a crash).
      yield* sql`ANALYZE rate_limits, rate_limit_slots`
      // Each key's first request (the inserts), then two acceptances each (the
      // reads and updates): more than the five custom plans PostgreSQL makes
      // before it settles on a generic one, all while the tables hold 8 keys.
      for (let round = 0; round < 3; round++) yield* take(1, EARLY_KEYS)
      yield* sql`
        INSERT INTO rate_limits (school_id, key_id, head, size)
        SELECT 1, k, 0, ${BUDGET}::int4 FROM generate_series(1000, 1000 + ${GROWN_KEYS}::int4) AS k`
      yield* sql`
        INSERT INTO rate_limit_slots (school_id, key_id, chunk, slots)
        SELECT 1, k, c, array_fill(0::int8, ARRAY[32]) FROM generate_series(1000, 1000 + ${GROWN_KEYS}::int4) AS k,
               generate_series(0, 2) AS c`
      const scans = yield* sql.withTransaction(
        Effect.gen(function*() {
          yield* take(1, EARLY_KEYS)
          return yield* sql`
            SELECT relname, seq_scan::int4, idx_scan::int4 FROM pg_stat_xact_user_tables
            WHERE relname IN ('rate_limits', 'rate_limit_slots') ORDER BY relname`.pipe(
            Effect.flatMap(Schema.decodeUnknownEffect(Scans))
          )
        })
      )
      assert.deepStrictEqual(scans.map((row) => [row.relname, row.seq_scan]), [["rate_limit_slots", 0], ["rate_limits", 0]])
      for (const row of scans) assert.isAbove(row.idx_scan, 0, `${row.relname} read by index`)
    }).pipe(Effect.scoped, Effect.orDie))
})
