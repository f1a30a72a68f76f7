/**
 * Owns where the database of `npm start` and the operator CLI comes from
 * (docs/operations.md "Commands"): DATABASE_URL when it is set, else the
 * embedded PostgreSQL with its data kept between runs in DATA_DIR (default
 * `.data/postgres` in the project, or a directory the server's user can
 * reach, see `EmbeddedPostgres.serviceDataDir`).
 */
import type { Scope } from "effect"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { DatabaseStartError } from "@school/runtime/DatabaseConnection"
import { type Database, fromUrl } from "./Database.ts"
import * as EmbeddedPostgres from "./EmbeddedPostgres.ts"

/**
 * The server the service runs against: `databaseUrl` when given, else the
 * embedded PostgreSQL with its data in `dataDir` (DATA_DIR), kept between
 * runs; a cluster another process already runs there is used as it is.
 */
export const forService = (
  databaseUrl: Option.Option<string>,
  options?: { readonly dataDir?: Option.Option<string> | undefined; readonly verbose?: boolean | undefined }
): Effect.Effect<Database, DatabaseStartError, Scope.Scope> =>
  Option.match(databaseUrl, {
    onSome: (url) => Effect.succeed(fromUrl(url)),
    onNone: () =>
      Effect.gen(function*() {
        const dataDir = yield* EmbeddedPostgres.serviceDataDir(options?.dataDir ?? Option.none())
        const database = yield* EmbeddedPostgres.embedded({
          dataDir: dataDir.path,
          persistent: true,
          verbose: options?.verbose
        })
        return { ...database, dataDirNote: Option.getOrUndefined(dataDir.note) }
      })
  })
