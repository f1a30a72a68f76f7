/**
 * The database a CLI command works on (CONTRACT "Operator CLI": against
 * DATABASE_URL). With DATABASE_URL unset: the embedded PostgreSQL of
 * `npm start` (.data/postgres), the running one if there is one, else started
 * for the command and stopped after it; migrations are applied to it first,
 * as `npm start` would. A DATABASE_URL database is expected to be migrated
 * (`npm run migrate`).
 */
import * as DatabaseProvider from "@school/persistence/DatabaseProvider"
import { runMigrations } from "@school/persistence/Migrations"
import { Settings } from "@school/persistence/Settings"
import * as Sql from "@school/persistence/Sql"
import { Effect, Layer } from "effect"

/** Connects (SELECT 1) before the command runs, so an unreachable database is one clear line. */
const connect = (url: string) =>
  Layer.effectDiscard(DatabaseProvider.checkConnection(url)).pipe(
    Layer.provideMerge(Sql.layer({ url, maxConnections: 2, applicationName: "school-cli" }))
  )

export const Database = {
  layer: Layer.unwrap(Effect.gen(function*() {
    const settings = yield* Settings
    const database = yield* DatabaseProvider.forService(settings.databaseUrl)
    const client = connect(database.url)
    return database.origin === "embedded"
      ? Layer.effectDiscard(Effect.orDie(runMigrations)).pipe(Layer.provideMerge(client))
      : client
  }))
}
