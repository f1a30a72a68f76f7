/**
 * The database states a process must tell apart at start (docs/operations.md
 * "Process endpoints", "Database away"; libs/runtime/src/DatabaseStatus.ts),
 * made on the run's one server: an empty database (no migration), one
 * migrated only up to some migration, a login role, a database that does
 * not exist; and a real process spawned with no wait, its output kept, so a
 * test can watch it from its first moment.
 */
import { migrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { Effect, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { inject } from "vitest"
import { environment } from "./Processes.ts"

/** The superuser URL of the run's server. */
export const adminUrl = (): string => {
  const url = inject("adminDatabaseUrl") ?? process.env["TEST_DATABASE_URL"]
  if (url === undefined || url === "") throw new Error("no test database server: run through vitest.config.ts (globalSetup)")
  return url
}

/** `url` with another database, and optionally other credentials. */
export const withDatabase = (url: string, database: string, credentials?: { readonly user: string; readonly password: string }) => {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  if (credentials !== undefined) {
    parsed.username = credentials.user
    parsed.password = credentials.password
  }
  return parsed.toString()
}

/** Runs `statements` as the superuser on `database` (default: the maintenance database). */
export const asAdmin = (statements: ReadonlyArray<string>, database?: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const statement of statements) yield* sql.unsafe(statement)
  }).pipe(
    Effect.provide(Sql.layer({
      url: database === undefined ? adminUrl() : withDatabase(adminUrl(), database),
      maxConnections: 1,
      applicationName: "test-admin"
    })),
    Effect.orDie
  )

/** A random name for a database or a role of this run. */
export const uniqueName = (prefix: string) => `${prefix}_${randomBytes(5).toString("hex")}`

/** A new empty database (no migration) until the scope closes: its name and superuser URL. */
export const emptyDatabase = (owner?: string) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const name = uniqueName("school_state")
      yield* asAdmin([`CREATE DATABASE ${name}${owner === undefined ? "" : ` OWNER ${owner}`}`])
      return { name, url: withDatabase(adminUrl(), name) }
    }),
    ({ name }) => asAdmin([`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`])
  )

/** A login role with `password` until the scope closes (create it before the databases it owns). */
export const loginRole = (password: string) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const name = uniqueName("school_role")
      yield* asAdmin([`CREATE ROLE ${name} WITH LOGIN PASSWORD '${password}'`])
      return name
    }),
    (name) => asAdmin([`DROP ROLE IF EXISTS ${name}`])
  )

/** Applies the migrations of this code to `url`: all of them, the first `count`, or all but the last `-count`. */
export const migrate = (url: string, count?: number) =>
  Effect.gen(function*() {
    const keys = Object.keys(migrations)
    const limit = count === undefined ? keys.length : count < 0 ? keys.length + count : count
    const chosen = Object.fromEntries(Object.entries(migrations).filter(([key]) => keys.indexOf(key) < limit))
    yield* Migrator.make({})({ loader: Migrator.fromRecord(chosen) })
  }).pipe(Effect.provide(Sql.layer({ url, maxConnections: 1, applicationName: "test-migrate" })), Effect.orDie)

export interface Spawned {
  /** Everything it printed so far (stdout and stderr). */
  readonly output: () => string
  /** Whether it has exited. */
  readonly exited: () => boolean
}

/**
 * Spawns `script` with only `env` among the settings and returns at once;
 * SIGTERM and the wait for its exit when the scope closes.
 */
export const spawnProcess = (script: string, env: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [script], { env: environment({ LOG_FORMAT: "json", ...env }), stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      let exited = false
      const done = new Promise<void>((resolve) =>
        child.once("exit", () => {
          exited = true
          resolve()
        })
      )
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
      return { child, done, spawned: { output: () => output, exited: () => exited } satisfies Spawned }
    }),
    ({ child, done }) =>
      Effect.promise(() => {
        child.kill("SIGTERM")
        return done
      })
  ).pipe(Effect.map(({ spawned }) => spawned))

/** One JSON log line as a process writes it. */
export interface LogLine {
  readonly message: string
  readonly level: string
  readonly cause?: string
}

/** The JSON log lines of `output` (lines that are not JSON are left out). */
export const logLines = (output: string): ReadonlyArray<LogLine> =>
  output.split("\n").flatMap((line) => {
    try {
      const parsed: unknown = JSON.parse(line)
      return typeof parsed === "object" && parsed !== null && "message" in parsed && "level" in parsed
        ? [{
          message: String(parsed.message),
          level: String(parsed.level),
          ...("cause" in parsed && parsed.cause !== undefined ? { cause: String(parsed.cause) } : {})
        }]
        : []
    } catch {
      return []
    }
  })

/** Waits until `check` holds of the output (fails after `deadlineMs`, with the output). */
export const waitForOutput = (spawned: Spawned, what: string, check: (output: string) => boolean, deadlineMs = 20_000) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (!check(spawned.output())) {
      if (spawned.exited()) return yield* Effect.die(new Error(`exited before ${what}:\n${spawned.output()}`))
      if (Date.now() - started > deadlineMs) return yield* Effect.die(new Error(`not within ${deadlineMs} ms: ${what}:\n${spawned.output()}`))
      yield* Effect.sleep("50 millis")
    }
  })

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** GET (or `init`) `url` within `timeoutMs`: the answer, "no answer" when the time-out passed, "refused" when nothing listens. */
export const request = (url: string, timeoutMs: number, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<Answer | "no answer" | "refused"> => {
    try {
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) })
      return { status: response.status, headers: response.headers, text: await response.text() }
    } catch (error) {
      return error instanceof Error && error.name === "TimeoutError" ? "no answer" : "refused"
    }
  })

/** Provides a SqlClient on `url` (superuser) to `self`. */
export const onDatabase = <A, E>(url: string, self: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(self, Layer.orDie(Sql.layer({ url, maxConnections: 1, applicationName: "test-states" })))
