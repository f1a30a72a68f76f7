/**
 * The run's PostgreSQL and its bench database: `DATABASE_URL` when set (a
 * fresh database is created in it and dropped at the end), else the embedded
 * PostgreSQL of @school/local-postgres in a temporary directory, removed at
 * the end.
 *
 * Round trips are counted with `pg_stat_statements`: every statement a client
 * sends is one `calls` increment, updated in shared memory as the statement
 * ends (unlike pg_stat_database, which backends flush lazily). The embedded
 * server is therefore started twice: once to initialise the cluster and set
 * `shared_preload_libraries` (and `shared_buffers`: the default 128 MB cannot
 * hold the 1M-student table with its indexes, which a server sized for that
 * school would), then again with both. On a `DATABASE_URL` server without the
 * extension, round trips are reported as unknown.
 */
import { Context, Effect, Layer, Option, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import type { DatabaseStartError } from "@school/runtime/DatabaseConnection"
import * as EmbeddedPostgres from "@school/local-postgres/EmbeddedPostgres"
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import * as Cpu from "./Cpu.ts"
import { benchError, type BenchError } from "./Processes.ts"

export interface BenchDatabase {
  /** The bench database, as a superuser. */
  readonly url: string
  readonly name: string
  readonly origin: "url" | "embedded"
  /** Connected to the maintenance database, so the harness's own statements are not counted. */
  readonly admin: SqlClient.SqlClient
  /** Connected to the bench database (loading data). */
  readonly sql: SqlClient.SqlClient
  /** Whether `pg_stat_statements` counts the bench database's statements. */
  readonly statementsTracked: boolean
  /** The server's postmaster on this machine (embedded only), for its CPU time. */
  readonly postmasterPid: number | undefined
}

/** One statement's counters, summed over the bench database. */
export interface StatementStat {
  readonly query: string
  readonly calls: number
  readonly totalMs: number
}

export type StatementSnapshot = ReadonlyMap<string, StatementStat>

const describe = (error: unknown) => error instanceof Error ? error.message : String(error)

const withDatabase = (url: string, database: string): string => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

/** A SqlClient on `url`, closed with the scope. */
export const connect = (url: string, applicationName: string, maxConnections = 2) =>
  Layer.build(Sql.layer({ url, maxConnections, applicationName })).pipe(
    Effect.map((context) => Context.get(context, SqlClient.SqlClient)),
    Effect.mapError((error) => benchError(`cannot connect to PostgreSQL: ${describe(error)}`))
  )

/** The embedded server with pg_stat_statements loaded, in a temporary directory. */
const embeddedWithStatements = (verbose: boolean): Effect.Effect<string, BenchError, Scope.Scope> =>
  Effect.gen(function*() {
    const dataDir = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => Fs.mkdtemp(Path.join(Os.tmpdir(), "school-bench-pg-")),
        catch: (error) => benchError(`cannot create a temporary directory: ${describe(error)}`)
      }),
      (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
    )
    // `persistent`: the second start must find the cluster the first made;
    // the directory is removed by the finalizer above instead.
    const options = { dataDir, persistent: true, durable: false, verbose, maxConnections: 200 }
    const fail = (error: DatabaseStartError) => benchError(error.message)
    // First start: initdb, then ask for the extension at the next start.
    yield* Effect.scoped(Effect.gen(function*() {
      const first = yield* EmbeddedPostgres.embedded(options).pipe(Effect.mapError(fail))
      const scope = yield* Scope.Scope
      const admin = yield* connect(first.url, "school-bench-setup", 1).pipe(Scope.provide(scope))
      yield* admin.unsafe(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`).pipe(
        Effect.andThen(admin.unsafe(`ALTER SYSTEM SET shared_buffers = '512MB'`)),
        Effect.mapError((error) => benchError(`cannot configure the embedded server: ${describe(error)}`))
      )
    }))
    const server = yield* EmbeddedPostgres.embedded(options).pipe(Effect.mapError(fail))
    return server.url
  })

/**
 * Starts (or connects to) PostgreSQL, creates and migrates the bench
 * database. Everything is undone when the scope closes.
 */
export const open = (options: { readonly databaseUrl: Option.Option<string>; readonly verbose: boolean }) =>
  Effect.gen(function*() {
    const origin = Option.isSome(options.databaseUrl) ? "url" as const : "embedded" as const
    const serverUrl = Option.isSome(options.databaseUrl)
      ? options.databaseUrl.value
      : yield* embeddedWithStatements(options.verbose)
    const maintenanceUrl = withDatabase(serverUrl, "postgres")
    const admin = yield* connect(maintenanceUrl, "school-bench-admin")
    const name = `school_bench_${process.pid}`
    yield* Effect.acquireRelease(
      admin.unsafe(`CREATE DATABASE ${name}`).pipe(
        Effect.mapError((error) => benchError(`cannot create the bench database: ${describe(error)}`))
      ),
      () => admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
    )
    const url = withDatabase(serverUrl, name)
    const sql = yield* connect(url, "school-bench-loader")
    yield* runMigrations.pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.mapError((error) => benchError(`migrations failed: ${describe(error)}`))
    )
    // The view lives where the extension is created: the maintenance database,
    // which is where the harness asks from; it reports every database.
    const statementsTracked = yield* admin.unsafe(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`).pipe(
      Effect.andThen(admin.unsafe(`SELECT 1 FROM pg_stat_statements LIMIT 1`)),
      Effect.as(true),
      Effect.orElseSucceed(() => false)
    )
    const postmasterPid = origin === "embedded"
      ? yield* admin<{ pid: number }>`SELECT pg_backend_pid() AS pid`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : Cpu.parentOf(rows[0].pid)),
        Effect.orElseSucceed(() => undefined)
      )
      : undefined
    return { url, name, origin, admin, sql, statementsTracked, postmasterPid } satisfies BenchDatabase
  })

