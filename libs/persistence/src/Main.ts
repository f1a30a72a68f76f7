/**
 * Owns how every process runs its main program (ARCHITECTURE "Runtime"):
 * `NodeRuntime.runMain` with a teardown that makes a SIGTERM/SIGINT stop a
 * clean exit 0; a malformed setting (or a database that cannot be started or
 * reached) is its message on stderr and exit 1, without a stack trace.
 */
// The subpath, not the package index: the index loads every Node module (~300 ms at each start).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Exit, Runtime } from "effect"
import { DatabaseStartError } from "./DatabaseProvider.ts"
import { InvalidSetting } from "./Settings.ts"

/** Interrupted (by a signal) is a clean stop: 0. Everything else as `Runtime.defaultTeardown`. */
export const teardown: Runtime.Teardown = (exit, onExit) => {
  if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return onExit(0)
  return Runtime.defaultTeardown(exit, onExit)
}

/** Writes the message of a start-up error that stopped the program (both are marked already reported). */
const reportStartupError = <A, E>(program: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.tapCause(program, (cause) => {
    const error = Cause.squash(cause)
    if (error instanceof InvalidSetting) return Effect.sync(() => process.stderr.write(`${error.message}\n`))
    if (error instanceof DatabaseStartError) return Effect.sync(() => process.stderr.write(`error: ${error.message}\n`))
    return Effect.void
  })

/** Runs `program` as the process: signals stop it with exit 0, failures exit non-zero. */
export const runMain = <A, E>(program: Effect.Effect<A, E>): void =>
  NodeRuntime.runMain(reportStartupError(program), { teardown })
