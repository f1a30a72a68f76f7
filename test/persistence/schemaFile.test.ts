/**
 * `docs/schema.sql` is the schema the migrations build, so a reader sees
 * every table, index, function and trigger in one file. This test builds it
 * (a fresh database, every migration) and fails when the committed file
 * differs; `UPDATE_SCHEMA=1` rewrites the file instead.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { TestDatabase } from "../support/TestDatabase.ts"
import { dumpSchema } from "./SchemaDump.ts"

const FILE = fileURLToPath(new URL("../../docs/schema.sql", import.meta.url))
const UPDATE = "UPDATE_SCHEMA=1 npx vitest run test/persistence/schemaFile.test.ts"

const Applied = Schema.Array(Schema.Struct({ name: Schema.String }))

const schemaFile = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const applied = yield* sql`SELECT lpad(migration_id::text, 4, '0') || '_' || name AS name FROM effect_sql_migrations ORDER BY migration_id`.pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(Applied)),
    Effect.orDie
  )
  const header = [
    "-- The schema as the migrations in libs/persistence/src/migrations build it:",
    `-- ${applied.map((row) => row.name).join(", ")}.`,
    "-- Written by test/persistence/schemaFile.test.ts from the catalog; do not edit.",
    `-- After a new migration: ${UPDATE}`
  ].join("\n")
  return `${header}\n\n${yield* dumpSchema}`
})

layer(TestDatabase.layer, { excludeTestServices: true })("docs/schema.sql", (it) => {
  it.effect("is the schema the migrations build", () =>
    Effect.gen(function*() {
      const built = yield* schemaFile
      if (process.env["UPDATE_SCHEMA"] === "1") {
        writeFileSync(FILE, built)
        return
      }
      const committed = existsSync(FILE) ? readFileSync(FILE, "utf8") : ""
      assert.strictEqual(committed, built, `docs/schema.sql is not the schema the migrations build: run ${UPDATE}`)
    }))
})
