/**
 * `npm run migrate` (docs/operations.md "Commands"): applies the pending migrations to
 * DATABASE_URL and exits; a rerun applies nothing. DATABASE_URL is required:
 * a deployment's one-shot migrate must never fall back to a local database.
 */
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { runMain } from "@school/runtime/Main"
import { InvalidSetting, Settings } from "@school/runtime/Settings"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

const program = Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isNone(settings.databaseUrl)) {
    return yield* new InvalidSetting({
      setting: "DATABASE_URL",
      expected: "a postgres:// URL of the database to migrate",
      got: ""
    })
  }
  const applied = yield* runMigrations.pipe(
    Effect.provide(Sql.layer({ url: settings.databaseUrl.value, maxConnections: 1, applicationName: "school-migrate" }))
  )
  if (applied.length === 0) {
    yield* Effect.logInfo("migrations: the database is up to date")
  } else {
    for (const [id, name] of applied) yield* Effect.logInfo(`migrations: applied ${String(id).padStart(4, "0")}_${name}`)
  }
}).pipe(Effect.provide(Settings.layerWithLogging))

runMain(program)
