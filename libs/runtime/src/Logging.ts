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
 *
 * A line costs a request little (docs/performance.md "The request path"):
 * the usual line (string message, string/number/boolean annotations, no
 * failure) is one `JSON.stringify` of an object built in the line's key
 * order, the same text Effect's general `Formatter.formatJson` writes
 * (property-tested), which is kept for every other line; and the lines of
 * one turn of the event loop reach stderr in one write (`perTick`), not a
 * console call and a write each. Lines still waiting are written when the
 * process exits, and before a process's own stderr lines (`flushLogs`).
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

/** One JSON object per log call, as Effect's structured logger and general JSON formatter write it. */
export const structuredLine = (options: Logger.Options<unknown>, service: Service): string => {
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
}

const isPrimitive = (value: unknown): value is string | number | boolean =>
  typeof value === "string" || typeof value === "number" || typeof value === "boolean"

/**
 * The usual line without the general formatter: `undefined` unless every
 * value is a string, number or boolean, there is no failure and no `fields`
 * (then `structuredLine` writes it). Same text as `structuredLine`.
 */
export const plainLine = (options: Logger.Options<unknown>, service: Service): string | undefined => {
  if (options.cause.reasons.length > 0) return undefined
  let message: string
  if (typeof options.message === "string") message = options.message
  else if (Array.isArray(options.message) && options.message.every((value) => typeof value === "string")) {
    message = options.message.join(" ")
  } else return undefined
  const annotations: Record<string, string | number | boolean> = {}
  for (const [key, value] of Object.entries(options.fiber.getRef(References.CurrentLogAnnotations))) {
    if (!isPrimitive(value) || key === "__proto__") return undefined
    annotations[key] = value
  }
  const spans: Record<string, number> = {}
  const now = options.date.getTime()
  for (const [label, started] of options.fiber.getRef(References.CurrentLogSpans)) {
    if (label === "__proto__") return undefined
    spans[label] = now - started
  }
  return JSON.stringify({
    message,
    level: options.logLevel.toUpperCase(),
    timestamp: options.date.toISOString(),
    service,
    annotations,
    spans,
    fiberId: `#${options.fiber.id}`
  })
}

/** One JSON object per log call, as a string (docs/operations.md "Log lines"). */
export const jsonLine = (service: Service): Logger.Logger<unknown, string> =>
  Logger.make((options) => plainLine(options, service) ?? structuredLine(options, service))

const waiting: Array<string> = []
let flushScheduled = false
let exitHooked = false

/**
 * Writes the lines still waiting to stderr, in one write. A process that
 * writes to stderr itself (its last error line, the CLI's refusals) calls it
 * first, so no log line comes after the line that should end the output.
 */
export const flushLogs = (): void => {
  flushScheduled = false
  if (waiting.length === 0) return
  const chunk = waiting.join("\n") + "\n"
  waiting.length = 0
  process.stderr.write(chunk)
}

/**
 * `self`'s lines on stderr, those of one turn of the event loop in one
 * write (stderr is synchronous for files, pipes and terminals on Linux, so
 * a write per line is a system call per line); the lines still waiting
 * when the process exits are written then.
 */
export const perTick = (self: Logger.Logger<unknown, string>): Logger.Logger<unknown, void> =>
  Logger.make((options) => {
    waiting.push(self.log(options))
    if (!exitHooked) {
      exitHooked = true
      process.once("exit", flushLogs)
    }
    if (!flushScheduled) {
      flushScheduled = true
      setImmediate(flushLogs).unref()
    }
  })

/** The logger LOG_LEVEL and LOG_FORMAT ask for, installed for everything above this layer. */
export const layer = (
  options: { readonly logLevel: LogLevel.LogLevel; readonly logFormat: LogFormat; readonly service: Service }
): Layer.Layer<never> =>
  Layer.mergeAll(
    Logger.layer([
      options.logFormat === "json" ? perTick(jsonLine(options.service)) : Logger.consolePretty()
    ]),
    Layer.succeed(Logger.LogToStderr, true),
    Layer.succeed(References.MinimumLogLevel, options.logLevel)
  )

/** Whether LOG_LEVEL asks for debug output (e.g. the embedded PostgreSQL's own log lines). */
export const isVerbose = (logLevel: LogLevel.LogLevel): boolean =>
  logLevel === "Debug" || logLevel === "Trace" || logLevel === "All"
