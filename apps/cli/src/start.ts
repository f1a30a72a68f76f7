/**
 * `npm start` (docs/operations.md "Commands"): the whole service on one machine.
 *
 * 1. DATABASE_URL, or, when unset, the embedded PostgreSQL with its data in
 *    DATA_DIR (default .data/postgres, kept between runs);
 * 2. migrations;
 * 3. on an empty database (no schools) the demo school, whose keys and owner
 *    login are printed with a first curl; otherwise how to get keys;
 * 4. the API and the dispatcher as two child processes (their output
 *    forwarded), until Ctrl-C / SIGTERM: both are stopped, then the embedded
 *    PostgreSQL, and the exit code is 0 (also when the process that started
 *    us goes away). A child that dies on its own stops everything with a
 *    non-zero exit code; so does the embedded PostgreSQL we started
 *    (docs/operations.md "Database away": one line saying so, exit 1, rather
 *    than an API answering 503 forever or a restart that hides a crash loop).
 */
import { type Database, DatabaseExited } from "@school/local-postgres/Database"
import { forService } from "@school/local-postgres/DatabaseProvider"
import { seedDemo } from "@school/persistence/DemoSeed"
import { anySchool } from "@school/persistence/Schools"
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import * as ChildProcesses from "@school/runtime/ChildProcesses"
import { checkConnection, DatabaseStartError, describeUrl } from "@school/runtime/DatabaseConnection"
import { NODE_FLAGS } from "@school/runtime/NodeFlags"
import { isVerbose, type LogFormat } from "@school/runtime/Logging"
import { runMain } from "@school/runtime/Main"
import { hashPassword } from "@school/runtime/Passwords"
import * as Settings from "@school/runtime/Settings"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Http from "node:http"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { CliSettings } from "./CliSettings.ts"
import { DATA_DIR } from "./Database.ts"

const script = (path: string) => fileURLToPath(new URL(path, import.meta.url))
// The sources, not the bundles `npm run start:api` runs (apps/cli/src/build.ts): a local run
// picks up an edit without a build, and an install without devDependencies has no bundler.
const CHILDREN = [
  { name: "api", script: script("../../api/src/main.ts") },
  { name: "dispatcher", script: script("../../dispatcher/src/main.ts") }
] as const

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
    yield* checkConnection(url)
    yield* Effect.orDie(runMigrations)
    if (yield* anySchool) return { demo: Option.none() } satisfies Prepared
    yield* Effect.logInfo("empty database: seeding the demo school")
    const demo = yield* seedDemo(hashPassword)
    return { demo: Option.some(demo) } satisfies Prepared
  }).pipe(
    // Our own pool is closed before the children start.
    Effect.provide(Sql.layer({ url, maxConnections: 2, applicationName: "school-start" })),
    Effect.catchTag("SqlError", (error) =>
      Effect.fail(new DatabaseStartError({ message: `cannot use the database: ${error.message}` })))
  )

// ---------------------------------------------------------------------------
// The banner
// ---------------------------------------------------------------------------

/** A path as short as it is clear: relative to where we were started from when it lies below it. */
const shown = (path: string) => {
  const relative = Path.relative(process.cwd(), path)
  return relative !== "" && !relative.startsWith("..") && !Path.isAbsolute(relative) ? relative : path
}

/**
 * The database's lines. The embedded one is local and its password fixed, so
 * its full DATABASE_URL is shown (for `npm run migrate`, `start:api`, psql);
 * a given DATABASE_URL is shown without its password.
 */
const databaseLines = (database: Database): ReadonlyArray<string> =>
  database.origin === "embedded"
    ? [
      `  Database     embedded PostgreSQL, data in ${shown(database.dataDir ?? "?")}`,
      ...(database.dataDirNote === undefined ? [] : [`               (${database.dataDirNote})`]),
      `  DATABASE_URL ${database.url}`
    ]
    : [`  Database     ${describeUrl(database.url)} (DATABASE_URL)`]

