/**
 * Every process a run starts besides PostgreSQL: servers under test, anchors,
 * the sql-only loop. Each is scoped (`ChildProcesses` from @school/runtime):
 * it is stopped (SIGTERM, then SIGKILL after a grace period) when its scope
 * closes, whether the run finished, failed or was interrupted by Ctrl-C.
 * Output goes to a log file, so a chatty server costs the harness nothing
 * and a failing one can be read afterwards.
 */
import * as ChildProcesses from "@school/runtime/ChildProcesses"
import { Data, Duration, Effect, Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { onServerCore, type Placement } from "./Machine.ts"

export class BenchError extends Data.TaggedError("BenchError")<{ readonly message: string }> {}

export const benchError = (message: string) => new BenchError({ message })

const STOP_GRACE = Duration.seconds(5)
const READY_TIMEOUT = Duration.seconds(30)

export interface Started {
  readonly name: string
  readonly pid: number
  readonly logFile: string
  readonly child: ChildProcesses.Child
}

export interface Server extends Started {
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string
  /** Resident set (MiB) once it answered. */
  readonly readyRssMiB: number | undefined
}

/** The last lines of a log file, for error messages. */
export const logTail = (file: string, lines = 20): string => {
  try {
    return Fs.readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n")
  } catch {
    return "(no output)"
  }
}

export interface StartOptions {
  readonly name: string
  /** A TypeScript or JavaScript file run by this same Node binary… */
  readonly script: string
  /** … with these flags. */
  readonly nodeFlags?: ReadonlyArray<string>
  readonly env: Record<string, string>
  readonly placement: Placement
  readonly logDir: string
  /** Open a Node IPC channel (for processes driven by messages, e.g. sql-only). */
  readonly ipc?: boolean
}

const openLog = (logFile: string, logDir: string) =>
  Effect.try({
    try: () => {
      Fs.mkdirSync(logDir, { recursive: true })
      return Fs.openSync(logFile, "w")
    },
    catch: (error) => benchError(`cannot open ${logFile}: ${error instanceof Error ? error.message : String(error)}`)
  })

/**
 * With BENCH_CPU_PROFILE set to a directory, every process the bench starts writes a V8 CPU
 * profile there when it stops (`<name>-….cpuprofile`), for finding where a scenario's CPU goes.
 */
const profileFlags = (name: string): ReadonlyArray<string> => {
  const directory = process.env["BENCH_CPU_PROFILE"]
  return directory === undefined || directory === ""
    ? []
    : ["--cpu-prof", `--cpu-prof-dir=${Path.resolve(directory)}`, `--cpu-prof-name=${name}-\${pid}.cpuprofile`]
}

/** Starts `script` on the server core; stopped when the scope closes. */
export const start = (options: StartOptions): Effect.Effect<Started, BenchError, Scope.Scope> =>
  Effect.gen(function*() {
    const logFile = Path.join(options.logDir, `${options.name}.log`)
    const { command, args } = onServerCore(options.placement, [
      process.execPath,
      ...(options.nodeFlags ?? []),
      ...profileFlags(options.name),
      options.script
    ])
    const child = yield* Effect.acquireUseRelease(
      openLog(logFile, options.logDir),
      (fd) =>
        ChildProcesses.spawn({
          name: options.name,
          command,
          args,
          env: { ...process.env, ...options.env },
          stdout: { fd },
          stderr: { fd },
          ipc: options.ipc === true,
          stop: [{ signal: "SIGTERM", grace: STOP_GRACE }]
        }).pipe(Effect.mapError((error) => benchError(error.message))),
      // The child has its own copy of the descriptor once it runs.
      (fd) => Effect.sync(() => Fs.closeSync(fd))
    )
    return { name: options.name, pid: child.pid, logFile, child }
  })

/**
 * Polls `baseUrl + readyPath` until it answers (any status, or `status` when
 * given), the process exits, or 30 s pass.
 */
const waitUntilAnswering = (started: Started, url: string, status?: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + Duration.toMillis(READY_TIMEOUT)
    while (Date.now() < deadline) {
      if (started.child.hasExited()) {
        return yield* benchError(`${started.name} exited during start:\n${logTail(started.logFile)}`)
      }
      const answered = yield* Effect.promise(() =>
        fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
          async (response) => {
            await response.arrayBuffer()
            return status === undefined || response.status === status
          },
          () => false
        )
      )
      if (answered) return
      yield* Effect.sleep("100 millis")
    }
    return yield* benchError(`${started.name} did not answer ${url} within 30 s:\n${logTail(started.logFile)}`)
  })

/** Starts an HTTP server script with `PORT`/`HOST` set and waits until it answers. */
export const startServer = (
  options: StartOptions & {
    readonly port: number
    readonly readyPath: string
    /** Wait for this status on `readyPath` (default: any answer). */
    readonly readyStatus?: number
  }
): Effect.Effect<Server, BenchError, Scope.Scope> =>
  Effect.gen(function*() {
    const started = yield* start({
      ...options,
      env: { ...options.env, PORT: String(options.port), HOST: "127.0.0.1" }
    })
    const baseUrl = `http://127.0.0.1:${options.port}`
    yield* waitUntilAnswering(started, baseUrl + options.readyPath, options.readyStatus)
    return { ...started, baseUrl, readyRssMiB: rssMiB(started.pid, "VmRSS") }
  })

/**
 * Peak resident set size of a process in MiB (`VmHWM`), or undefined when
 * /proc is not readable (not Linux, or the process is gone).
 */
export const peakRssMiB = (pid: number): number | undefined => rssMiB(pid, "VmHWM")

const rssMiB = (pid: number, field: "VmHWM" | "VmRSS"): number | undefined => {
  try {
    const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)
    return match?.[1] === undefined ? undefined : Math.round(Number(match[1]) / 1024 * 10) / 10
  } catch {
    return undefined
  }
}

/** A process driven over the Node IPC channel: one message out, one answer back. */
export interface IpcProcess extends Started {
  readonly ask: <A>(message: object) => Effect.Effect<A, BenchError>
}

/** The next message from the process; `send` goes out once the answer is being listened for. */
const nextMessage = <A>(started: Started, send?: object) =>
  Effect.callback<A, BenchError>((resume) => {
    const onMessage = (message: unknown) => {
      cleanup()
      resume(Effect.succeed(message as A))
    }
    const onExit = () => {
      cleanup()
      resume(Effect.fail(benchError(`${started.name} exited:\n${logTail(started.logFile)}`)))
    }
    const child = started.child.process
    const cleanup = () => {
      child.off("message", onMessage)
      child.off("exit", onExit)
    }
    child.on("message", onMessage)
    child.on("exit", onExit)
    if (send !== undefined) child.send(send)
    return Effect.sync(cleanup)
  })

/** Starts `script` with an IPC channel and waits for its first message (it is ready). */
export const startIpc = (options: StartOptions): Effect.Effect<IpcProcess, BenchError, Scope.Scope> =>
  Effect.gen(function*() {
    const started = yield* start({ ...options, ipc: true })
    yield* nextMessage<unknown>(started).pipe(
      Effect.timeoutOrElse({
        duration: READY_TIMEOUT,
        orElse: () => Effect.fail(benchError(`${started.name} was not ready within 30 s:\n${logTail(started.logFile)}`))
      })
    )
    return { ...started, ask: <A>(message: object) => nextMessage<A>(started, message) }
  })
