/**
 * Owns the schema's history: every migration, in order, and the one effect
 * that applies the pending ones. Reruns are no-ops.
 */
import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import * as Core from "./migrations/0001_core.ts"
import * as Writes from "./migrations/0100_writes.ts"
import * as RateLimits from "./migrations/0200_rate_limits.ts"
import * as RateLimitChunks from "./migrations/0201_rate_limit_chunks.ts"
import * as RateLimitFirstRequest from "./migrations/0202_rate_limit_first_request.ts"
import * as RateLimitNoForeignKeys from "./migrations/0203_rate_limit_no_foreign_keys.ts"
import * as RowCounts from "./migrations/0300_row_counts.ts"

const fromStatements = (statements: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const statement of statements) {
      yield* sql.unsafe(statement)
    }
  })

const migrations = {
  "0001_core": fromStatements(Core.statements),
  "0100_writes": fromStatements(Writes.statements),
  "0200_rate_limits": fromStatements(RateLimits.statements),
  "0201_rate_limit_chunks": fromStatements(RateLimitChunks.statements),
  "0202_rate_limit_first_request": fromStatements(RateLimitFirstRequest.statements),
  "0203_rate_limit_no_foreign_keys": fromStatements(RateLimitNoForeignKeys.statements),
  "0300_row_counts": fromStatements(RowCounts.statements)
}

/** Applies every pending migration; returns the ones it applied. */
export const runMigrations = Migrator.make({})({
  loader: Migrator.fromRecord(migrations)
})
