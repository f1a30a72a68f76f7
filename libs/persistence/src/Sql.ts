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
 *   @effect/sql-pg has no bound of its own, so every statement and
 *   transaction of the process takes a turn first (`makeGate`): at once
 *   while a connection is free, else in line for at most the bound; past it
 *   the checkout fails with a `ConnectionError` ("no free database
 *   connection").
 * apps/api turns both into 503 service_unavailable (docs/decisions.md
 * "Requests and responses"). Migrations and the CLI run without bounds.
 *
 * The turns also keep the pool's use for `/metrics` (`PoolStats`,
 * docs/operations.md "Metrics"): @effect/sql-pg 4.0 keeps its `effect/Pool`
 * to itself, so the counts are taken where every statement and transaction
 * of the process takes its connection. The process's client is built on
 * @effect/sql-pg's `PgPool` directly (as `PgClient.make` is), so that a
 * statement borrows a connection for itself alone, without a scope.
 */
import { PgClient } from "@effect/sql-pg"
import type * as PgConnection from "@effect/sql-pg/PgConnection"
import * as PgPool from "@effect/sql-pg/PgPool"
import type { Scope } from "effect"
import * as Arr from "effect/Array"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import * as Reactivity from "effect/reactivity/Reactivity"
import type { SqlConnection } from "effect/sql"
import * as Statement from "effect/sql/Statement"
import * as Stream from "effect/Stream"
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
  /**
   * `false`: the connections plan no sequential scan where an index serves
   * (`enable_seqscan = off` in their startup packet), for a process whose
   * statements are all keyed and whose tables grow or shrink by orders of
   * magnitude within the minute a connection keeps a plan made on the old
   * statistics (docs/decisions.md "The delivery queue", plans).
   */
  readonly sequentialScans?: boolean | undefined
}

/** How long the pool keeps a connection nobody used (the @effect/sql-pg default, stated so `PoolStats` agrees). */
const IDLE_TIMEOUT_MS = 60_000

/** The settings every connection of the pool starts with. */
const startupParameters = (options: SqlOptions): Record<string, string> => ({
  ...(options.statementTimeout === undefined
    ? {}
    : { statement_timeout: String(Math.max(1, Math.round(Duration.toMillis(options.statementTimeout)))) }),
  ...(options.sequentialScans === false ? { enable_seqscan: "off" } : {})
})

const config = (options: SqlOptions): PgClient.PgPoolConfig => {
  const parameters = startupParameters(options)
  return {
    url: Redacted.make(options.url),
    maxConnections: options.maxConnections ?? 10,
    idleTimeout: Duration.millis(IDLE_TIMEOUT_MS),
    applicationName: options.applicationName ?? "school-service",
    ...(options.acquireTimeout === undefined ? {} : { connectTimeout: options.acquireTimeout }),
    ...(Object.keys(parameters).length === 0 ? {} : { startupParameters: parameters })
  }
}

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

/**
 * Who may take one of the pool's `max` connections, and the counts
 * `PoolStats` reads. A statement or transaction takes a turn here before it
 * asks the pool: while fewer than `max` (less the connections LISTEN holds)
 * have one, it goes on at once, and the pool has a connection for it, idle
 * or opened (an open is bounded by the connect time-out, which is the same
 * `bound`); otherwise it waits in line, first come first served, at most
 * `bound`. So the pool itself is never waited on, and the usual checkout
 * costs two counters and no timer (a time-out per checkout, a fiber racing
 * a sleep, cost each statement ~60 µs and ~23 kB of the API's CPU and heap:
 * docs/performance.md "The request path").
 */
