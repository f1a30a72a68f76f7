/**
 * The PostgreSQL client every process uses: one pool, snake_case columns
 * mapped to the camelCase-free names the API already speaks (we keep
 * snake_case end to end, so no name transform runs per row).
 *
 * A process that serves requests also bounds its waits (docs/operations.md
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
 *
 * The bounded checkout also keeps the pool's use for `/metrics`
 * (`PoolStats`, docs/operations.md "Metrics"): @effect/sql-pg 4.0 keeps its
 * `effect/Pool` to itself, so the counts are taken where every statement
 * and transaction of the process takes its connection.
 */
import { PgClient } from "@effect/sql-pg"
import type { Scope } from "effect"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Reactivity from "effect/reactivity/Reactivity"
import type { SqlConnection } from "effect/sql"
import * as SqlClient from "effect/sql/SqlClient"
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

/** How long the pool keeps a connection nobody used (the @effect/sql-pg default, stated so `PoolStats` agrees). */
const IDLE_TIMEOUT_MS = 60_000

const config = (options: SqlOptions): PgClient.PgPoolConfig => ({
  url: Redacted.make(options.url),
  maxConnections: options.maxConnections ?? 10,
  idleTimeout: Duration.millis(IDLE_TIMEOUT_MS),
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
 * The pool's use as the process's `SqlClient` sees it, read at scrape time
 * (docs/operations.md "Metrics"): `inUse` connections lent to a statement or
 * transaction, `waiting` checkouts that have none yet, `idle` connections
 * the pool keeps open and nobody uses (a connection unused for the pool's
 * idle time-out is closed by it, so it is no longer counted), `max` the
 * bound. The listen connection (LISTEN/NOTIFY) is not among them.
 */
export interface PoolStatsShape {
  readonly max: number
  readonly inUse: () => number
  readonly waiting: () => number
  readonly idle: () => number
}

/** The process pool's use; `undefined` for a pool without the bounded checkout (migrations, the CLI). */
export const PoolStats = Context.Reference<PoolStatsShape | undefined>("@school/persistence/Sql/PoolStats", {
  defaultValue: () => undefined
})

/** The backend's process id of a checked-out connection: which physical connection it is. */
const backendOf = (connection: SqlConnection.Connection): number | undefined => {
  const inner: unknown = Predicate.hasProperty(connection, "connection") ? connection.connection : undefined
  return Predicate.hasProperty(inner, "processId") && typeof inner.processId === "number" ? inner.processId : undefined
}

const makePoolUse = (max: number) => {
  let waiting = 0
  let inUse = 0
  /** Per physical connection: its checkouts now, and when the last one ended. */
  const backends = new Map<number, { lent: number; lastUsed: number }>()
  const lend = (connection: SqlConnection.Connection) => {
    inUse++
    const pid = backendOf(connection)
    if (pid === undefined) return
    const known = backends.get(pid)
    if (known === undefined) backends.set(pid, { lent: 1, lastUsed: 0 })
    else known.lent++
    return pid
  }
  const giveBack = (pid: number | undefined) => {
    inUse--
    if (pid === undefined) return
    const known = backends.get(pid)
    if (known === undefined) return
    known.lent--
    known.lastUsed = Date.now()
  }
  const idle = () => {
    const closedBefore = Date.now() - IDLE_TIMEOUT_MS
    let count = 0
    for (const [pid, use] of backends) {
      if (use.lent > 0) continue
      if (use.lastUsed < closedBefore) backends.delete(pid)
      else count++
    }
    return count
  }
  /** `acquire`, counted: waiting until it gives a connection, in use until the scope closes. */
  const counted = (
    acquire: Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope>
  ): Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope> =>
    Effect.acquireRelease(
      Effect.suspend(() => {
        waiting++
        return Effect.onExit(acquire, () =>
          Effect.sync(() => {
            waiting--
          }))
      }).pipe(Effect.map((connection) => ({ connection, pid: lend(connection) }))),
      ({ pid }) => Effect.sync(() => giveBack(pid))
    ).pipe(Effect.map(({ connection }) => connection))
  const stats: PoolStatsShape = { max, inUse: () => inUse, waiting: () => waiting, idle }
  return { counted, stats }
}

/**
 * The `SqlClient` over `pg`'s pool whose every checkout (statement or
 * transaction) waits at most `bound`. It shares `pg`'s pool and transaction
 * context, so `PgClient` (LISTEN/NOTIFY) and `SqlClient` stay one client.
 */
const bounded = (
  pg: PgClient.PgClient,
  bound: Duration.Duration,
  counted: (
    acquire: Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope>
  ) => Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope>
) => {
  const acquirer = counted(pg.reserve.pipe(
    Effect.timeoutOrElse({ duration: bound, orElse: () => Effect.fail(noConnection(bound)) })
  ))
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
    const use = makePoolUse(options.maxConnections ?? 10)
    const sql = yield* bounded(pg, acquireTimeout, use.counted)
    return Context.make(PgClient.PgClient, pg).pipe(
      Context.add(SqlClient.SqlClient, sql),
      Context.add(PoolStats, use.stats)
    )
  })).pipe(Layer.provide(Reactivity.layer))
}
