/**
 * `npm start` (CONTRACT "Commands"): the whole service on one machine.
 *
 * 1. DATABASE_URL, or, when unset, the embedded PostgreSQL with its data in
 *    .data/postgres (kept between runs);
 * 2. migrations;
 * 3. on an empty database (no schools) the demo school, whose keys and owner
 *    login are printed with a first curl; otherwise how to get keys;
 * 4. the API and the dispatcher as two child processes (their output
 *    forwarded), until Ctrl-C / SIGTERM: both are stopped, then the embedded
 *    PostgreSQL, and the exit code is 0 (also when the process that started
 *    us goes away). A child that dies on its own stops everything with a
 *    non-zero exit code.
 */
import * as DatabaseProvider from "@school/persistence/DatabaseProvider"
import { seedDemo } from "@school/persistence/DemoSeed"
import { runMain } from "@school/persistence/Main"
import { runMigrations } from "@school/persistence/Migrations"
import { type LogFormat, Settings } from "@school/persistence/Settings"
import * as Sql from "@school/persistence/Sql"
import { Effect, Option, Runtime, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type ChildProcess, spawn } from "node:child_process"
import * as Net from "node:net"
import { fileURLToPath } from "node:url"

const script = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const CHILDREN = [
  { name: "api", script: script("../../api/src/main.ts") },
  { name: "dispatcher", script: script("../../dispatcher/src/main.ts") }
] as const
const STOP_GRACE_MS = 15_000

/** A child process ended while the service was running. */
class ChildExited extends Schema.TaggedError<ChildExited>()("ChildExited", {
  name: Schema.String,
  code: Schema.NullOr(Schema.Number),
  signal: Schema.NullOr(Schema.String)
}) {
  override readonly [Runtime.errorReported] = false
  override get message(): string {
    const how = this.signal !== null ? `was killed by ${this.signal}` : `exited with code ${this.code ?? "?"}`
    return `the ${this.name} process ${how}; stopping the service`
  }
}

// ---------------------------------------------------------------------------
// Database: migrated, seeded when empty
// ---------------------------------------------------------------------------

interface Prepared {
  readonly demo: Option.Option<{
    readonly owner: { readonly email: string; readonly password: string }
    readonly keys: { readonly read: string; readonly write: string }
  }>
}

const prepare = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* DatabaseProvider.checkConnection(url)
    yield* Effect.orDie(runMigrations)
    const [row] = yield* sql<{ empty: boolean }>`SELECT NOT EXISTS (SELECT 1 FROM schools) AS empty`.pipe(Effect.orDie)
    if (row?.empty !== true) return { demo: Option.none() } satisfies Prepared
    yield* Effect.logInfo("empty database: seeding the demo school")
    const demo = yield* seedDemo()
    return { demo: Option.some(demo) } satisfies Prepared
  }).pipe(
    // Our own pool is closed before the children start.
    Effect.provide(Sql.layer({ url, maxConnections: 2, applicationName: "school-start" })),
    Effect.catchTag("SqlError", (error) =>
      Effect.fail(new DatabaseProvider.DatabaseStartError({ message: `cannot use the database: ${error.message}` })))
  )

// ---------------------------------------------------------------------------
// The banner
// ---------------------------------------------------------------------------

const banner = (options: {
  readonly baseUrl: string
  readonly localUrl: string
  readonly database: string
  readonly prepared: Prepared
}): string => {
  const lines = ["", "School service is up.", "", `  Public API   ${options.baseUrl}`, `  Database     ${options.database}`]
  Option.match(options.prepared.demo, {
    onSome: (demo) =>
      lines.push(
        "",
        "  Demo school (plan pro), seeded because the database was empty:",
        `  Read key     ${demo.keys.read}`,
        `  Write key    ${demo.keys.write}`,
        `  Owner login  ${demo.owner.email} / ${demo.owner.password}`,
        "",
        "  Try:",
        `    curl -H "Authorization: Bearer ${demo.keys.read}" "${options.localUrl}/students?per_page=2"`
      ),
    onNone: () =>
      lines.push(
        "",
        "  The database already has schools; their keys are not shown again.",
        "  For a new demo school and its read and write keys:",
        "    npm run cli -- demo seed"
      )
  })
  lines.push("", "  Ctrl-C stops everything.", "")
  return lines.join("\n")
}

/** The URL a local curl can use: a wildcard listen address is reached on loopback. */
const localHost = (host: string) =>
  host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host

/** The database for the banner, without its password. */
const describeDatabase = (database: DatabaseProvider.Database) =>
  database.origin === "embedded"
    ? `embedded PostgreSQL on ${DatabaseProvider.describeUrl(database.url)}, data in .data/postgres`
    : DatabaseProvider.describeUrl(database.url)

// ---------------------------------------------------------------------------
// Children
// ---------------------------------------------------------------------------

