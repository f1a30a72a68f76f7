/**
 * Owns the settings that more than one process reads (docs/operations.md
 * "Settings"), and the start of every process: every setting it reads is
 * checked, then its logger is installed (LOG_LEVEL, LOG_FORMAT).
 *
 * A setting that one process alone reads is defined next to the code that
 * uses it, in that process (e.g. RATE_LIMIT_WINDOW in
 * apps/api/src/RateLimiter.ts); each process lists the settings it reads
 * (apps/api/src/ApiSettings.ts, apps/dispatcher/src/DispatcherSettings.ts,
 * apps/cli/src/CliSettings.ts), and `layer` checks that list before the
 * process does anything, so a malformed setting stops it with one line
 * even where the code that reads it would run later (docs/development.md
 * "Runtime"). What a setting is, and its kinds, is `SettingKinds.ts`.
 */
import { parseKey as parseWebhookSecretKey } from "@school/domain/WebhookSecret"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Logging from "./Logging.ts"
import * as SettingKinds from "./SettingKinds.ts"
import { InvalidSetting, type Setting } from "./SettingKinds.ts"
import { OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME } from "./Tracing.ts"

/** `DATABASE_URL`; None: "use the embedded PostgreSQL" where a process can (npm start, the CLI). */
export const DATABASE_URL = SettingKinds.optional("DATABASE_URL", SettingKinds.postgresUrl)

/** `HOST`: where the API and the dispatcher listen. */
export const HOST = SettingKinds.make("HOST", SettingKinds.host, "127.0.0.1")

/** `PORT`: the API's port (`npm start` checks it is free before it starts anything). */
export const PORT = SettingKinds.make("PORT", SettingKinds.integer(1, 65535), 3000)

/**
 * `DISPATCHER_PORT` (docs/operations.md "Settings"): the dispatcher's own
 * listener on HOST (apps/dispatcher/src/Health.ts); 0: any free port. Read
 * by the dispatcher and by `npm start`, which checks it is free first.
 */
export const DISPATCHER_PORT = SettingKinds.make("DISPATCHER_PORT", SettingKinds.integer(0, 65535), 3001)

/**
 * `METRICS_PORT` (docs/operations.md "Metrics"): None, `/metrics` on the
 * process's own port; else a listener of its own on HOST serves `/metrics`
 * and the process's own port answers 404 there (libs/runtime/src/Metrics.ts
 * `serveSeparately`). Read by the API, the dispatcher and `npm start`.
 */
export const METRICS_PORT = SettingKinds.optional("METRICS_PORT", SettingKinds.integer(1, 65535))

export const LOG_LEVEL = SettingKinds.make("LOG_LEVEL", SettingKinds.logLevel, "Info")

export const LOG_FORMAT = SettingKinds.make(
  "LOG_FORMAT",
  SettingKinds.logFormat,
  // Whether stderr is a terminal does not change while the process runs.
  process.stderr.isTTY ? "pretty" : "json"
)

/** `DATABASE_STATEMENT_TIMEOUT`: the bound on each statement of the API's and the dispatcher's pools. */
export const DATABASE_STATEMENT_TIMEOUT = SettingKinds.make(
  "DATABASE_STATEMENT_TIMEOUT",
  SettingKinds.positiveDuration,
  Duration.seconds(5)
)

/** `DATABASE_ACQUIRE_TIMEOUT`: the bound on the wait for a pooled connection, in the same pools. */
export const DATABASE_ACQUIRE_TIMEOUT = SettingKinds.make(
  "DATABASE_ACQUIRE_TIMEOUT",
  SettingKinds.positiveDuration,
  Duration.seconds(2)
)

/** `SHUTDOWN_DELAY`: after SIGTERM, how long a process keeps serving while its readiness says 503 (docs/operations.md "Shutdown"). */
export const SHUTDOWN_DELAY = SettingKinds.make("SHUTDOWN_DELAY", SettingKinds.duration, Duration.zero)

/**
 * `SHUTDOWN_TIMEOUT`: how long the API then waits for the requests in
 * flight before cutting them (docs/operations.md "Shutdown"). The
 * dispatcher checks it at start too, as one of the two shutdown settings.
 */
export const SHUTDOWN_TIMEOUT = SettingKinds.make("SHUTDOWN_TIMEOUT", SettingKinds.positiveDuration, Duration.seconds(10))

/** `WEBHOOK_ALLOW_INSECURE_URLS`: http and internal receivers accepted (development and tests only). */
export const WEBHOOK_ALLOW_INSECURE_URLS = SettingKinds.make("WEBHOOK_ALLOW_INSECURE_URLS", SettingKinds.boolean, false)

