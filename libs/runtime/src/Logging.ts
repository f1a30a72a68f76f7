/**
 * Owns how every process logs (docs/operations.md "Settings": LOG_LEVEL and
 * LOG_FORMAT): pretty lines on a terminal, one JSON object per line
 * otherwise, always on stderr, so stdout stays free for the CLI's JSON and
 * `npm start`'s banner.
 */
import type { LogLevel } from "effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as References from "effect/References"

export type LogFormat = "pretty" | "json"

/** The logger LOG_LEVEL and LOG_FORMAT ask for, installed for everything above this layer. */
export const layer = (
  options: { readonly logLevel: LogLevel.LogLevel; readonly logFormat: LogFormat }
): Layer.Layer<never> =>
  Layer.mergeAll(
    Logger.layer([
      options.logFormat === "json" ? Logger.withConsoleError(Logger.formatJson) : Logger.consolePretty()
    ]),
    Layer.succeed(Logger.LogToStderr, true),
    Layer.succeed(References.MinimumLogLevel, options.logLevel)
  )

/** Whether LOG_LEVEL asks for debug output (e.g. the embedded PostgreSQL's own log lines). */
export const isVerbose = (logLevel: LogLevel.LogLevel): boolean =>
  logLevel === "Debug" || logLevel === "Trace" || logLevel === "All"
