/**
 * Owns how a process runs other processes (docs/development.md "Runtime"):
 * `npm start`'s API and dispatcher, the embedded PostgreSQL with its initdb
 * and watchdog, the benchmark's servers. A child is bound to a Scope:
 *
 * - closing the scope stops it: its stop signals in turn (SIGTERM by
 *   default), each given its grace period, then SIGKILL, to its whole process
 *   group when it has one;
 * - `exited` completes when it has ended, however it ended (`failOnExit`
 *   turns that into a `ChildExited` failure for a child that must not end);
 * - if this process exits without closing the scope (`process.exit`, an
 *   uncaught error), the child gets its first stop signal on the way out;
 * - in its own process group (`processGroup`), a Ctrl-C on the terminal
 *   reaches only us, and we stop the children in the order we choose.
 *
 * Why not `effect/process` (`ChildProcess` with `NodeChildProcessSpawner`,
 * effect 4.1), which does process groups, pipes and SIGTERM-then-SIGKILL:
 * three needs here it cannot meet. It has no `uid`/`gid` (its spawner hands
 * Node only cwd, env, stdio, detached, shell and windowsHide), and the
 * embedded PostgreSQL must run as the `postgres` user when we are root; it
 * has no IPC channel, and the benchmark's sql-only loop is driven by
 * `process.send`; and its stdout/stderr cannot be a file descriptor, which is
 * how the benchmark sends a server's output straight to its log file so that
 * the harness does no work per log line. Its spawner also has no safety net
 * for an exit that skips the scope. So this module spawns with Node's
 * `child_process` and keeps the rest small.
 */
import type { Scope } from "effect"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as NodeChildProcess from "node:child_process"
import type { Readable } from "node:stream"

/** Where a child's stdout or stderr goes. */
export type Output =
  | "ignore"
  | "inherit"
  /** A file the caller opened (a log file). */
  | { readonly fd: number }
  /** Each line as it arrives (without its newline); the last one even without a newline. */
  | { readonly lines: (line: string) => void }

/** One step of stopping: send `signal`, wait up to `grace` for the exit. */
export interface StopStep {
  readonly signal: NodeJS.Signals
  readonly grace: Duration.Input
}

export interface SpawnOptions {
  /** For messages: "the api process exited with code 1". */
  readonly name: string
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  /** The whole environment (default: this process's). */
  readonly env?: NodeJS.ProcessEnv | undefined
  readonly cwd?: string | undefined
  /** Run as this user (needs root). */
  readonly user?: { readonly uid: number; readonly gid: number } | undefined
  /** Its own process group: a terminal's Ctrl-C does not reach it, the final SIGKILL reaches all of it. */
  readonly processGroup?: boolean | undefined
  readonly stdout?: Output | undefined
  readonly stderr?: Output | undefined
  /** A Node IPC channel (`Child.process.send`, `"message"` events). */
  readonly ipc?: boolean | undefined
  /** How it is stopped before SIGKILL; default SIGTERM with 15 s grace. */
  readonly stop?: ReadonlyArray<StopStep> | undefined
  /**
   * It may outlive this process (a watchdog): it does not keep us alive and
   * is not signalled when we exit; closing the scope still stops it.
   */
  readonly outlivesUs?: boolean | undefined
}