/**
 * `NODE_ENV` (docs/operations.md "Settings"): `production`, which the
 * container image sets, refuses what is for development only (a missing
 * WEBHOOK_SECRET_KEY); any other value, or none, is development.
 */
export const NODE_ENV = SettingKinds.make(
  "NODE_ENV",
  SettingKinds.kind(Schema.String, "any text", (text) => Option.some(text.trim())),
  "development"
)

/** Whether the process runs in production (NODE_ENV=production). */
export const isProduction: Effect.Effect<boolean, InvalidSetting> = Effect.map(NODE_ENV.asEffect(), (env) => env === "production")

/**
 * An optional setting that production requires: unset (or empty) under
 * NODE_ENV=production, it fails like a malformed one, with one line naming
 * it (docs/development.md "Runtime"); in development it stays None.
 */
class RequiredInProduction<A> extends SettingKinds.Setting<Option.Option<A>> {
  readonly expected: string
  constructor(setting: Setting<Option.Option<A>>, expected: string) {
    super(setting.name, setting.config, setting.secret)
    this.expected = expected
  }
  override asEffect(): Effect.Effect<Option.Option<A>, InvalidSetting> {
    const { expected, name } = this
    return Effect.flatMap(super.asEffect(), (value): Effect.Effect<Option.Option<A>, InvalidSetting> =>
      Option.isSome(value)
        ? Effect.succeed(value)
        : Effect.flatMap(isProduction, (production) =>
          production
            ? Effect.fail(new InvalidSetting({ setting: name, expected: `${expected} (required when NODE_ENV=production)`, got: "" }))
            : Effect.succeed(value)))
  }
}

const WEBHOOK_SECRET_KEY_SYNTAX = "the base64 of 32 bytes, e.g. from openssl rand -base64 32"

/**
 * `WEBHOOK_SECRET_KEY` (base64 of 32 bytes): encrypts webhook secrets at
 * rest (the API) and decrypts them to sign (the dispatcher); None: the
 * development key, which production (NODE_ENV=production) refuses: the
 * process stops at start with one line naming the setting. A malformed one
 * is reported without its text.
 */
export const WEBHOOK_SECRET_KEY = new RequiredInProduction(
  SettingKinds.optional(
    "WEBHOOK_SECRET_KEY",
    SettingKinds.kind(Schema.Uint8Array, WEBHOOK_SECRET_KEY_SYNTAX, parseWebhookSecretKey),
    { secret: true }
  ),
  WEBHOOK_SECRET_KEY_SYNTAX
)

/** DATABASE_URL where the process cannot do without one; unset, it stops with `expected` as the reason. */
/**
 * What both serving processes (the API and the dispatcher) read beside their
 * own settings: the database, the listen host, logging, shutdown, the webhook
 * secrets' key and receivers' rule, traces, and where `/metrics` is served.
 */
export const SERVING: ReadonlyArray<Setting<unknown>> = [
  DATABASE_URL,
  HOST,
  LOG_LEVEL,
  LOG_FORMAT,
  WEBHOOK_ALLOW_INSECURE_URLS,
  NODE_ENV,
  WEBHOOK_SECRET_KEY,
  DATABASE_STATEMENT_TIMEOUT,
  DATABASE_ACQUIRE_TIMEOUT,
  SHUTDOWN_DELAY,
  SHUTDOWN_TIMEOUT,
  OTEL_EXPORTER_OTLP_ENDPOINT,
  OTEL_SERVICE_NAME,
  METRICS_PORT
]

export const requiredDatabaseUrl = (expected: string): Effect.Effect<string, InvalidSetting> =>
  Effect.flatMap(
    DATABASE_URL.asEffect(),
    Option.match({
      onNone: () => Effect.fail(new InvalidSetting({ setting: "DATABASE_URL", expected, got: "" })),
      onSome: Effect.succeed
    })
  )

/**
 * The start of a process (docs/development.md "Runtime"): checks every
 * setting it reads (`settings`, the process's list), the first malformed
 * one fails, then installs the logger LOG_LEVEL and LOG_FORMAT ask for for
 * everything above, its JSON lines naming `service` (docs/operations.md
 * "Log lines").
 */
export const layer = (settings: Iterable<Setting<unknown>>, service: Logging.Service): Layer.Layer<never, InvalidSetting> =>
  Layer.unwrap(Effect.gen(function*() {
    yield* SettingKinds.checkAll(settings)
    return Logging.layer({ logLevel: yield* LOG_LEVEL, logFormat: yield* LOG_FORMAT, service })
  }))
