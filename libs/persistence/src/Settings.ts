/**
 * Owns the process settings of CONTRACT "Settings": read once at start from
 * the environment (Effect `Config`), each checked, so that a malformed one
 * stops the process with one line naming it and nothing else. Also owns how
 * every process logs (LOG_LEVEL / LOG_FORMAT, to stderr, so stdout stays free
 * for the CLI's JSON).
 *
 * An empty variable counts as unset (compose files and shells often export
 * empty values).
 */
import { Config, Context, Duration, Effect, Layer, Logger, type LogLevel, Option, References, Runtime, Schema } from "effect"
import * as Net from "node:net"

/** A setting that is present but malformed. Its message is the one line the process prints before exiting. */
export class InvalidSetting extends Schema.TaggedError<InvalidSetting>()("InvalidSetting", {
  setting: Schema.String,
  expected: Schema.String,
  got: Schema.String
}) {
  /** Already reported as one line by `runMain`: no cause dump. */
  override readonly [Runtime.errorReported] = false
  override get message(): string {
    return `invalid setting ${this.setting}: expected ${this.expected}, got ${JSON.stringify(this.got)}`
  }
}

export type LogFormat = "pretty" | "json"

export interface SettingsShape {
  /** `DATABASE_URL`; None means "use the embedded PostgreSQL" where a process can (npm start, the CLI). */
  readonly databaseUrl: Option.Option<string>
  readonly port: number
  readonly host: string
  readonly logLevel: LogLevel.LogLevel
  readonly logFormat: LogFormat
  readonly idempotencyWait: Duration.Duration
  /** Pauses before attempts 2, 3, 4, … of a webhook delivery. */
  readonly webhookRetryDelays: ReadonlyArray<Duration.Duration>
  readonly webhookTimeout: Duration.Duration
  readonly webhookAllowInsecureUrls: boolean
  readonly dispatcherConcurrency: number
  /** `RATE_LIMIT_WINDOW` (default 60 s); None: `off`, nothing counted (measurements only). */
  readonly rateLimitWindow: Option.Option<Duration.Duration>
}

// ---------------------------------------------------------------------------
// Parsers: pure, total, `None` when malformed.
// ---------------------------------------------------------------------------

const durationUnits: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }

/** `250ms`, `5s`, `1m`, `2h` (also `1.5s`, `5 s`). */
export const parseDuration = (text: string): Option.Option<Duration.Duration> => {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/.exec(text.trim())
  if (match === null) return Option.none()
  const value = Number(match[1])
  const unit = durationUnits[match[2] ?? ""]
  return unit === undefined || !Number.isFinite(value) ? Option.none() : Option.some(Duration.millis(value * unit))
}

/** A comma-separated, non-empty list of durations: `1m,5m,30m`. */
export const parseDurationList = (text: string): Option.Option<ReadonlyArray<Duration.Duration>> => {
  const parts = text.split(",").map((part) => part.trim())
  const out: Array<Duration.Duration> = []
  for (const part of parts) {
    const duration = parseDuration(part)
    if (Option.isNone(duration)) return Option.none()
    out.push(duration.value)
  }
  return out.length === 0 ? Option.none() : Option.some(out)
}

export const parseIntegerIn = (min: number, max: number) => (text: string): Option.Option<number> => {
  if (!/^\d+$/.test(text.trim())) return Option.none()
  const value = Number(text.trim())
  return Number.isSafeInteger(value) && value >= min && value <= max ? Option.some(value) : Option.none()
}

/** A positive duration, or `off` (None). */
export const parseWindow = (text: string): Option.Option<Option.Option<Duration.Duration>> =>
  text.trim().toLowerCase() === "off"
    ? Option.some(Option.none())
    : Option.map(Option.filter(parseDuration(text), (duration) => Duration.toMillis(duration) > 0), Option.some)

export const parseBoolean = (text: string): Option.Option<boolean> => {
  switch (text.trim().toLowerCase()) {
    case "true":
    case "1":
    case "yes":
    case "on":
      return Option.some(true)
    case "false":
    case "0":
    case "no":
    case "off":
      return Option.some(false)
    default:
      return Option.none()
  }
}

const logLevels: Record<string, LogLevel.LogLevel> = {
  all: "All",
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  warning: "Warn",
  error: "Error",
  fatal: "Fatal",
  none: "None",
  off: "None"
}

export const parseLogLevel = (text: string): Option.Option<LogLevel.LogLevel> =>
  Option.fromNullishOr(logLevels[text.trim().toLowerCase()])

export const parseLogFormat = (text: string): Option.Option<LogFormat> => {
  const value = text.trim().toLowerCase()
  return value === "pretty" || value === "json" ? Option.some(value) : Option.none()
}

/** An IP address or a host name. */
export const parseHost = (text: string): Option.Option<string> => {
  const value = text.trim()
  const hostname = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/
  return Net.isIP(value) !== 0 || hostname.test(value) ? Option.some(value) : Option.none()
}

