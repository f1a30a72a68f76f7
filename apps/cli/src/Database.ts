/**
 * The database a CLI command works on (docs/operations.md "Operator CLI":
 * against DATABASE_URL). With DATABASE_URL unset: the embedded PostgreSQL of
 * `npm start` (DATA_DIR, default .data/postgres), the running one if there is
 * one, else started for the command and stopped after it; migrations are
 * applied to it first, as `npm start` would. A DATABASE_URL database is
 * expected to be migrated (`npm run migrate`).
 */
import { forService } from "@school/local-postgres/DatabaseProvider"
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { checkConnection } from "@school/runtime/DatabaseConnection"
import * as SettingKinds from "@school/runtime/SettingKinds"
import { DATABASE_URL } from "@school/runtime/Settings"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * `DATA_DIR` (docs/operations.md "Settings"): where the embedded PostgreSQL
 * of `npm start` and the CLI keeps its data; None: the project's
 * `.data/postgres` (libs/local-postgres decides).
 */
export const DATA_DIR = SettingKinds.optional("DATA_DIR", SettingKinds.path)

/**
 * Connects (and reads the server's version) before the command runs, so an unreachable database,
 * or one older than PostgreSQL 15 (docs/operations.md "PostgreSQL versions"), is one clear line.
 */
const connect = (url: string) =>
  Layer.effectDiscard(checkConnection(url)).pipe(
    Layer.provideMerge(Sql.layer({ url, maxConnections: 2, applicationName: "school-cli" }))
  )

export const Database = {
  layer: Layer.unwrap(Effect.gen(function*() {
    const database = yield* forService(yield* DATABASE_URL, { dataDir: yield* DATA_DIR })
    const client = connect(database.url)
    return database.origin === "embedded"
      ? Layer.effectDiscard(Effect.orDie(runMigrations)).pipe(Layer.provideMerge(client))
      : client
  }))
}
