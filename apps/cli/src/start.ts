/**
 * `npm start` (docs/operations.md "Commands"): the whole service on one machine.
 *
 * 0. Before it starts anything, the ports its children will listen on
 *    (PORT, DISPATCHER_PORT unless 0, METRICS_PORT when set) must be free
 *    on HOST: one taken (a first `npm start` still running) is one line
 *    naming it and suggesting free ones (`PORT=3002 npm start`), exit 1.
 *    The embedded PostgreSQL takes a free port of its own (never a fixed one);
 * 1. DATABASE_URL, or, when unset, the embedded PostgreSQL with its data in
 *    DATA_DIR (default .data/postgres, kept between runs);
 * 2. migrations;
 * 3. on an empty database (no schools) the demo school, whose keys and owner
 *    login are printed with a first curl; otherwise how to get keys;
 * 4. the API and the dispatcher as two child processes (their output
 *    forwarded; in JSON lines each says its `service`), and the banner once
 *    both have said they listen (over IPC, libs/runtime/src/Listening.ts:
 *    a port that answers may be another process's; METRICS_PORT is the
 *    API's, the dispatcher's /metrics stays on DISPATCHER_PORT), until
 *    Ctrl-C / SIGTERM: both are stopped, then the embedded
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
import * as Listening from "@school/runtime/Listening"
import { NODE_FLAGS, PROCESS_ENV } from "@school/runtime/NodeFlags"
import { isVerbose, type LogFormat } from "@school/runtime/Logging"
import { runMain } from "@school/runtime/Main"
import { hashPassword } from "@school/runtime/Passwords"
import { cannotListen } from "@school/runtime/Ports"
import { AlreadyLogged } from "@school/runtime/Reported"
import * as Settings from "@school/runtime/Settings"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Net from "node:net"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { CliSettings } from "./CliSettings.ts"
import { DATA_DIR } from "./Database.ts"

const script = (path: string) => fileURLToPath(new URL(path, import.meta.url))
// The sources, not the bundles `npm run start:api` runs (apps/cli/src/build.ts): a local run
// picks up an edit without a build, and an install without devDependencies has no bundler.
const API = script("../../api/src/main.ts")
const DISPATCHER = script("../../dispatcher/src/main.ts")

// ---------------------------------------------------------------------------
// Ports: free before anything starts
// ---------------------------------------------------------------------------

/** A port a child will listen on, and the setting that names it. */
interface Wanted {
  readonly setting: string
  readonly port: number
}

/** Why `host:port` cannot be listened on now (the system's error), or undefined when it can. */
const listenError = (host: string, port: number) =>
  Effect.callback<NodeJS.ErrnoException | undefined>((resume) => {
    const server = Net.createServer()
    server.once("error", (error: NodeJS.ErrnoException) => resume(Effect.succeed(error)))
    server.listen({ host, port, exclusive: true }, () => server.close(() => resume(Effect.succeed(undefined))))
  })

/** The first port from `after + 1` on that is free on `host` and not in `avoid` (at most 100 tried). */
const freeAfter = (host: string, after: number, avoid: Set<number>) =>
  Effect.gen(function*() {
    for (let port = after + 1; port <= Math.min(after + 100, 65535); port++) {
      if (avoid.has(port)) continue
      if ((yield* listenError(host, port)) === undefined) return Option.some(port)
    }
    return Option.none<number>()
  })

