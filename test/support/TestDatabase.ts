/**
 * A fresh, migrated database per test file, on the run's one server (see
 * `globalSetup.ts`): `CREATE DATABASE` with a random name, `runMigrations`,
 * then `PgClient` / `SqlClient` from `Sql.ts`; `DROP DATABASE … WITH (FORCE)`
 * when the layer is released, whatever still holds a connection (e.g. a child
 * process a test spawned with `TestDatabase.url`).
 *
 *   layer(TestDatabase.layer)("students", (it) => {
 *     it.effect("…", () => Effect.gen(function*() { const sql = yield* SqlClient.SqlClient … }))
 *   })
 */
import type { PgClient } from "@effect/sql-pg"
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { inject } from "vitest"

export interface TestDatabaseShape {
  /** Connection string of this file's database (for processes a test spawns). */
  readonly url: string
  /** Its name. */
  readonly name: string
}

/** The superuser URL from the global setup, or TEST_DATABASE_URL when run without it. */
const adminUrl = Effect.sync(() => inject("adminDatabaseUrl") ?? process.env["TEST_DATABASE_URL"]).pipe(
  Effect.flatMap((url) =>
    url === undefined || url === ""
      ? Effect.die(new Error("no test database server: run through vitest.config.ts (globalSetup) or set TEST_DATABASE_URL"))
      : Effect.succeed(url)
  )
)

const withDatabase = (url: string, database: string): string => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

const createDatabase = Effect.gen(function*() {
  const admin = yield* adminUrl
  const adminContext = yield* Layer.build(Sql.layer({ url: admin, maxConnections: 1, applicationName: "test-admin" }))
  const sql = Context.get(adminContext, SqlClient.SqlClient)
  const name = `school_test_${randomBytes(6).toString("hex")}`
  yield* Effect.acquireRelease(
    sql.unsafe(`CREATE DATABASE ${name}`),
    () => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
  )
  return TestDatabase.of({ url: withDatabase(admin, name), name })
}).pipe(Effect.orDie)

export class TestDatabase extends Context.Service<TestDatabase, TestDatabaseShape>()("@school/test/TestDatabase") {
  /** This file's database, migrated, with `PgClient` and `SqlClient` connected to it. */
  static readonly layer: Layer.Layer<TestDatabase | PgClient.PgClient | SqlClient.SqlClient> = Layer.effectDiscard(
    Effect.orDie(runMigrations)
  ).pipe(
    Layer.provideMerge(
      Layer.unwrap(Effect.gen(function*() {
        const database = yield* TestDatabase
        return Sql.layer({ url: database.url, maxConnections: 5 })
      }))
    ),
    Layer.orDie,
    Layer.provideMerge(Layer.effect(TestDatabase, createDatabase))
  )
}
