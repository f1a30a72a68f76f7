/**
 * Owns the start-up check of a process's database (docs/development.md
 * "Runtime"): one round trip before anything else uses it, which both
 * reaches the server and reads its version; the one-line error when the
 * database cannot be started or reached, or is older than the oldest
 * PostgreSQL the service supports (docs/operations.md "PostgreSQL
 * versions"); and how a connection string is shown without its password.
 * The API's, the dispatcher's and the CLI's (`npm run migrate` and
 * `npm start` included); the embedded PostgreSQL (libs/local-postgres)
 * reports its own start failures with the same error.
 */
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"

/**
 * The database could not be started or reached, or is too old. Its own report: `runMain` prints
 * `error: <message>`, no stack.
 */
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

/** The oldest PostgreSQL major version the service runs on (docs/operations.md "PostgreSQL versions"). */
export const OLDEST_SUPPORTED_MAJOR = 15

/**
 * A `server_version_num` as PostgreSQL names the version: two numbers since
 * 10 (180001 → "18.1", 140010 → "14.10"), three before (90624 → "9.6.24").
 */
export const versionName = (versionNum: number): string => {
  const major = Math.floor(versionNum / 10_000)
  return major >= 10
    ? `${major}.${versionNum % 10_000}`
    : `${major}.${Math.floor(versionNum / 100) % 100}.${versionNum % 100}`
}

/**
 * The one line that refuses a server older than `OLDEST_SUPPORTED_MAJOR`,
 * given its `server_version_num`; undefined for a supported one.
 */
export const unsupportedVersion = (versionNum: number): string | undefined =>
  versionNum >= OLDEST_SUPPORTED_MAJOR * 10_000
    ? undefined
    : `PostgreSQL ${versionName(versionNum)} is not supported: the oldest supported version is ${OLDEST_SUPPORTED_MAJOR} ` +
      `(docs/operations.md "PostgreSQL versions")`

const VersionRow = Schema.Struct({ server_version_num: Schema.NumberFromString })
const decodeVersionRow = Schema.decodeUnknownEffect(VersionRow)

/** The server's `server_version_num` (180001 for 18.1). A reply that is not a number is a defect. */
export const serverVersion: Effect.Effect<number, SqlError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SHOW server_version_num`
  const row = yield* Effect.orDie(decodeVersionRow(rows[0]))
  return row.server_version_num
})

/** Fails with the one line of `unsupportedVersion` when the server is too old. */
export const refuseUnsupported = (versionNum: number): Effect.Effect<void, DatabaseStartError> => {
  const refusal = unsupportedVersion(versionNum)
  return refusal === undefined ? Effect.void : Effect.fail(new DatabaseStartError({ message: refusal }))
}

/**
 * One round trip on the client's database, before anything else uses it:
 * an unreachable database, or a server older than the oldest supported
 * version, is a one-line `DatabaseStartError`.
 */
export const checkConnection = (url: string): Effect.Effect<void, DatabaseStartError, SqlClient.SqlClient> =>
  serverVersion.pipe(
    Effect.mapError((error) =>
      new DatabaseStartError({ message: `cannot connect to the database at ${describeUrl(url)}: ${rootMessage(error)}` })
    ),
    Effect.flatMap(refuseUnsupported)
  )

/**
 * The version check of a process that starts without its database (the
 * API: docs/operations.md "Database away"): a server that answers and is
 * too old is the one-line `DatabaseStartError`; one that does not answer
 * is left to the process, which reports it as it would later.
 */
export const checkVersionIfReachable: Effect.Effect<void, DatabaseStartError, SqlClient.SqlClient> = serverVersion.pipe(
  Effect.matchEffect({ onFailure: () => Effect.void, onSuccess: refuseUnsupported })
)