const makeGate = (max: number, bound: Duration.Duration) => {
  const boundMs = Math.max(1, Duration.toMillis(bound))
  /** Turns taken: a connection lent, or being opened for one. */
  let taken = 0
  /** Connections LISTEN holds (not statements'). */
  let listening = 0
  /** Connections lent to a statement or transaction now. */
  let lent = 0
  /** Waiting turns, oldest first; each is called once when it gets its turn. */
  const line: Array<() => void> = []
  /** Per physical connection: its checkouts now, and when the last one ended. */
  const backends = new Map<number, { lent: number; lastUsed: number }>()

  const admit = () => {
    while (line.length > 0 && taken < max - listening) {
      taken++
      line.shift()!()
    }
  }
  const leave = () => {
    taken--
    admit()
  }
  /** A turn: at once when one is free and nobody waits, else in line for at most `bound`. */
  const wait = Effect.callback<void, SqlError>((resume) => {
    let granted = false
    const turn = () => {
      granted = true
      clearTimeout(timer)
      resume(Effect.void)
    }
    const timer = setTimeout(() => {
      const at = line.indexOf(turn)
      if (at >= 0) line.splice(at, 1)
      resume(Effect.fail(noConnection(bound)))
    }, boundMs)
    line.push(turn)
    // Interrupted while waiting: out of the line, or the turn given meanwhile handed on.
    return Effect.sync(() => {
      clearTimeout(timer)
      const at = line.indexOf(turn)
      if (at >= 0) line.splice(at, 1)
      else if (granted) leave()
    })
  })
  const tryTake = () => {
    if (line.length === 0 && taken < max - listening) {
      taken++
      return true
    }
    return false
  }
  const lend = (connection: PgConnection.PgConnection) => {
    lent++
    const known = backends.get(connection.processId)
    if (known === undefined) backends.set(connection.processId, { lent: 1, lastUsed: 0 })
    else known.lent++
  }
  const giveBack = (connection: PgConnection.PgConnection) => {
    lent--
    const known = backends.get(connection.processId)
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
  const stats: PoolStatsShape = { max, inUse: () => lent, waiting: () => line.length + taken - lent, idle }
  return {
    stats,
    /** `f` with a connection of `use` (the pool's lend-for-one-effect), after a turn; the turn ends when `use` gives it back. */
    borrow: <A, E, R>(
      use: <B, E2, R2>(
        f: (connection: PgConnection.PgConnection) => Effect.Effect<B, E2, R2>
      ) => Effect.Effect<B, E2 | SqlError, R2>,
      f: (connection: PgConnection.PgConnection) => Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | SqlError, R> =>
      Effect.uninterruptibleMask((restore) => {
        const run = Effect.onExit(
          restore(use((connection) => {
            lend(connection)
            return Effect.onExit(f(connection), () => Effect.sync(() => giveBack(connection)))
          })),
          () => Effect.sync(leave)
        )
        return tryTake() ? run : Effect.flatMap(restore(wait), () => run)
      }),
    /** A connection of `checkout` (scoped: kept until the scope closes), after a turn that ends with the scope. */
    scoped: (
      checkout: Effect.Effect<PgConnection.PgConnection, SqlError, Scope.Scope>
    ): Effect.Effect<PgConnection.PgConnection, SqlError, Scope.Scope> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(tryTake() ? Effect.void : restore(wait), () =>
          Effect.flatMap(Effect.addFinalizer(() => Effect.sync(leave)), () =>
            Effect.tap(restore(checkout), (connection) =>
              Effect.flatMap(
                Effect.sync(() => lend(connection)),
                () => Effect.addFinalizer(() => Effect.sync(() => giveBack(connection)))
              ))))),
    /** A connection for LISTEN until the scope closes: one turn fewer for statements meanwhile. */
    listen: (
      reserve: Effect.Effect<PgConnection.PgConnection, SqlError, Scope.Scope>
    ): Effect.Effect<PgConnection.PgConnection, SqlError, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.sync(() => {
          listening++
        }),
        () =>
          Effect.sync(() => {
            listening--
            admit()
          })
      ).pipe(Effect.andThen(reserve))
  }
}

