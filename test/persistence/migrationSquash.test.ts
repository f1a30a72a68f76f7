/**
 * Migrations 0200-0203 (the rate limiter, written the same day, never
 * released, each rewriting the one before) were squashed into one
 * `0200_rate_limits`. Two promises hold that squash honest:
 * - a database built with the old four has exactly the schema of one built
 *   with the squashed set (the catalog as `SchemaDump.ts` prints it: tables,
 *   columns with types, defaults and nullability, constraints, indexes,
 *   functions with their bodies, triggers, views);
 * - a database already migrated with the old set gets nothing re-run: the
 *   migrator applies only ids above the highest one applied (0300).
 */
import { fromStatements, migrations, runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { TestDatabase } from "../support/TestDatabase.ts"
import { beforeSquash } from "./RateLimitMigrationsBeforeSquash.ts"
import { dumpSchema } from "./SchemaDump.ts"

const { "0200_rate_limits": _squashed, ...others } = migrations

/** The migration set as it was before the squash. */
const runOldMigrations = Migrator.make({})({
  loader: Migrator.fromRecord({
    ...others,
    ...Object.fromEntries(beforeSquash.map(([name, statements]) => [name, fromStatements(statements)]))
  })
})

/** Another database on this file's server, dropped with the scope; its `SqlClient`. */
const siblingDatabase = Effect.gen(function*() {
  const admin = yield* SqlClient.SqlClient
  const { url, name } = yield* TestDatabase
  const sibling = `${name}_old`
  yield* Effect.acquireRelease(
    admin.unsafe(`CREATE DATABASE ${sibling}`),
    () => admin.unsafe(`DROP DATABASE IF EXISTS ${sibling} WITH (FORCE)`).pipe(Effect.ignore)
  )
  const parsed = new URL(url)
  parsed.pathname = `/${sibling}`
  const context = yield* Layer.build(Sql.layer({ url: parsed.toString(), maxConnections: 1 }))
  return Context.get(context, SqlClient.SqlClient)
}).pipe(Effect.orDie)

layer(TestDatabase.layer, { excludeTestServices: true })("migrations 0200-0203 squashed into 0200_rate_limits", (it) => {
  it.effect("build the same schema, and a database migrated with the old set gets nothing re-run", () =>
    Effect.gen(function*() {
      const squashed = yield* dumpSchema
      assert.include(squashed, "CREATE UNLOGGED TABLE rate_limit_slots")
      assert.include(squashed, "FUNCTION rate_limit_take(")

      const old = yield* siblingDatabase
      const inOld = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.provideService(effect, SqlClient.SqlClient, old)
      const appliedOld = yield* inOld(runOldMigrations).pipe(Effect.orDie)
      assert.deepStrictEqual(appliedOld.map(([id, name]) => `${id}_${name}`), [
        "1_core",
        "100_writes",
        "200_rate_limits",
        "201_rate_limit_chunks",
        "202_rate_limit_first_request",
        "203_rate_limit_no_foreign_keys",
        "300_row_counts"
      ])
      const before = yield* inOld(dumpSchema)
      assert.strictEqual(before, squashed)

      const appliedNew = yield* inOld(runMigrations).pipe(Effect.orDie)
      assert.deepStrictEqual(appliedNew, [])
      assert.strictEqual(yield* inOld(dumpSchema), squashed)
    }))
})
