/**
 * Log lines a test provokes on purpose (a 500 it causes, a purge it
 * triggers) are kept and asserted instead of printed, so the test output
 * shows only what nobody expected. `collect` keeps everything an effect
 * logs; `LogGate` is the switchable version `TestServer` gives its server:
 * it prints as usual, except while a test says it expects what is logged.
 */
import { Cause, Effect, Logger } from "effect"

export interface LogEntry {
  /** `Info`, `Warn`, `Error`, … */
  readonly level: string
  /** The logged values, strings as they are, others formatted. */
  readonly message: string
  /** The failure logged with it, rendered; "" when none. */
  readonly cause: string
}

const render = (value: unknown): string => {
  if (typeof value === "string") return value
  try {
    return JSON.stringify(value)
  } catch {
    return String(value)
  }
}

const entryOf = (options: Logger.Options<unknown>): LogEntry => {
  const parts: ReadonlyArray<unknown> = Array.isArray(options.message) ? options.message : [options.message]
  return {
    level: options.logLevel,
    message: parts.map(render).join(" "),
    cause: options.cause.reasons.length === 0 ? "" : Cause.pretty(options.cause)
  }
}

/** Runs `self` with a logger that keeps its entries instead of printing them. */
export const collect = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const entries: Array<LogEntry> = []
    const logger = Logger.make((options) => {
      entries.push(entryOf(options))
    })
    return self.pipe(
      Effect.provideService(Logger.CurrentLoggers, new Set([logger])),
      Effect.map((value) => [value, entries] as const)
    )
  })

/** A logger that prints like the default one unless expecting: then it keeps the entries for the test. */
export interface LogGate {
  readonly logger: Logger.Logger<unknown, void>
  /** Runs `self` with this logger's output expected: kept and returned, not printed. */
  readonly expecting: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<readonly [A, ReadonlyArray<LogEntry>], E, R>
}

export const makeLogGate = (): LogGate => {
  let expected: Array<LogEntry> | undefined = undefined
  const logger = Logger.make((options) => {
    if (expected === undefined) Logger.defaultLogger.log(options)
    else expected.push(entryOf(options))
  })
  const expecting = <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const previous = expected
        const entries: Array<LogEntry> = []
        expected = entries
        return { previous, entries }
      }),
      ({ entries }) => Effect.map(self, (value) => [value, entries] as const),
      ({ previous }) => Effect.sync(() => (expected = previous))
    )
  return { logger, expecting }
}