/** "a, b and c". */
const listed = (items: ReadonlyArray<string>): string =>
  items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`

/** Logs `message` as the one error line of a failed start and stops with exit 1. */
const stopWith = (message: string) => Effect.andThen(Effect.logError(message), Effect.fail(new AlreadyLogged({ message })))

/**
 * Every port in `wanted` can be listened on, on `host`, before anything
 * starts (docs/operations.md "npm start"); otherwise one error line and
 * exit 1: the same port named twice; the ports in use (another `npm start`,
 * most likely) with a free one suggested for each (`PORT=3002 npm start`);
 * any other refusal as `start:api` would report it (`Ports.cannotListen`).
 */
const checkPorts = (host: string, wanted: ReadonlyArray<Wanted>) =>
  Effect.gen(function*() {
    for (const [i, one] of wanted.entries()) {
      const other = wanted.slice(0, i).find((earlier) => earlier.port === one.port)
      if (other !== undefined) {
        return yield* stopWith(`${other.setting} and ${one.setting} are both ${one.port}: each listener needs a port of its own`)
      }
    }
    const taken: Array<Wanted> = []
    for (const one of wanted) {
      const error = yield* listenError(host, one.port)
      if (error === undefined) continue
      if (error.code !== "EADDRINUSE") return yield* cannotListen({ host, port: one.port, setting: one.setting, cause: error })
      taken.push(one)
    }
    if (taken.length === 0) return
    const avoid = new Set(wanted.map((one) => one.port))
    const suggested: Array<string> = []
    for (const one of taken) {
      const free = yield* freeAfter(host, one.port, avoid)
      if (Option.isSome(free)) avoid.add(free.value)
      suggested.push(`${one.setting}=${Option.getOrElse(Option.map(free, String), () => "<a free port>")}`)
    }
    const address = host.includes(":") ? `[${host}]` : host
    const ports = listed(taken.map((one) => `${one.port} (${one.setting})`))
    return yield* stopWith(
      `${taken.length === 1 ? "port" : "ports"} ${ports} on ${address} ${taken.length === 1 ? "is" : "are"} already in use ` +
        `(is npm start already running?); to run another, choose ${taken.length === 1 ? "a free port" : "free ports"}: ` +
        `${suggested.join(" ")} npm start`
    )
  })

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
  /** Where each process serves `/metrics`, as the children reported their ports. */
  readonly metricsUrls: { readonly api: string; readonly dispatcher: string }
  readonly database: Database
  readonly prepared: Prepared
  /** WEBHOOK_ALLOW_INSECURE_URLS: whether the panel accepts http:// and loopback receivers. */
  readonly localReceivers: boolean
}): string => {
  const lines = [
    "",
    "School service is up.",
    "",
    `  Public API   ${options.baseUrl}`,
    `  Web panel    ${options.panelUrl} (the school's staff sign in here)`,
    `  Metrics      ${options.metricsUrls.api} (API), ${options.metricsUrls.dispatcher} (dispatcher)`,
    `  Webhooks     local receivers (http://, loopback) ${
      options.localReceivers ? "allowed (WEBHOOK_ALLOW_INSECURE_URLS=true)" : "refused: use npm run cli -- webhooks listen"
    }`,
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
 * terminal Ctrl-C reaches only us, and we stop the children in order. Its
 * IPC channel carries what it announces (libs/runtime/src/Listening.ts),
 * watched from the moment it is spawned.
 */
const startChild = (name: keyof typeof NODE_FLAGS, path: string, env: NodeJS.ProcessEnv, logFormat: LogFormat) =>
  Effect.gen(function*() {
    const prefix = logFormat === "pretty" ? `[${name}] ` : ""
    const child = yield* ChildProcesses.spawn({
      name,
      command: process.execPath,
      args: [...NODE_FLAGS[name], path],
      env: { ...env, ...PROCESS_ENV },
      processGroup: true,
      ipc: true,
      stdout: forwardTo(process.stdout, prefix),
      stderr: forwardTo(process.stderr, prefix)
    })
    return { child, ...(yield* Listening.watch(child)) }
  })

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
  const dispatcherPort = yield* Settings.DISPATCHER_PORT
  const metricsPort = yield* Settings.METRICS_PORT
  yield* checkPorts(listen.host, [
    { setting: "PORT", port: listen.port },
    // 0: the dispatcher takes any free port.
    ...(dispatcherPort === 0 ? [] : [{ setting: "DISPATCHER_PORT", port: dispatcherPort }]),
    ...Option.match(metricsPort, { onNone: () => [], onSome: (port) => [{ setting: "METRICS_PORT", port }] })
  ])
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
  // METRICS_PORT is the API's: the dispatcher keeps its /metrics on DISPATCHER_PORT, which is not public.
  const { METRICS_PORT: _apiOnly, ...dispatcherEnv } = env
  const api = yield* startChild("api", API, env, logFormat)
  const dispatcher = yield* startChild("dispatcher", DISPATCHER, dispatcherEnv, logFormat)
  const databaseExited = database.exited === undefined
    ? Effect.never
    : Effect.flatMap(database.exited, ({ code, signal }) =>
      Effect.fail(new DatabaseExited({ dataDir: database.dataDir ?? "?", code, signal })))
  const anyExited = Effect.raceAllFirst([
    ChildProcesses.failOnExit(api.child),
    ChildProcesses.failOnExit(dispatcher.child),
    databaseExited
  ])

  // The banner comes once both children say they listen (not a probe of the port: a first
  // npm start would answer it).
  const ports = yield* Effect.raceFirst(
    Effect.all({
      api: api.listening("api"),
      metrics: Option.isSome(metricsPort) ? api.listening("metrics") : api.listening("api"),
      dispatcher: dispatcher.listening("dispatcher")
    }, { concurrency: "unbounded" }),
    anyExited
  )
  const metricsUrls = {
    api: `http://${host}:${ports.metrics}/metrics`,
    dispatcher: `http://${host}:${ports.dispatcher}/metrics`
  }
  const localReceivers = yield* Settings.WEBHOOK_ALLOW_INSECURE_URLS
  yield* Effect.sync(() =>
    process.stdout.write(banner({ baseUrl, localUrl, panelUrl, metricsUrls, database, prepared, localReceivers }))
  )
  // Runs until a signal interrupts it, a child or the embedded PostgreSQL dies, or our parent goes.
  yield* Effect.raceFirst(anyExited, parentGone)
}).pipe(
  Effect.scoped,
  // npm start reads the ports of its children too, to check them before it starts anything.
  Effect.provide(Settings.layer([...CliSettings, Settings.DISPATCHER_PORT, Settings.METRICS_PORT], "cli"))
)

runMain(program)
