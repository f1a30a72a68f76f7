/**
 * Owns how every process runs its main program (ARCHITECTURE "Runtime"):
 * `NodeRuntime.runMain` with a teardown that makes a SIGTERM/SIGINT stop a
 * clean exit 0, and a malformed setting one line on stderr and exit 1.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Runtime } from "effect"
import { InvalidSetting } from "./Settings.ts"

/** Interrupted (by a signal) is a clean stop: 0. Everything else as `Runtime.defaultTeardown`. */
export const teardown: Runtime.Teardown = (exit, onExit) => {
  if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return onExit(0)
  return Runtime.defaultTeardown(exit, onExit)
}

/** Writes the one line of an `InvalidSetting` that stopped the program. */
const reportInvalidSetting = <A, E>(program: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.tapCause(program, (cause) => {
    const error = Cause.squash(cause)
    return error instanceof InvalidSetting
      ? Effect.sync(() => process.stderr.write(`${error.message}\n`))
      : Effect.void
  })

/** Runs `program` as the process: signals stop it with exit 0, failures exit non-zero. */
export const runMain = <A, E>(program: Effect.Effect<A, E>): void =>
  NodeRuntime.runMain(reportInvalidSetting(program), { teardown })
