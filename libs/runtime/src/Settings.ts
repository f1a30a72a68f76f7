/**
 * Owns the process settings of docs/operations.md "Settings": read once at
 * start from the environment with Effect's `Config`, each checked, so that a
 * malformed one stops the process with one line naming it and nothing else.
 *
 * `Config` does the reading: the provider (the environment, or the one a test
 * gives), absent versus present, the defaults (`Config.withDefault`, each
 * default written once: the idempotency wait and the rate-limit window come
 * from libs/domain, where the rules that use them live) and the record of all
 * settings (`Config.all`). The syntax is ours, one Schema per kind of value
 * (`Config.schema`): Effect's own `Config.Port`, `Config.Boolean`,
 * `Config.Duration` and `Config.LogLevel` accept other spellings than the
 * documented ones (`8e3` as a port; `y` but not `TRUE`; `5 seconds` but not
 * `5s`; `Info` but not `info`).
 *
 * An empty variable counts as unset (compose files and shells often export
 * empty values).
 */
import { DEFAULT_WAIT } from "@school/domain/Idempotency"
import { WINDOW } from "@school/domain/RateLimit"
import { DEFAULT_TTL } from "@school/domain/Sessions"
import { DEFAULT_ACTIONS_PER_MINUTE, DEFAULT_MAX_SUBSCRIPTIONS } from "@school/domain/WebhookLimits"
import { parseKey as parseWebhookSecretKey } from "@school/domain/WebhookSecret"
import type { ConfigProvider as ConfigProviderType } from "effect"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as Net from "node:net"
import * as Logging from "./Logging.ts"
import { reportLine } from "./Reported.ts"

/** A setting that is present but malformed. Its message is the one line the process prints before exiting. */
export class InvalidSetting extends Schema.TaggedError<InvalidSetting>()("InvalidSetting", {
  setting: Schema.String,
  expected: Schema.String,
  got: Schema.String
}) {
  /** Its own report (`Reported.ts`): `runMain` prints the message as it is, no cause dump. */
  override readonly [Runtime.errorReported] = false
  override get message(): string {
    return `invalid setting ${this.setting}: expected ${this.expected}, got ${JSON.stringify(this.got)}`
  }
  get [reportLine](): string {
    return this.message
  }
}

export interface SettingsShape {
  /** `DATABASE_URL`; None means "use the embedded PostgreSQL" where a process can (npm start, the CLI). */
  readonly databaseUrl: Option.Option<string>
  /** `DATA_DIR`: where the embedded PostgreSQL keeps its data; None: the project's `.data/postgres`. */
  readonly dataDir: Option.Option<string>
  readonly port: number
  readonly host: string
  readonly logLevel: LogLevel.LogLevel
  readonly logFormat: Logging.LogFormat
  readonly idempotencyWait: Duration.Duration
  /** Pauses before attempts 2, 3, 4, … of a webhook delivery. */
  readonly webhookRetryDelays: ReadonlyArray<Duration.Duration>
  readonly webhookTimeout: Duration.Duration
  readonly webhookAllowInsecureUrls: boolean
  /** `WEBHOOK_SECRET_KEY` (base64 of 32 bytes): encrypts webhook secrets at rest; None: the development key. */
  readonly webhookSecretKey: Option.Option<Uint8Array>
  /** `WEBHOOK_MAX_SUBSCRIPTIONS` (default 20): webhook subscriptions one school may have. */
  readonly webhookMaxSubscriptions: number
  /** `WEBHOOK_ACTIONS_PER_MINUTE` (default 10): accepted `test`, `resend` and `recover` calls per subscription per minute. */
  readonly webhookActionsPerMinute: number
  readonly dispatcherConcurrency: number
  /** `DISPATCHER_PER_SUBSCRIPTION` (default 4): in-flight deliveries per subscription, so one receiver cannot take every slot. */
  readonly dispatcherPerSubscription: number
  /** `DISPATCHER_PORT` (default 3001; 0: any free port): the dispatcher's /health/live and /health/ready. */
  readonly dispatcherPort: number
  /** `DELIVERY_RETENTION` (default 30 days): delivered and failed deliveries older than this are purged (the last 50 per subscription stay). */
  readonly deliveryRetention: Duration.Duration
  /** `RATE_LIMIT_WINDOW` (default 60 s, spec 8); None: `off`, nothing counted (measurements only). */
  readonly rateLimitWindow: Option.Option<Duration.Duration>
  /** `DATABASE_STATEMENT_TIMEOUT` (default 5 s): the API's bound on each statement. */
  readonly databaseStatementTimeout: Duration.Duration
  /** `DATABASE_ACQUIRE_TIMEOUT` (default 2 s): the API's bound on the wait for a pooled connection. */
  readonly databaseAcquireTimeout: Duration.Duration
  /** `SESSION_TTL` (default 12 h): how long a back-office session lasts. */
  readonly sessionTtl: Duration.Duration
  /** `SHUTDOWN_DELAY` (default 0 s): after SIGTERM, how long a process keeps serving while its readiness says 503. */
  readonly shutdownDelay: Duration.Duration
  /** `SHUTDOWN_TIMEOUT` (default 10 s): how long the API then waits for the requests in flight before cutting them. */
  readonly shutdownTimeout: Duration.Duration
}

