/**
 * Owns how every process logs (docs/operations.md "Settings": LOG_LEVEL and
 * LOG_FORMAT; docs/operations.md "Log lines"): pretty lines on a terminal,
 * one JSON object per line otherwise, always on stderr, so stdout stays free
 * for the CLI's JSON and `npm start`'s banner.
 *
 * A JSON line names the process it comes from (`service`: `api`,
 * `dispatcher`, `cli`), so the lines `npm start` forwards from its children
 * say whose they are, and its `message` is always a string: a log call with
 * several values (`Effect.logInfo("dispatcher ready", { port })`) has its
 * strings, numbers and other values joined by spaces into `message`, and
 * the plain objects among them merged into `fields` (`{"port":3001}`).
 */
import type { LogLevel } from "effect"
import * as Formatter from "effect/Formatter"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as References from "effect/References"

export type LogFormat = "pretty" | "json"

/** Which process a JSON line comes from. */
export type Service = "api" | "dispatcher" | "cli"

/** A plain object (`{ port: 3001 }`), not an array, an error or a class instance. */
const isPlainRecord = (value: unknown): value is Readonly<Record<string, unknown>> => {
  if (typeof value !== "object" || value === null) return false
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

/**
 * The values of one log call as a line's `message` and `fields`: strings as
 * they are and any other value formatted (`Formatter.format`, which redacts
 * `Redacted` values), joined by spaces; the plain objects' entries in
 * `fields` (a later one wins a key), undefined when there is none.
 */
export const messageAndFields = (
  message: unknown
): { readonly message: string; readonly fields: Readonly<Record<string, unknown>> | undefined } => {
  const values: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
  const words: Array<string> = []
  let fields: Record<string, unknown> | undefined
  for (const value of values) {
    if (typeof value === "string") words.push(value)
    else if (isPlainRecord(value)) fields = { ...fields, ...value }
    else words.push(Formatter.format(value))
  }
  return { message: words.join(" "), fields }
}

/** One JSON object per log call, as a string (docs/operations.md "Log lines"). */
export const jsonLine = (service: Service): Logger.Logger<unknown, string> =>
  Logger.make((options) => {
    const structured = Logger.formatStructured.log(options)
    const { fields, message } = messageAndFields(options.message)
    return Formatter.formatJson({
      message,
      level: structured.level,
      timestamp: structured.timestamp,
      service,
      cause: structured.cause,
      annotations: structured.annotations,
      ...(fields === undefined ? {} : { fields }),
      spans: structured.spans,
      fiberId: structured.fiberId
    })
  })

/** The logger LOG_LEVEL and LOG_FORMAT ask for, installed for everything above this layer. */
export const layer = (
  options: { readonly logLevel: LogLevel.LogLevel; readonly logFormat: LogFormat; readonly service: Service }
): Layer.Layer<never> =>
  Layer.mergeAll(
    Logger.layer([
      options.logFormat === "json" ? Logger.withConsoleError(jsonLine(options.service)) : Logger.consolePretty()
    ]),
    Layer.succeed(Logger.LogToStderr, true),
    Layer.succeed(References.MinimumLogLevel, options.logLevel)
  )

/** Whether LOG_LEVEL asks for debug output (e.g. the embedded PostgreSQL's own log lines). */
export const isVerbose = (logLevel: LogLevel.LogLevel): boolean =>
  logLevel === "Debug" || logLevel === "Trace" || logLevel === "All"
