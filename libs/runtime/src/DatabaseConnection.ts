/**
 * Owns the start-up check of a process's database (docs/development.md
 * "Runtime"): `SELECT 1` before anything else uses it, the one-line error
 * when the database cannot be started or reached, and how a connection
 * string is shown without its password. The API's, the dispatcher's and
 * the CLI's; the embedded PostgreSQL (libs/local-postgres) reports its own
 * start failures with the same error.
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"

/** The database could not be started or reached. Its own report: `runMain` prints `error: <message>`, no stack. */
export class DatabaseStartError extends Schema.TaggedError<DatabaseStartError>()("DatabaseStartError", {
  message: Schema.String
}) {
  override readonly [Runtime.errorReported] = false
}

/** host:port/database of a connection string, never its password. */
export const describeUrl = (url: string): string => {
  if (!URL.canParse(url)) return "(malformed URL)"
  const parsed = new URL(url)
  return `${parsed.host}${parsed.pathname}`
}

/** The innermost cause's message: "connect ECONNREFUSED 127.0.0.1:5432" rather than "Failed to connect". */
const rootMessage = (error: unknown): string => {
  let current = error
  while (current instanceof Error && current.cause instanceof Error) current = current.cause
  return current instanceof Error ? current.message : String(current)
}

/** `SELECT 1` on the client's database; an unreachable one is a one-line `DatabaseStartError`. */
export const checkConnection = (url: string): Effect.Effect<void, DatabaseStartError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`SELECT 1`.pipe(
      Effect.mapError((error) =>
        new DatabaseStartError({ message: `cannot connect to the database at ${describeUrl(url)}: ${rootMessage(error)}` })
      )
    )
  })