/** The bench database's statement counters now (empty when not tracked). */
export const snapshot = (db: BenchDatabase): Effect.Effect<StatementSnapshot> =>
  db.statementsTracked
    ? db.admin<{ queryid: string; query: string; calls: string; total_ms: number }>`
        SELECT queryid::text AS queryid, min(query) AS query, sum(calls)::text AS calls,
               sum(total_exec_time)::float8 AS total_ms
        FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = ${db.name})
        GROUP BY queryid`.pipe(
        Effect.map((rows) =>
          new Map(rows.map((row) => [row.queryid, { query: row.query, calls: Number(row.calls), totalMs: row.total_ms }]))
        ),
        Effect.orDie
      )
    : Effect.succeed(new Map())

/** What ran between two snapshots, most-called first. */
export const difference = (before: StatementSnapshot, after: StatementSnapshot): Array<StatementStat> => {
  const out: Array<StatementStat> = []
  for (const [id, now] of after) {
    const was = before.get(id)
    const calls = now.calls - (was?.calls ?? 0)
    if (calls > 0) out.push({ query: now.query, calls, totalMs: now.totalMs - (was?.totalMs ?? 0) })
  }
  return out.sort((a, b) => b.calls - a.calls)
}

/**
 * Brings the bench database back to quiet after a round: statements still
 * running for requests whose clients have gone (the load stopped) are
 * cancelled, then it waits until no statement has run for 100 ms (at most
 * 10 s), so the next measurement starts from a quiet database.
 */
export const quiesce = (db: BenchDatabase): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* db.admin`
      SELECT pg_cancel_backend(pid) FROM pg_stat_activity
      WHERE datname = ${db.name} AND state = 'active' AND pid <> pg_backend_pid()`.pipe(Effect.ignore)
    if (!db.statementsTracked) return yield* Effect.sleep("200 millis")
    const total = Effect.map(snapshot(db), (s) => [...s.values()].reduce((sum, stat) => sum + stat.calls, 0))
    let last = yield* total
    for (let i = 0; i < 100; i++) {
      yield* Effect.sleep("100 millis")
      const now = yield* total
      if (now === last) return
      last = now
    }
  })