/** A `postgres://` or `postgresql://` URL with a host. */
export const parseDatabaseUrl = (text: string): Option.Option<string> => {
  const value = text.trim()
  if (!URL.canParse(value)) return Option.none()
  const url = new URL(value)
  return (url.protocol === "postgres:" || url.protocol === "postgresql:") && url.hostname !== ""
    ? Option.some(value)
    : Option.none()
}

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

/** The raw value, None when unset or empty. */
const raw = (name: string): Effect.Effect<Option.Option<string>> =>
  Config.option(Config.String(name)).pipe(
    Effect.map(Option.filter((value) => value.trim() !== "")),
    // The environment provider cannot fail to read; if a custom one does, it is a defect.
    Effect.orDie
  )

const setting = <A>(
  name: string,
  parse: (text: string) => Option.Option<A>,
  expected: string
): Effect.Effect<Option.Option<A>, InvalidSetting> =>
  raw(name).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.succeed(Option.none<A>()),
      onSome: (text) =>
        Option.match(parse(text), {
          onNone: () => Effect.fail(new InvalidSetting({ setting: name, expected, got: text })),
          onSome: (value) => Effect.succeed(Option.some(value))
        })
    }))
  )

const withDefault = <A>(
  name: string,
  parse: (text: string) => Option.Option<A>,
  expected: string,
  fallback: () => A
): Effect.Effect<A, InvalidSetting> => setting(name, parse, expected).pipe(Effect.map(Option.getOrElse(fallback)))

const durationExpected = "a duration like 250ms, 5s, 1m or 2h"

/** Reads and checks every setting (CONTRACT "Settings"); the first malformed one fails. */
export const load: Effect.Effect<SettingsShape, InvalidSetting> = Effect.gen(function*() {
  return {
    databaseUrl: yield* setting("DATABASE_URL", parseDatabaseUrl, "a postgres:// or postgresql:// URL"),
    port: yield* withDefault("PORT", parseIntegerIn(1, 65535), "an integer 1..65535", () => 3000),
    host: yield* withDefault("HOST", parseHost, "an IP address or host name", () => "127.0.0.1"),
    logLevel: yield* withDefault(
      "LOG_LEVEL",
      parseLogLevel,
      "one of trace, debug, info, warn, error, fatal, none",
      (): LogLevel.LogLevel => "Info"
    ),
    logFormat: yield* withDefault(
      "LOG_FORMAT",
      parseLogFormat,
      "pretty or json",
      (): LogFormat => process.stderr.isTTY ? "pretty" : "json"
    ),
    idempotencyWait: yield* withDefault("IDEMPOTENCY_WAIT", parseDuration, durationExpected, () => Duration.seconds(2)),
    webhookRetryDelays: yield* withDefault(
      "WEBHOOK_RETRY_DELAYS",
      parseDurationList,
      "a comma-separated list of durations like 1m,5m,30m",
      () => [Duration.minutes(1), Duration.minutes(5), Duration.minutes(30)]
    ),
    webhookTimeout: yield* withDefault("WEBHOOK_TIMEOUT", parseDuration, durationExpected, () => Duration.seconds(10)),
    webhookAllowInsecureUrls: yield* withDefault(
      "WEBHOOK_ALLOW_INSECURE_URLS",
      parseBoolean,
      "true or false",
      () => false
    ),
    dispatcherConcurrency: yield* withDefault(
      "DISPATCHER_CONCURRENCY",
      parseIntegerIn(1, 10_000),
      "an integer 1..10000",
      () => 32
    ),
    rateLimitWindow: yield* withDefault(
      "RATE_LIMIT_WINDOW",
      parseWindow,
      "a positive duration like 60s or 1m, or off",
      () => Option.some(Duration.minutes(1))
    )
  }
})

export class Settings extends Context.Service<Settings, SettingsShape>()("@school/persistence/Settings") {
  /** The settings from the environment; fails with the first malformed one. */
  static readonly layer: Layer.Layer<Settings, InvalidSetting> = Layer.effect(Settings, load)

  /** The settings, and the logger they ask for installed for everything above. */
  static readonly layerWithLogging: Layer.Layer<Settings, InvalidSetting> = Layer.unwrap(
    Effect.map(load, (settings) => Layer.merge(Layer.succeed(Settings, settings), loggingLayer(settings)))
  )
}

/**
 * LOG_LEVEL and LOG_FORMAT: pretty lines on a terminal, one JSON object per
 * line otherwise; always on stderr.
 */
export const loggingLayer = (
  options: { readonly logLevel: LogLevel.LogLevel; readonly logFormat: LogFormat }
): Layer.Layer<never> =>
  Layer.mergeAll(
    Logger.layer([
      options.logFormat === "json" ? Logger.withConsoleError(Logger.formatJson) : Logger.consolePretty()
    ]),
    Layer.succeed(Logger.LogToStderr, true),
    Layer.succeed(References.MinimumLogLevel, options.logLevel)
  )
