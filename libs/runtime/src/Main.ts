/**
 * Owns how every process runs its main program (docs/development.md
 * "Runtime"): `NodeRuntime.runMain` with a teardown that makes a
 * SIGTERM/SIGINT stop a clean exit 0; an error that is its own report
 * (`Reported.ts`: a malformed setting, a database that cannot be started or
 * reached, a child process that died) is one line on stderr and exit 1,
 * without a stack trace.
 */
// The subpath, not the package index: the index loads every Node module (~300 ms at each start).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import { flushLogs } from "./Logging.ts"
import { isReported, lineOf } from "./Reported.ts"

/** Interrupted (by a signal) is a clean stop: 0. Everything else as `Runtime.defaultTeardown`. */
export const teardown: Runtime.Teardown = (exit, onExit) => {
  if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return onExit(0)
  return Runtime.defaultTeardown(exit, onExit)
}

/** Writes the line of an error that is its own report and stopped the program. */
const reportFailure = <A, E>(program: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.tapCause(program, (cause) => {
    const error = Cause.squash(cause)
    const line = isReported(error) ? lineOf(error) : ""
    // An empty line: the error was already logged (`AlreadyLogged`).
    return line === "" ? Effect.void : Effect.sync(() => {
      flushLogs()
      process.stderr.write(`${line}\n`)
    })
  })

/** Runs `program` as the process: signals stop it with exit 0, failures exit non-zero. */
export const runMain = <A, E>(program: Effect.Effect<A, E>): void =>
  NodeRuntime.runMain(reportFailure(program), { teardown })