// ---------------------------------------------------------------------------
// The syntax: pure, total parsers, `None` when malformed.
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

/** A duration longer than zero. */
export const parsePositiveDuration = (text: string): Option.Option<Duration.Duration> =>
  Option.filter(parseDuration(text), (duration) => Duration.toMillis(duration) > 0)

/** A comma-separated, non-empty list of durations: `1m,5m,30m`. */
export const parseDurationList = (text: string): Option.Option<ReadonlyArray<Duration.Duration>> => {
  const out: Array<Duration.Duration> = []
  for (const part of text.split(",")) {
    const duration = parseDuration(part)
    if (Option.isNone(duration)) return Option.none()
    out.push(duration.value)
  }
  return out.length === 0 ? Option.none() : Option.some(out)
}

/** A positive duration, in days too: `30d`, `720h`, `1m`. */
export const parseRetention = (text: string): Option.Option<Duration.Duration> => {
  const days = /^(\d+(?:\.\d+)?)\s*d$/.exec(text.trim())
  return days === null
    ? parsePositiveDuration(text)
    : Option.filter(Option.some(Duration.days(Number(days[1]))), (duration) => Duration.toMillis(duration) > 0)
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

const booleans: Record<string, boolean> = { true: true, "1": true, yes: true, on: true, false: false, "0": false, no: false, off: false }

export const parseBoolean = (text: string): Option.Option<boolean> =>
  Option.fromNullishOr(booleans[text.trim().toLowerCase()])

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

export const parseLogFormat = (text: string): Option.Option<Logging.LogFormat> => {
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

/** A directory path, as given (relative paths are taken from the working directory). */
export const parsePath = (text: string): Option.Option<string> => {
  const value = text.trim()
  return value === "" || value.includes("\0") ? Option.none() : Option.some(value)
}

// ---------------------------------------------------------------------------
// Reading: one `Config` per setting, all read together.
// ---------------------------------------------------------------------------

/**
 * The Schema of one kind of setting: the environment's text, decoded by
 * `parse` into a value of `type`; a malformed text is an issue whose message
 * says what was `expected` (the "expected …" of `InvalidSetting`).
 */
const text = <A>(type: Schema.Codec<A>, expected: string, parse: (text: string) => Option.Option<A>) =>
  Schema.String.pipe(Schema.decodeTo(
    type,
    SchemaTransformation.transformEffect({
      decode: (value: string) =>
        Option.match(parse(value), {
          onNone: () => Effect.fail(new SchemaIssue.InvalidValue({ message: expected }, value)),
          onSome: Effect.succeed
        }),
      // Settings are only ever read.
      encode: (value: A) => Effect.fail(new SchemaIssue.Forbidden({ message: "settings are not written" }, value))
    })
  ))

const durationExpected = "a duration like 250ms, 5s, 1m or 2h"
const LogLevelType = Schema.Literals(LogLevel.values)
const DurationText = text(Schema.Duration, durationExpected, parseDuration)
const PositiveDurationText = text(Schema.Duration, "a positive duration like 500ms, 5s or 1m", parsePositiveDuration)

/** Every setting with its default (docs/operations.md "Settings"). */
const settings = Config.all({
  databaseUrl: Config.option(
    Config.schema(text(Schema.String, "a postgres:// or postgresql:// URL", parseDatabaseUrl), "DATABASE_URL")
  ),
  dataDir: Config.option(Config.schema(text(Schema.String, "a directory path", parsePath), "DATA_DIR")),
  port: Config.schema(text(Schema.Int, "an integer 1..65535", parseIntegerIn(1, 65535)), "PORT").pipe(
    Config.withDefault(3000)
  ),
  host: Config.schema(text(Schema.String, "an IP address or host name", parseHost), "HOST").pipe(
    Config.withDefault("127.0.0.1")
  ),
  logLevel: Config.schema(
    text(LogLevelType, "one of trace, debug, info, warn, error, fatal, none", parseLogLevel),
    "LOG_LEVEL"
  ).pipe(Config.withDefault<LogLevel.LogLevel>("Info")),
  logFormat: Config.schema(text(Schema.Literals(["pretty", "json"]), "pretty or json", parseLogFormat), "LOG_FORMAT")
    // Whether stderr is a terminal does not change while the process runs.
    .pipe(Config.withDefault<Logging.LogFormat>(process.stderr.isTTY ? "pretty" : "json")),
  idempotencyWait: Config.schema(DurationText, "IDEMPOTENCY_WAIT").pipe(Config.withDefault(DEFAULT_WAIT)),
  webhookRetryDelays: Config.schema(
    text(Schema.Array(Schema.Duration), "a comma-separated list of durations like 1m,5m,30m", parseDurationList),
    "WEBHOOK_RETRY_DELAYS"
  ).pipe(Config.withDefault<ReadonlyArray<Duration.Duration>>([
    Duration.minutes(1),
    Duration.minutes(5),
    Duration.minutes(30)
  ])),
  webhookTimeout: Config.schema(DurationText, "WEBHOOK_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10))),
  webhookAllowInsecureUrls: Config.schema(text(Schema.Boolean, "true or false", parseBoolean), "WEBHOOK_ALLOW_INSECURE_URLS")
    .pipe(Config.withDefault(false)),
  webhookSecretKey: Config.option(Config.schema(
    text(Schema.Uint8Array, "the base64 of 32 bytes, e.g. from openssl rand -base64 32", parseWebhookSecretKey),
    "WEBHOOK_SECRET_KEY"
  )),
  webhookMaxSubscriptions: Config.schema(
    text(Schema.Int, "an integer 1..10000", parseIntegerIn(1, 10_000)),
    "WEBHOOK_MAX_SUBSCRIPTIONS"
  ).pipe(Config.withDefault(DEFAULT_MAX_SUBSCRIPTIONS)),
  webhookActionsPerMinute: Config.schema(
    text(Schema.Int, "an integer 1..10000", parseIntegerIn(1, 10_000)),
    "WEBHOOK_ACTIONS_PER_MINUTE"
  ).pipe(Config.withDefault(DEFAULT_ACTIONS_PER_MINUTE)),
  dispatcherConcurrency: Config.schema(
    text(Schema.Int, "an integer 1..10000", parseIntegerIn(1, 10_000)),
    "DISPATCHER_CONCURRENCY"
  ).pipe(Config.withDefault(32)),
  dispatcherPerSubscription: Config.schema(
    text(Schema.Int, "an integer 1..1000", parseIntegerIn(1, 1_000)),
    "DISPATCHER_PER_SUBSCRIPTION"
  ).pipe(Config.withDefault(4)),
  dispatcherPort: Config.schema(text(Schema.Int, "an integer 0..65535", parseIntegerIn(0, 65535)), "DISPATCHER_PORT").pipe(
    Config.withDefault(3001)
  ),
  deliveryRetention: Config.schema(
    text(Schema.Duration, "a positive duration like 30d, 720h or 1m", parseRetention),
    "DELIVERY_RETENTION"
  ).pipe(Config.withDefault(Duration.days(30))),
  rateLimitWindow: Config.schema(
    text(Schema.Option(Schema.Duration), "a positive duration like 60s or 1m, or off", parseWindow),
    "RATE_LIMIT_WINDOW"
  ).pipe(Config.withDefault(Option.some(WINDOW))),
  databaseStatementTimeout: Config.schema(PositiveDurationText, "DATABASE_STATEMENT_TIMEOUT").pipe(
    Config.withDefault(Duration.seconds(5))
  ),
  sessionTtl: Config.schema(PositiveDurationText, "SESSION_TTL").pipe(Config.withDefault(DEFAULT_TTL)),
  databaseAcquireTimeout: Config.schema(PositiveDurationText, "DATABASE_ACQUIRE_TIMEOUT").pipe(
    Config.withDefault(Duration.seconds(2))
  ),
  shutdownDelay: Config.schema(DurationText, "SHUTDOWN_DELAY").pipe(Config.withDefault(Duration.zero)),
  shutdownTimeout: Config.schema(PositiveDurationText, "SHUTDOWN_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10)))
})

/** Settings whose value is a secret: a malformed one is reported without its text. */
const SECRET_SETTINGS: ReadonlySet<string> = new Set(["WEBHOOK_SECRET_KEY"])

/** The provider with empty values taken for absent ones. */
const emptyIsUnset = (provider: ConfigProviderType.ConfigProvider): ConfigProviderType.ConfigProvider =>
  ConfigProvider.make((path) =>
    provider.load(path).pipe(
      Effect.map((node) => node?._tag === "Value" && node.value.trim() === "" ? undefined : node)
    )
  )

/** The setting a failed read names and what it expected, from the issue our `text` Schema raised. */
const whatFailed = (
  issue: SchemaIssue.Issue,
  setting = "?"
): { readonly setting: string; readonly expected: string } => {
  switch (issue._tag) {
    case "Pointer":
      return whatFailed(issue.issue, String(issue.path[0] ?? setting))
    case "Encoding":
    case "Filter":
      return whatFailed(issue.issue, setting)
    case "Composite":
      return whatFailed(issue.issues[0], setting)
    case "InvalidValue":
      return { setting, expected: String(issue.annotations?.message ?? "a valid value") }
    default:
      return { setting, expected: String(issue) }
  }
}

/** Reads and checks every setting (docs/operations.md "Settings"); the first malformed one fails. */
export const load: Effect.Effect<SettingsShape, InvalidSetting> = Effect.gen(function*() {
  const provider = emptyIsUnset(yield* ConfigProvider.ConfigProvider)
  return yield* settings.parse(provider).pipe(
    Effect.catchTag("ConfigError", (error) => {
      // The environment provider cannot fail to read; if a custom one does, it is a defect.
      if (error.cause._tag !== "SchemaError") return Effect.die(error)
      const { expected, setting } = whatFailed(error.cause.issue)
      return provider.load([setting]).pipe(
        Effect.orDie,
        Effect.flatMap((node) => {
          const got = node?.value ?? ""
          return Effect.fail(
            new InvalidSetting({
              setting,
              expected,
              got: SECRET_SETTINGS.has(setting) ? `(${got.length} characters, not shown)` : got
            })
          )
        })
      )
    })
  )
})

export class Settings extends Context.Service<Settings, SettingsShape>()("@school/runtime/Settings") {
  /** The settings from the environment; fails with the first malformed one. */
  static readonly layer: Layer.Layer<Settings, InvalidSetting> = Layer.effect(Settings, load)

  /** The settings, and the logger they ask for installed for everything above. */
  static readonly layerWithLogging: Layer.Layer<Settings, InvalidSetting> = Layer.unwrap(
    Effect.map(load, (settings) => Layer.merge(Layer.succeed(Settings, settings), Logging.layer(settings)))
  )
}
