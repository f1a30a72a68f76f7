/**
 * The PostgreSQL client every process uses: one pool, snake_case columns
 * mapped to the camelCase-free names the API already speaks (we keep
 * snake_case end to end, so no name transform runs per row).
 *
 * A process that serves requests also bounds its waits (docs/operators.md
 * "Settings": DATABASE_STATEMENT_TIMEOUT, DATABASE_ACQUIRE_TIMEOUT), so a
 * locked table or a database that is away cannot hold every pooled
 * connection and every request behind it:
 * - each statement: `statement_timeout` in every connection's startup
 *   packet; PostgreSQL cancels a statement that runs (or waits for a lock)
 *   longer, with SQLSTATE 57014, a `StatementTimeoutError`;
 * - the wait for a pooled connection (and for opening one): the pool of
 *   @effect/sql-pg has no bound of its own, so the `SqlClient` given to the
 *   repositories takes its connections through a bounded checkout; past the
 *   bound it fails with a `ConnectionError` ("no free database connection").
 * apps/api turns both into 503 service_unavailable (docs/decisions.md
 * "Requests and responses"). Migrations and the CLI run without bounds.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Predicate, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlConnection } from "effect/sql"
import { ConnectionError, SqlError, UnknownError } from "effect/sql/SqlError"

export interface SqlOptions {
  readonly url: string
  readonly maxConnections?: number
  readonly applicationName?: string
  /** DATABASE_STATEMENT_TIMEOUT: the server cancels a statement that takes longer. */
  readonly statementTimeout?: Duration.Duration | undefined
  /** DATABASE_ACQUIRE_TIMEOUT: the longest wait for a pooled connection (or a new one). */
  readonly acquireTimeout?: Duration.Duration | undefined
}

const config = (options: SqlOptions): PgClient.PgPoolConfig => ({
  url: Redacted.make(options.url),
  maxConnections: options.maxConnections ?? 10,
  applicationName: options.applicationName ?? "school-service",
  ...(options.acquireTimeout === undefined ? {} : { connectTimeout: options.acquireTimeout }),
  ...(options.statementTimeout === undefined
    ? {}
    : { startupParameters: { statement_timeout: String(Math.max(1, Math.round(Duration.toMillis(options.statementTimeout)))) } })
})

/** The failure of a checkout that found no connection in time: a `ConnectionError`, like a refused connect. */
const noConnection = (bound: Duration.Duration) =>
  new SqlError({
    reason: new ConnectionError({
      cause: new Error(`no free database connection within ${Duration.format(bound)}`),
      message: `no free database connection within ${Duration.format(bound)} (DATABASE_ACQUIRE_TIMEOUT)`,
      operation: "acquire"
    })
  })

/** PostgreSQL answers `ROLLBACK` to a `COMMIT` of an aborted transaction (as @effect/sql-pg checks it). */
const commit = (connection: SqlConnection.Connection) =>
  Effect.flatMap(connection.executeRaw("COMMIT", []), (result) =>
    Predicate.hasProperty(result, "command") && result.command === "ROLLBACK"
      ? Effect.fail(
        new SqlError({
          reason: new UnknownError({
            cause: new Error("COMMIT rolled back an aborted transaction"),
            message: "COMMIT rolled back an aborted transaction",
            operation: "commit"
          })
        })
      )
      : Effect.void)

/**
 * The `SqlClient` over `pg`'s pool whose every checkout (statement or
 * transaction) waits at most `bound`. It shares `pg`'s pool and transaction
 * context, so `PgClient` (LISTEN/NOTIFY) and `SqlClient` stay one client.
 */
const bounded = (pg: PgClient.PgClient, bound: Duration.Duration) => {
  const acquirer = pg.reserve.pipe(
    Effect.timeoutOrElse({ duration: bound, orElse: () => Effect.fail(noConnection(bound)) })
  )
  return SqlClient.make({
    acquirer,
    transactionAcquirer: acquirer,
    compiler: PgClient.makeCompiler(),
    driver: "pg",
    spanAttributes: [["db.system.name", "postgresql"]],
    transactionService: pg.transactionService,
    prepareTransactionControls: true,
    commit,
    releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`
  })
}

export const layer = (options: SqlOptions): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError> => {
  const acquireTimeout = options.acquireTimeout
  if (acquireTimeout === undefined) return PgClient.layer(config(options))
  return Layer.effectContext(Effect.gen(function*() {
    const pg = yield* PgClient.make(config(options))
    const sql = yield* bounded(pg, acquireTimeout)
    return Context.make(PgClient.PgClient, pg).pipe(Context.add(SqlClient.SqlClient, sql))
  })).pipe(Layer.provide(Reactivity.layer))
}