/** What the `SqlClient` runs a statement on: a pooled session of @effect/sql-pg, as its own client wraps one. */
const connectionOf = (connection: PgConnection.PgConnection): SqlConnection.Connection => ({
  execute: (sql, params, transformRows) => {
    const rows = Effect.map(connection.query(sql, params, true), (result) => result.rows)
    return transformRows === undefined ? rows : Effect.map(rows, transformRows)
  },
  executeRaw: (sql, params) => connection.query(sql, params),
  executeStream: (sql, params, transformRows) => {
    const rows = connection.stream(sql, params)
    // A transform maps rows one to one, so a chunk stays non-empty (this client sets none).
    return transformRows === undefined
      ? rows
      : Stream.mapArray(rows, (chunk) => {
        const out = transformRows(chunk)
        return Arr.isReadonlyArrayNonEmpty(out) ? out : chunk
      })
  },
  executeValues: (sql, params) => connection.queryValues(sql, params),
  executeValuesUnprepared: (sql, params) => connection.queryValues(sql, params, false),
  executeUnprepared: (sql, params, transformRows) => {
    const rows = Effect.map(connection.query(sql, params, false), (result) => result.rows)
    return transformRows === undefined ? rows : Effect.map(rows, transformRows)
  }
})

/**
 * The process's client over one @effect/sql-pg pool whose every checkout
 * (statement or transaction) waits at most `bound` for its turn (`makeGate`).
 * It is both the `SqlClient` and the `PgClient` (LISTEN/NOTIFY), as
 * `PgClient.make`'s client is: one pool, one transaction context.
 */
const bounded = (options: SqlOptions, bound: Duration.Duration) =>
  Effect.gen(function*() {
    const settings = config(options)
    const max = options.maxConnections ?? 10
    const pool = yield* PgPool.make(settings)
    const gate = makeGate(max, bound)
    /** The `SqlConnection` of each pooled session, made once per session. */
    const connections = new WeakMap<PgConnection.PgConnection, SqlConnection.Connection>()
    const wrap = (connection: PgConnection.PgConnection) => {
      const known = connections.get(connection)
      if (known !== undefined) return known
      const made = connectionOf(connection)
      connections.set(connection, made)
      return made
    }
    const sql = yield* SqlClient.make({
      acquirer: Effect.map(gate.scoped(pool.get), wrap),
      borrower: (f) => gate.borrow(pool.use, (connection) => f(wrap(connection))),
      transactionAcquirer: Effect.map(gate.scoped(pool.reserve), wrap),
      compiler: PgClient.makeCompiler(),
      driver: "pg",
      spanAttributes: [["db.system.name", "postgresql"]],
      prepareTransactionControls: true,
      commit,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`
    })
    const client: PgClient.PgClient = Object.assign(sql, {
      [PgClient.TypeId]: PgClient.TypeId,
      config: settings,
      json: (value: unknown) => Statement.fragment([pgJson(value, undefined, undefined)]),
      listen: (channel: string) => Effect.flatMap(gate.listen(pool.reserve), (connection) => connection.listen(channel)),
      notify: (channel: string, payload: string) =>
        Effect.asVoid(sql.unsafe("SELECT pg_notify($1, $2)", [channel, payload]))
    })
    return { client, stats: gate.stats }
  })

/** A JSON parameter, as `PgClient`'s own `json` makes it (its compiler binds the kind "PgJson"). */
const pgJson = Statement.custom<Statement.Custom<"PgJson", unknown, undefined, undefined>>("PgJson")

export const layer = (options: SqlOptions): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError> => {
  const acquireTimeout = options.acquireTimeout
  if (acquireTimeout === undefined) return PgClient.layer(config(options))
  return Layer.effectContext(Effect.gen(function*() {
    const { client, stats } = yield* bounded(options, acquireTimeout)
    return Context.make(PgClient.PgClient, client).pipe(
      Context.add(SqlClient.SqlClient, client),
      Context.add(PoolStats, stats)
    )
  })).pipe(Layer.provide(Reactivity.layer))
}
