/**
 * Every process a run starts besides PostgreSQL: servers under test, anchors,
 * the sql-only loop. Each is scoped: it is stopped (SIGTERM, then SIGKILL
 * after a grace period) when its scope closes, whether the run finished,
 * failed or was interrupted by Ctrl-C. Output goes to a log file, so a chatty
 * server costs the harness nothing and a failing one can be read afterwards.
 */
import { Data, Duration, Effect, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { onServerCore, type Placement } from "./Machine.ts"

export class BenchError extends Data.TaggedError("BenchError")<{ readonly message: string }> {}

export const benchError = (message: string) => new BenchError({ message })

const STOP_GRACE_MS = 5_000
const READY_TIMEOUT = Duration.seconds(30)

export interface Started {
  readonly name: string
  readonly pid: number
  readonly logFile: string
  readonly child: ChildProcess
}

export interface Server extends Started {
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string
  /** Resident set (MiB) once it answered. */
  readonly readyRssMiB: number | undefined
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null

const waitForExit = (child: ChildProcess, ms: number): Promise<boolean> =>
  new Promise((resolve) => {
    if (exited(child)) return resolve(true)
    const timer = setTimeout(() => resolve(false), ms)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve(true)
    })
  })

const stop = (child: ChildProcess) =>
  Effect.promise(async () => {
    if (exited(child)) return
    child.kill("SIGTERM")
    if (await waitForExit(child, STOP_GRACE_MS)) return
    child.kill("SIGKILL")
    await waitForExit(child, STOP_GRACE_MS)
  })

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

/** Starts `script` on the server core; stopped when the scope closes. */
export const start = (options: StartOptions): Effect.Effect<Started, BenchError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        Fs.mkdirSync(options.logDir, { recursive: true })
        const logFile = Path.join(options.logDir, `${options.name}.log`)
        const fd = Fs.openSync(logFile, "w")
        const { command, args } = onServerCore(options.placement, [
          process.execPath,
          ...(options.nodeFlags ?? []),
          options.script
        ])
        try {
          const child = spawn(command, args, {
            stdio: options.ipc === true ? ["ignore", fd, fd, "ipc"] : ["ignore", fd, fd],
            env: { ...process.env, ...options.env }
          })
          if (child.pid === undefined) throw new Error(`could not start ${options.name}`)
          return { name: options.name, pid: child.pid, logFile, child }
        } finally {
          Fs.closeSync(fd)
        }
      },
      catch: (error) => benchError(`cannot start ${options.name}: ${error instanceof Error ? error.message : String(error)}`)
    }),
    (started) => stop(started.child)
  )

/** Polls `baseUrl + readyPath` until it answers (any status), the process exits, or 30 s pass. */
const waitUntilAnswering = (started: Started, url: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + Duration.toMillis(READY_TIMEOUT)
    while (Date.now() < deadline) {
      if (exited(started.child)) {
        return yield* benchError(`${started.name} exited during start:\n${logTail(started.logFile)}`)
      }
      const answered = yield* Effect.promise(() =>
        fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
          async (response) => {
            await response.arrayBuffer()
            return true
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
  options: StartOptions & { readonly port: number; readonly readyPath: string }
): Effect.Effect<Server, BenchError, Scope.Scope> =>
  Effect.gen(function*() {
    const started = yield* start({
      ...options,
      env: { ...options.env, PORT: String(options.port), HOST: "127.0.0.1" }
    })
    const baseUrl = `http://127.0.0.1:${options.port}`
    yield* waitUntilAnswering(started, baseUrl + options.readyPath)
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
    const cleanup = () => {
      started.child.off("message", onMessage)
      started.child.off("exit", onExit)
    }
    started.child.on("message", onMessage)
    started.child.on("exit", onExit)
    if (send !== undefined) started.child.send(send)
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
