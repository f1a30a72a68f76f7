/**
 * Owns what a process knows of the database it uses (docs/operations.md
 * "Commands"): its superuser connection string and where it came from, how
 * it is shown without its password, and the one-line error when it cannot be
 * started or reached.
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { howItEnded } from "@school/runtime/ChildProcesses"

/** The database could not be started or reached. Its own report: `runMain` prints `error: <message>`, no stack. */
export class DatabaseStartError extends Schema.TaggedError<DatabaseStartError>()("DatabaseStartError", {
  message: Schema.String
}) {
  override readonly [Runtime.errorReported] = false
}

/** A running PostgreSQL server and how to reach it as a superuser. */
export interface Database {
  /** Connection string of the server's maintenance database, as a superuser (may CREATE DATABASE). */
  readonly url: string
  readonly origin: "url" | "embedded"
  /** The embedded server's data directory. */
  readonly dataDir?: string | undefined
  /** Why the data directory is not the default one, when it is not. */
  readonly dataDirNote?: string | undefined
  /**
   * For an embedded server this process started: completes if the server
   * ends before the scope that started it closes (killed, crashed), with how
   * it ended. Absent for a server someone else runs.
   */
  readonly exited?: Effect.Effect<{ readonly code: number | null; readonly signal: string | null }> | undefined
}

/**
 * The embedded PostgreSQL this process started ended on its own while the
 * service was running. Its own report: `runMain` prints `error: <message>`.
 */
export class DatabaseExited extends Schema.TaggedError<DatabaseExited>()("DatabaseExited", {
  dataDir: Schema.String,
  code: Schema.NullOr(Schema.Number),
  signal: Schema.NullOr(Schema.String)
}) {
  override readonly [Runtime.errorReported] = false
  override get message(): string {
    return `the embedded PostgreSQL (data in ${this.dataDir}) ${howItEnded(this.code, this.signal)}; stopped the API and the dispatcher`
  }
}

/** The given server: nothing to start or stop. */
export const fromUrl = (url: string): Database => ({ url, origin: "url" })

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
