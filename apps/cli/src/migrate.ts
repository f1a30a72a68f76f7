/**
 * `npm run migrate` (docs/operations.md "Commands"): applies the pending migrations to
 * DATABASE_URL and exits; a rerun applies nothing. DATABASE_URL is required:
 * a deployment's one-shot migrate must never fall back to a local database.
 * An unreachable database, or a PostgreSQL older than the oldest supported
 * (docs/operations.md "PostgreSQL versions"), is one line and exit 1, before
 * any migration runs.
 */
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { checkConnection } from "@school/runtime/DatabaseConnection"
import { runMain } from "@school/runtime/Main"
import * as Settings from "@school/runtime/Settings"
import * as Effect from "effect/Effect"
import { CliSettings } from "./CliSettings.ts"

const program = Effect.gen(function*() {
  const url = yield* Settings.requiredDatabaseUrl("a postgres:// URL of the database to migrate")
  const applied = yield* Effect.andThen(checkConnection(url), runMigrations).pipe(
    Effect.provide(Sql.layer({ url, maxConnections: 1, applicationName: "school-migrate" }))
  )
  if (applied.length === 0) {
    yield* Effect.logInfo("migrations: the database is up to date")
  } else {
    for (const [id, name] of applied) yield* Effect.logInfo(`migrations: applied ${String(id).padStart(4, "0")}_${name}`)
  }
}).pipe(Effect.provide(Settings.layer(CliSettings, "cli")))

runMain(program)