/** Forwards a child's output line by line; pretty logs get the child's name in front. */
const forward = (from: NodeJS.ReadableStream | null, to: NodeJS.WriteStream, prefix: string) => {
  if (from === null) return
  let pending = ""
  from.setEncoding("utf8")
  from.on("data", (chunk: string) => {
    const text = pending + chunk
    const end = text.lastIndexOf("\n")
    if (end === -1) {
      pending = text
      return
    }
    pending = text.slice(end + 1)
    to.write(text.slice(0, end + 1).split("\n").slice(0, -1).map((line) => `${prefix}${line}\n`).join(""))
  })
  from.on("end", () => {
    if (pending !== "") to.write(`${prefix}${pending}\n`)
  })
}

const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null

const waitForExit = (child: ChildProcess, ms: number): Promise<boolean> =>
  new Promise((resolve) => {
    if (hasExited(child)) return resolve(true)
    const timer = setTimeout(() => resolve(false), ms)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve(true)
    })
  })

/** SIGTERM, then SIGKILL if it has not finished in time. */
const stopChild = (name: string, child: ChildProcess) =>
  Effect.promise(async () => {
    if (hasExited(child)) return
    child.kill("SIGTERM")
    if (await waitForExit(child, STOP_GRACE_MS)) return
    child.kill("SIGKILL")
    await waitForExit(child, 5_000)
  }).pipe(Effect.andThen(Effect.logDebug(`${name} stopped`)))

/**
 * A child process running `script` with the given environment, stopped when
 * the scope closes. Its own process group: a terminal Ctrl-C reaches only us,
 * and we stop the children in order.
 */
const startChild = (name: string, path: string, env: NodeJS.ProcessEnv, logFormat: LogFormat) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [path], { env, stdio: ["ignore", "pipe", "pipe"], detached: true })
      const prefix = logFormat === "pretty" ? `[${name}] ` : ""
      forward(child.stdout, process.stdout, prefix)
      forward(child.stderr, process.stderr, prefix)
      // Safety net: if this process exits without closing the scope, the child goes too.
      const onExit = () => {
        if (!hasExited(child)) child.kill("SIGTERM")
      }
      process.on("exit", onExit)
      child.once("exit", () => process.removeListener("exit", onExit))
      return child
    }),
    (child) => stopChild(name, child)
  ).pipe(Effect.map((child) => ({ name, child })))

/** Fails when the child exits (it never should while the service runs). */
const exited = (running: { readonly name: string; readonly child: ChildProcess }) =>
  Effect.callback<never, ChildExited>((resume) => {
    const fail = (code: number | null, signal: string | null) =>
      resume(Effect.fail(new ChildExited({ name: running.name, code, signal })))
    if (hasExited(running.child)) return fail(running.child.exitCode, running.child.signalCode)
    running.child.once("exit", fail)
    running.child.once("error", () => fail(null, null))
  })

/** Resolves once something accepts connections on host:port. */
const listening = (host: string, port: number) =>
  Effect.callback<void, Error>((resume) => {
    const socket = Net.connect({ host, port })
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.void)
    })
    socket.once("error", (error) => {
      socket.destroy()
      resume(Effect.fail(error))
    })
  }).pipe(Effect.retry(Schedule.spaced("100 millis")), Effect.orDie)

/**
 * Completes when the process that started us is gone. `npm start` runs us
 * under `sh -c`; a SIGTERM to npm kills that shell, not us, and we are
 * re-parented: that is a stop request too.
 */
const parentGone = Effect.gen(function*() {
  const parent = process.ppid
  while (process.ppid === parent) yield* Effect.sleep("500 millis")
  yield* Effect.logInfo("the process that started npm start is gone: stopping")
})

// ---------------------------------------------------------------------------

const program = Effect.gen(function*() {
  const settings = yield* Settings
  const database = yield* DatabaseProvider.forService(settings.databaseUrl, {
    verbose: settings.logLevel === "Debug" || settings.logLevel === "Trace" || settings.logLevel === "All"
  })
  const prepared = yield* prepare(database.url)

  const host = localHost(settings.host)
  const baseUrl = `http://${settings.host.includes(":") ? `[${settings.host}]` : settings.host}:${settings.port}/api/public/v1`
  const localUrl = `http://${host}:${settings.port}/api/public/v1`

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: database.url,
    // The children write to our pipes: keep the format this process chose.
    LOG_FORMAT: settings.logFormat
  }
  const children = yield* Effect.forEach(CHILDREN, (child) => startChild(child.name, child.script, env, settings.logFormat))
  const anyExited = Effect.raceAllFirst(children.map(exited))

  // The banner comes once the API answers, after the children's start-up lines.
  yield* Effect.raceFirst(listening(host, settings.port), anyExited)
  yield* Effect.sync(() =>
    process.stdout.write(banner({ baseUrl, localUrl, database: describeDatabase(database), prepared }))
  )
  // Runs until a signal interrupts it, a child dies, or our parent goes.
  yield* Effect.raceFirst(anyExited, parentGone)
}).pipe(
  Effect.scoped,
  Effect.tapErrorTag("ChildExited", (error) => Effect.sync(() => process.stderr.write(`error: ${error.message}\n`))),
  Effect.provide(Settings.layerWithLogging)
)

runMain(program)