/** How a child ended: an exit code, or the signal that killed it. */
export interface Exited {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface Child {
  readonly name: string
  readonly pid: number
  /** Node's handle, for what this module does not wrap (IPC messages). */
  readonly process: NodeChildProcess.ChildProcess
  /** Completes once the child has ended and its output has been delivered. */
  readonly exited: Effect.Effect<Exited>
  readonly hasExited: () => boolean
  /** What closing its scope does; a no-op once it has ended. */
  readonly stop: Effect.Effect<void>
}

/** A child could not be started at all (no such binary, no permission). */
export class SpawnError extends Schema.TaggedError<SpawnError>()("SpawnError", {
  name: Schema.String,
  reason: Schema.String
}) {
  /** Its own report (`Reported.ts`). */
  override readonly [Runtime.errorReported] = false
  override get message(): string {
    return `cannot run ${this.name}: ${this.reason}`
  }
}

/** How a process ended, for a one-line report: "exited with code 1", "was killed by SIGKILL". */
export const howItEnded = (code: number | null, signal: string | null): string =>
  signal !== null ? `was killed by ${signal}` : `exited with code ${code ?? "?"}`

/** A child that must keep running ended. */
export class ChildExited extends Schema.TaggedError<ChildExited>()("ChildExited", {
  name: Schema.String,
  code: Schema.NullOr(Schema.Number),
  signal: Schema.NullOr(Schema.String)
}) {
  /** Its own report (`Reported.ts`). */
  override readonly [Runtime.errorReported] = false
  override get message(): string {
    return `the ${this.name} process ${howItEnded(this.code, this.signal)}`
  }
}

const DEFAULT_STOP: ReadonlyArray<StopStep> = [{ signal: "SIGTERM", grace: Duration.seconds(15) }]
const KILL: StopStep = { signal: "SIGKILL", grace: Duration.seconds(5) }

const stdio = (output: Output | undefined): "ignore" | "inherit" | "pipe" | number =>
  output === undefined || output === "ignore"
    ? "ignore"
    : output === "inherit"
    ? "inherit"
    : "fd" in output
    ? output.fd
    : "pipe"

/** Calls `onLine` for each line of `stream`. */
const eachLine = (stream: Readable | null, output: Output | undefined) => {
  if (stream === null || output === undefined || typeof output === "string" || !("lines" in output)) return
  let pending = ""
  stream.setEncoding("utf8")
  stream.on("data", (chunk: string) => {
    const lines = (pending + chunk).split("\n")
    pending = lines.pop() ?? ""
    for (const line of lines) output.lines(line)
  })
  stream.on("end", () => {
    if (pending !== "") output.lines(pending)
    pending = ""
  })
}

const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** Starts the child; succeeds once it runs, fails if it cannot be started. */
const start = (options: SpawnOptions): Effect.Effect<Child, SpawnError> =>
  Effect.callback<Child, SpawnError>((resume) => {
    const fail = (error: unknown) => resume(Effect.fail(new SpawnError({ name: options.name, reason: describe(error) })))
    let child: NodeChildProcess.ChildProcess
    try {
      child = NodeChildProcess.spawn(options.command, [...(options.args ?? [])], {
        env: options.env ?? process.env,
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        ...(options.user === undefined ? {} : { uid: options.user.uid, gid: options.user.gid }),
        detached: options.processGroup === true || options.outlivesUs === true,
        stdio: ["ignore", stdio(options.stdout), stdio(options.stderr), ...(options.ipc === true ? ["ipc" as const] : [])]
      })
    } catch (error) {
      return fail(error)
    }
    const closed = Deferred.makeUnsafe<Exited>()
    child.once("close", (code, signal) => Deferred.doneUnsafe(closed, Exit.succeed({ code, signal })))
    eachLine(child.stdout, options.stdout)
    eachLine(child.stderr, options.stderr)
    child.once("error", fail)
    child.once("spawn", () => {
      child.off("error", fail)
      // Later errors (a signal or a message that could not be sent) change nothing: the exit tells.
      child.on("error", () => {})
      resume(Effect.succeed(supervise(child, options, Deferred.await(closed))))
    })
    // Interrupted before it ran: nobody will stop it later.
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const supervise = (
  child: NodeChildProcess.ChildProcess,
  options: SpawnOptions,
  exited: Effect.Effect<Exited>
): Child => {
  const pid = child.pid ?? 0
  const hasExited = () => child.exitCode !== null || child.signalCode !== null
  const steps = options.stop ?? DEFAULT_STOP
  /** Stop signals go to the child itself (it stops what it started); SIGKILL to its whole group. */
  const signal = (name: NodeJS.Signals) => {
    if (hasExited()) return
    try {
      if (name === "SIGKILL" && options.processGroup === true) process.kill(-pid, name)
      else child.kill(name)
    } catch {
      // Gone in the meantime.
    }
  }
  if (options.outlivesUs === true) {
    child.unref()
  } else {
    // Safety net: this process exits without closing the scope; the child goes too.
    const onExit = () => signal(steps[0]?.signal ?? "SIGTERM")
    process.on("exit", onExit)
    child.once("exit", () => process.removeListener("exit", onExit))
  }
  const stop = Effect.gen(function*() {
    for (const step of [...steps, KILL]) {
      if (hasExited()) break
      signal(step.signal)
      const ended = yield* Effect.timeoutOption(exited, step.grace)
      if (Option.isSome(ended)) break
    }
    yield* Effect.logDebug(`${options.name} stopped`)
  })
  return { name: options.name, pid, process: child, exited, hasExited, stop }
}

/** Starts a child, stopped when the scope closes (see the module comment). */
export const spawn = (options: SpawnOptions): Effect.Effect<Child, SpawnError, Scope.Scope> =>
  Effect.acquireRelease(start(options), (child) => child.stop)

/** Fails with `ChildExited` when the child ends: for children that must keep running. */
export const failOnExit = (child: Child): Effect.Effect<never, ChildExited> =>
  Effect.flatMap(child.exited, ({ code, signal }) => Effect.fail(new ChildExited({ name: child.name, code, signal })))

/** Runs a command to its end; its output (stdout and stderr, in order of arrival) comes with how it ended. */
export const run = (
  options: Omit<SpawnOptions, "stdout" | "stderr" | "ipc" | "outlivesUs"> & {
    /** Also called for each line of output as it arrives. */
    readonly onLine?: ((line: string) => void) | undefined
  }
): Effect.Effect<Exited & { readonly output: string }, SpawnError> =>
  Effect.scoped(Effect.gen(function*() {
    const lines: Array<string> = []
    const output: Output = {
      lines: (line) => {
        lines.push(line)
        options.onLine?.(line)
      }
    }
    const child = yield* spawn({ ...options, stdout: output, stderr: output })
    const exited = yield* child.exited
    return { ...exited, output: lines.join("\n") }
  }))
