/**
 * Owns what a setting is (docs/operations.md "Settings") and the kinds of
 * value one can hold. A setting is defined once, next to the code that uses
 * it, by its name, its kind and its default:
 *
 *   export const SESSION_TTL = SettingKinds.make("SESSION_TTL", SettingKinds.positiveDuration, DEFAULT_TTL)
 *
 * and read where it is used, in the construction of a layer, so it is read
 * at start: `const ttl = yield* SESSION_TTL`. Reading one takes the current
 * `ConfigProvider` (the environment, or the one a test provides), counts an
 * empty value as unset (compose files and shells often export empty values),
 * and fails with `InvalidSetting`, whose message is the one line a process
 * prints before it stops: `invalid setting X: expected …, got "…"`.
 *
 * `Config` does the reading: the provider, absent versus present, the
 * defaults. The syntax is ours, one Schema per kind (`Config.schema`):
 * Effect's own `Config.Port`, `Config.Boolean`, `Config.Duration` and
 * `Config.LogLevel` accept other spellings than the documented ones (`8e3`
 * as a port; `y` but not `TRUE`; `5 seconds` but not `5s`; `Info` but not
 * `info`).
 */
import type { ConfigProvider as ConfigProviderType } from "effect"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Effectable from "effect/Effectable"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as Net from "node:net"
import type { LogFormat } from "./Logging.ts"
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

/** A directory path, as given (relative paths are taken from the working directory). */
export const parsePath = (text: string): Option.Option<string> => {
  const value = text.trim()
  return value === "" || value.includes("\0") ? Option.none() : Option.some(value)
}

// ---------------------------------------------------------------------------
// The kinds: the Schema of one kind of value, from the environment's text.
// ---------------------------------------------------------------------------

/** One kind of setting: the environment's text decoded into an `A`, or an issue saying what was expected. */
export interface Kind<A> {
  readonly schema: Schema.Codec<A, string>
}

/**
 * A kind: the text decoded by `parse` into a value of `type`; a malformed
 * text is an issue whose message says what was `expected` (the "expected …"
 * of `InvalidSetting`).
 */
export const kind = <A>(type: Schema.Codec<A>, expected: string, parse: (text: string) => Option.Option<A>): Kind<A> => ({
  schema: Schema.String.pipe(Schema.decodeTo(
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
})

export const duration: Kind<Duration.Duration> = kind(Schema.Duration, "a duration like 250ms, 5s, 1m or 2h", parseDuration)

export const positiveDuration: Kind<Duration.Duration> = kind(
  Schema.Duration,
  "a positive duration like 500ms, 5s or 1m",
  parsePositiveDuration
)

export const durationList: Kind<ReadonlyArray<Duration.Duration>> = kind(
  Schema.Array(Schema.Duration),
  "a comma-separated list of durations like 1m,5m,30m",
  parseDurationList
)

/** A positive duration, in days too. */
export const retention: Kind<Duration.Duration> = kind(
  Schema.Duration,
  "a positive duration like 30d, 720h or 1m",
  parseRetention
)

/** A positive duration, or `off` (None). */
export const durationOrOff: Kind<Option.Option<Duration.Duration>> = kind(
  Schema.Option(Schema.Duration),
  "a positive duration like 60s or 1m, or off",
  parseWindow
)

export const integer = (min: number, max: number): Kind<number> =>
  kind(Schema.Int, `an integer ${min}..${max}`, parseIntegerIn(min, max))

export const boolean: Kind<boolean> = kind(Schema.Boolean, "true or false", parseBoolean)

export const host: Kind<string> = kind(Schema.String, "an IP address or host name", parseHost)

export const logLevel: Kind<LogLevel.LogLevel> = kind(
  Schema.Literals(LogLevel.values),
  "one of trace, debug, info, warn, error, fatal, none",
  parseLogLevel
)

export const logFormat: Kind<LogFormat> = kind(Schema.Literals(["pretty", "json"]), "pretty or json", parseLogFormat)

export const postgresUrl: Kind<string> = kind(Schema.String, "a postgres:// or postgresql:// URL", parseDatabaseUrl)

export const path: Kind<string> = kind(Schema.String, "a directory path", parsePath)

// ---------------------------------------------------------------------------
// Settings: a name, a kind, a default; read with `yield*`.
// ---------------------------------------------------------------------------

/** The provider with empty values taken for absent ones. */
const emptyIsUnset = (provider: ConfigProviderType.ConfigProvider): ConfigProviderType.ConfigProvider =>
  ConfigProvider.make((path) =>
    provider.load(path).pipe(
      Effect.map((node) => node?._tag === "Value" && node.value.trim() === "" ? undefined : node)
    )
  )

/** What a failed read expected, from the issue the kind's Schema raised. */
const expectedOf = (issue: SchemaIssue.Issue): string => {
  switch (issue._tag) {
    case "Pointer":
    case "Encoding":
    case "Filter":
      return expectedOf(issue.issue)
    case "Composite":
      return expectedOf(issue.issues[0])
    case "InvalidValue":
      return String(issue.annotations?.message ?? "a valid value")
    default:
      return String(issue)
  }
}

/**
 * One setting (docs/operations.md "Settings"): its environment variable,
 * read with its kind's syntax, its default when unset. Yielding it reads it
 * from the current `ConfigProvider`; a malformed value fails with
 * `InvalidSetting`.
 */
export class Setting<A> extends Effectable.Class<A, InvalidSetting> {
  /** The environment variable. */
  readonly name: string
  readonly config: Config.Config<A>
  /** A malformed value is reported without its text. */
  readonly secret: boolean

  constructor(name: string, config: Config.Config<A>, secret = false) {
    super()
    this.name = name
    this.config = config
    this.secret = secret
  }

  asEffect(): Effect.Effect<A, InvalidSetting> {
    const { config, name, secret } = this
    return Effect.gen(function*() {
      const provider = emptyIsUnset(yield* ConfigProvider.ConfigProvider)
      return yield* config.parse(provider).pipe(
        Effect.catchTag("ConfigError", (error) => {
          // The environment provider cannot fail to read; if a custom one does, it is a defect.
          if (error.cause._tag !== "SchemaError") return Effect.die(error)
          const expected = expectedOf(error.cause.issue)
          return provider.load([name]).pipe(
            Effect.orDie,
            Effect.flatMap((node) => {
              const got = node?._tag === "Value" ? node.value : ""
              return Effect.fail(
                new InvalidSetting({ setting: name, expected, got: secret ? `(${got.length} characters, not shown)` : got })
              )
            })
          )
        })
      )
    })
  }
}

/** A setting of `kind` under `name`, `defaultValue` when unset. */
export const make = <A>(name: string, kind: Kind<A>, defaultValue: A): Setting<A> =>
  new Setting(name, Config.schema(kind.schema, name).pipe(Config.withDefault(defaultValue)))

/** A setting without a default: None when unset. A secret one is never echoed when malformed. */
export const optional = <A>(name: string, kind: Kind<A>, options?: { readonly secret?: boolean }): Setting<Option.Option<A>> =>
  new Setting(name, Config.option(Config.schema(kind.schema, name)), options?.secret ?? false)

/** Reads every setting of `settings`, in order; the first malformed one fails (docs/development.md "Runtime"). */
export const checkAll = (settings: Iterable<Setting<unknown>>): Effect.Effect<void, InvalidSetting> =>
  Effect.forEach(settings, (setting) => setting.asEffect(), { discard: true })