const banner = (options: {
  readonly baseUrl: string
  readonly localUrl: string
  /** The back-office web panel, as a browser on this machine reaches it. */
  readonly panelUrl: string
  readonly database: Database
  readonly prepared: Prepared
}): string => {
  const lines = [
    "",
    "School service is up.",
    "",
    `  Public API   ${options.baseUrl}`,
    `  Web panel    ${options.panelUrl} (the school's staff sign in here)`,
    ...databaseLines(options.database)
  ]
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

// ---------------------------------------------------------------------------
// Children
// ---------------------------------------------------------------------------

/** Each line of a child's output, written on as it came; pretty logs get the child's name in front. */
const forwardTo = (to: NodeJS.WriteStream, prefix: string): ChildProcesses.Output => ({
  lines: (line) => to.write(`${prefix}${line}\n`)
})

/**
 * A child process running `script` with the given environment, stopped
 * (SIGTERM, then SIGKILL) when the scope closes. Its own process group: a
 * terminal Ctrl-C reaches only us, and we stop the children in order.
 */
const startChild = (name: keyof typeof NODE_FLAGS, path: string, env: NodeJS.ProcessEnv, logFormat: LogFormat) => {
  const prefix = logFormat === "pretty" ? `[${name}] ` : ""
  return ChildProcesses.spawn({
    name,
    command: process.execPath,
    args: [...NODE_FLAGS[name], path],
    env,
    processGroup: true,
    stdout: forwardTo(process.stdout, prefix),
    stderr: forwardTo(process.stderr, prefix)
  })
}

/**
 * Resolves once the API answers its own liveness route (`GET /health/live`
 * → 200 `{"status":"ok"}`), each probe bounded by a second: a port that
 * merely accepts connections may be someone else's, so it does not count.
 */
const apiAnswers = (host: string, port: number) =>
  Effect.callback<void, Error>((resume) => {
    const request = Http.get({ host, port, path: "/health/live", timeout: 1_000 }, (response) => {
      let body = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (body += chunk))
      response.on("end", () =>
        resume(
          response.statusCode === 200 && body.includes('"status":"ok"')
            ? Effect.void
            : Effect.fail(new Error(`not the API: ${response.statusCode}`))
        ))
      response.on("error", (error) => resume(Effect.fail(error)))
    })
    request.once("timeout", () => request.destroy(new Error("no answer within 1 s")))
    request.once("error", (error) => resume(Effect.fail(error)))
    return Effect.sync(() => request.destroy())
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
  const listen = { host: yield* Settings.HOST, port: yield* Settings.PORT }
  const logFormat = yield* Settings.LOG_FORMAT
  const database = yield* forService(yield* Settings.DATABASE_URL, {
    dataDir: yield* DATA_DIR,
    verbose: isVerbose(yield* Settings.LOG_LEVEL)
  })
  const prepared = yield* prepare(database.url)

  const host = localHost(listen.host)
  const baseUrl = `http://${listen.host.includes(":") ? `[${listen.host}]` : listen.host}:${listen.port}/api/public/v1`
  const localUrl = `http://${host}:${listen.port}/api/public/v1`
  const panelUrl = `http://${host}:${listen.port}/crm`

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: database.url,
    // The children write to our pipes: keep the format this process chose.
    LOG_FORMAT: logFormat
  }
  const children = yield* Effect.forEach(CHILDREN, (child) => startChild(child.name, child.script, env, logFormat))
  const databaseExited = database.exited === undefined
    ? Effect.never
    : Effect.flatMap(database.exited, ({ code, signal }) =>
      Effect.fail(new DatabaseExited({ dataDir: database.dataDir ?? "?", code, signal })))
  const anyExited = Effect.raceAllFirst([...children.map(ChildProcesses.failOnExit), databaseExited])

  // The banner comes once the API answers, after the children's start-up lines.
  yield* Effect.raceFirst(apiAnswers(host, listen.port), anyExited)
  yield* Effect.sync(() => process.stdout.write(banner({ baseUrl, localUrl, panelUrl, database, prepared })))
  // Runs until a signal interrupts it, a child or the embedded PostgreSQL dies, or our parent goes.
  yield* Effect.raceFirst(anyExited, parentGone)
}).pipe(
  Effect.scoped,
  Effect.provide(Settings.layer(CliSettings))
)

runMain(program)
