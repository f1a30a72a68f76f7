/**
 * How the processes start and stop (docs/operations.md "Settings",
 * docs/development.md "Runtime"): settings are read once and a malformed one stops the process
 * with one line naming it; the dispatcher stops cleanly on SIGTERM;
 * `npm run migrate` is idempotent. The processes started here listen on
 * port 0, never a fixed port, so files running side by side cannot collide.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { IDEMPOTENCY_WAIT } from "@school/api/IdempotentWrite"
import { RATE_LIMIT_WINDOW } from "@school/api/RateLimiter"
import { SESSION_TTL } from "@school/api/http/backoffice/Sessions"
import { DATA_DIR } from "@school/cli/Database"
import { DISPATCHER_CONCURRENCY, WEBHOOK_RETRY_DELAYS, WEBHOOK_TIMEOUT } from "@school/dispatcher/Dispatcher"
import * as Settings from "@school/runtime/Settings"
import { ConfigProvider, Duration, Effect, Option } from "effect"
import { entryPoints, lines, run, runUntil } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

/** The settings these tests look at, each read where the processes define it. */
const settings = Effect.all({
  databaseUrl: Settings.DATABASE_URL,
  dataDir: DATA_DIR,
  port: Settings.PORT,
  host: Settings.HOST,
  logLevel: Settings.LOG_LEVEL,
  logFormat: Settings.LOG_FORMAT,
  idempotencyWait: IDEMPOTENCY_WAIT,
  webhookRetryDelays: WEBHOOK_RETRY_DELAYS,
  webhookTimeout: WEBHOOK_TIMEOUT,
  webhookAllowInsecureUrls: Settings.WEBHOOK_ALLOW_INSECURE_URLS,
  dispatcherConcurrency: DISPATCHER_CONCURRENCY,
  rateLimitWindow: RATE_LIMIT_WINDOW,
  sessionTtl: SESSION_TTL,
  shutdownDelay: Settings.SHUTDOWN_DELAY,
  shutdownTimeout: Settings.SHUTDOWN_TIMEOUT
})

const loadFrom = (env: Record<string, string>) =>
  settings.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

describe("settings", () => {
  it.effect("defaults (docs/operations.md \"Settings\")", () =>
    Effect.gen(function*() {
      const settings = yield* loadFrom({})
      assert.isTrue(Option.isNone(settings.databaseUrl))
      assert.strictEqual(settings.port, 3000)
      assert.strictEqual(settings.host, "127.0.0.1")
      assert.strictEqual(settings.logLevel, "Info")
      assert.strictEqual(Duration.toMillis(settings.idempotencyWait), 2_000)
      assert.deepStrictEqual(settings.webhookRetryDelays.map(Duration.toMillis), [60_000, 300_000, 1_800_000])
      assert.strictEqual(Duration.toMillis(settings.webhookTimeout), 10_000)
      assert.isFalse(settings.webhookAllowInsecureUrls)
      assert.strictEqual(settings.dispatcherConcurrency, 32)
      assert.isTrue(Option.isNone(settings.dataDir))
      assert.deepStrictEqual(Option.map(settings.rateLimitWindow, Duration.toMillis), Option.some(60_000))
      assert.strictEqual(Duration.toMillis(settings.shutdownDelay), 0)
      assert.strictEqual(Duration.toMillis(settings.shutdownTimeout), 10_000)
    }))

  it.effect("SHUTDOWN_DELAY and SHUTDOWN_TIMEOUT (docs/operations.md \"Shutdown\")", () =>
    Effect.gen(function*() {
      const settings = yield* loadFrom({ SHUTDOWN_DELAY: "5s", SHUTDOWN_TIMEOUT: "1m" })
      assert.strictEqual(Duration.toMillis(settings.shutdownDelay), 5_000)
      assert.strictEqual(Duration.toMillis(settings.shutdownTimeout), 60_000)
      assert.strictEqual(Duration.toMillis((yield* loadFrom({ SHUTDOWN_DELAY: "0s" })).shutdownDelay), 0)
    }))

  it.effect("values as the contract writes them", () =>
    Effect.gen(function*() {
      const settings = yield* loadFrom({
        DATABASE_URL: "postgresql://app:secret@db:5432/school",
        PORT: "8080",
        HOST: "0.0.0.0",
        LOG_LEVEL: "debug",
        LOG_FORMAT: "json",
        IDEMPOTENCY_WAIT: "250ms",
        WEBHOOK_RETRY_DELAYS: "250ms, 5s,1m",
        WEBHOOK_TIMEOUT: "5s",
        WEBHOOK_ALLOW_INSECURE_URLS: "true",
        DISPATCHER_CONCURRENCY: "4",
        DATA_DIR: "/var/lib/school/postgres",
        RATE_LIMIT_WINDOW: "off"
      })
      assert.deepStrictEqual(settings.databaseUrl, Option.some("postgresql://app:secret@db:5432/school"))
      assert.strictEqual(settings.port, 8080)
      assert.strictEqual(settings.host, "0.0.0.0")
      assert.strictEqual(settings.logLevel, "Debug")
      assert.strictEqual(settings.logFormat, "json")
      assert.strictEqual(Duration.toMillis(settings.idempotencyWait), 250)
      assert.deepStrictEqual(settings.webhookRetryDelays.map(Duration.toMillis), [250, 5_000, 60_000])
      assert.strictEqual(Duration.toMillis(settings.webhookTimeout), 5_000)
      assert.isTrue(settings.webhookAllowInsecureUrls)
      assert.strictEqual(settings.dispatcherConcurrency, 4)
      assert.deepStrictEqual(settings.dataDir, Option.some("/var/lib/school/postgres"))
      assert.isTrue(Option.isNone(settings.rateLimitWindow))
    }))

  it.effect("an empty variable counts as unset", () =>
    Effect.gen(function*() {
      const settings = yield* loadFrom({ PORT: "", DATABASE_URL: "" })
      assert.strictEqual(settings.port, 3000)
      assert.isTrue(Option.isNone(settings.databaseUrl))
    }))

  it.effect.each([
    ["PORT", "abc", "invalid setting PORT: expected an integer 1..65535, got \"abc\""],
    ["PORT", "70000", "invalid setting PORT: expected an integer 1..65535, got \"70000\""],
    ["DATABASE_URL", "mysql://x", "invalid setting DATABASE_URL"],
    ["HOST", "not a host", "invalid setting HOST"],
    ["LOG_LEVEL", "loud", "invalid setting LOG_LEVEL"],
    ["LOG_FORMAT", "xml", "invalid setting LOG_FORMAT"],
    ["IDEMPOTENCY_WAIT", "2", "invalid setting IDEMPOTENCY_WAIT"],
    ["WEBHOOK_RETRY_DELAYS", "1m,,5m", "invalid setting WEBHOOK_RETRY_DELAYS"],
    ["WEBHOOK_TIMEOUT", "soon", "invalid setting WEBHOOK_TIMEOUT"],
    ["WEBHOOK_ALLOW_INSECURE_URLS", "maybe", "invalid setting WEBHOOK_ALLOW_INSECURE_URLS"],
    ["DISPATCHER_CONCURRENCY", "0", "invalid setting DISPATCHER_CONCURRENCY"],
    ["SESSION_TTL", "0s", "invalid setting SESSION_TTL"],
    ["SESSION_TTL", "12", "invalid setting SESSION_TTL"],
    ["SHUTDOWN_DELAY", "5", "invalid setting SHUTDOWN_DELAY: expected a duration like 250ms, 5s, 1m or 2h, got \"5\""],
    ["SHUTDOWN_DELAY", "-1s", "invalid setting SHUTDOWN_DELAY"],
    ["SHUTDOWN_TIMEOUT", "0s", "invalid setting SHUTDOWN_TIMEOUT: expected a positive duration"],
    ["SHUTDOWN_TIMEOUT", "soon", "invalid setting SHUTDOWN_TIMEOUT"]
  ] as const)("malformed %s=%s is named", ([name, value, message]) =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(loadFrom({ [name]: value }))
      assert.strictEqual(error.setting, name)
      assert.isTrue(error.message.startsWith(message), error.message)
    }))
})

describe("RATE_LIMIT_WINDOW", () => {
  const window = (env: Record<string, string>) =>
    loadFrom(env).pipe(Effect.map((settings) => Option.map(settings.rateLimitWindow, Duration.toMillis)))

  it.effect("defaults to the documented 60 s; a duration shortens it; off turns it off", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* window({}), Option.some(60_000))
      assert.deepStrictEqual(yield* window({ RATE_LIMIT_WINDOW: "5s" }), Option.some(5_000))
      assert.deepStrictEqual(yield* window({ RATE_LIMIT_WINDOW: "250ms" }), Option.some(250))
      assert.deepStrictEqual(yield* window({ RATE_LIMIT_WINDOW: "off" }), Option.none())
    }))

  it.effect.each(["0s", "soon", "-1s"])("%s is refused, naming the setting", (value) =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(window({ RATE_LIMIT_WINDOW: value }))
      assert.strictEqual(error.setting, "RATE_LIMIT_WINDOW")
      assert.match(error.message, /^invalid setting RATE_LIMIT_WINDOW: expected a positive duration/)
    }))
})

describe("a malformed setting stops the process at start", () => {
  it.live.each([
    ["cli", entryPoints.cli, ["demo", "seed", "--json"], { PORT: "abc" }, "PORT"],
    ["migrate", entryPoints.migrate, [], { LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    ["dispatcher", entryPoints.dispatcher, [], { WEBHOOK_RETRY_DELAYS: "1m,soon" }, "WEBHOOK_RETRY_DELAYS"],
    ["api", entryPoints.api, [], { SHUTDOWN_DELAY: "soon" }, "SHUTDOWN_DELAY"],
    ["dispatcher", entryPoints.dispatcher, [], { SHUTDOWN_TIMEOUT: "0s" }, "SHUTDOWN_TIMEOUT"]
  ] as const)("%s: one line naming it, non-zero exit", ([, script, args, env, name]) =>
    Effect.gen(function*() {
      const result = yield* run(script, args, { ...env, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" })
      assert.notStrictEqual(result.code, 0)
      assert.strictEqual(result.stdout, "")
      assert.deepStrictEqual(lines(result.stderr).length, 1, result.stderr)
      assert.match(result.stderr, new RegExp(`^invalid setting ${name}: expected .+, got ".*"\\n$`))
    }))
})

layer(TestDatabase.layer, { excludeTestServices: true })("processes against a database", (it) => {
  it.effect("the dispatcher says it is ready and exits 0 on SIGTERM", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const result = yield* runUntil(
        entryPoints.dispatcher,
        { DATABASE_URL: database.url, DISPATCHER_PORT: "0", LOG_FORMAT: "json" },
        "dispatcher ready",
        "SIGTERM",
        () => Effect.void
      )
      assert.isTrue(result.becameReady, result.stderr)
      assert.strictEqual(result.code, 0, result.stderr)
    }))

  it.effect("the dispatcher exits 0 on SIGINT too", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const result = yield* runUntil(
        entryPoints.dispatcher,
        { DATABASE_URL: database.url, DISPATCHER_PORT: "0" },
        "dispatcher ready",
        "SIGINT",
        () => Effect.void
      )
      assert.isTrue(result.becameReady, result.stderr)
      assert.strictEqual(result.code, 0, result.stderr)
    }))

  it.effect("an unreachable database is one line and a non-zero exit", () =>
    Effect.gen(function*() {
      const result = yield* run(entryPoints.dispatcher, [], { DATABASE_URL: "postgres://nobody:pw@127.0.0.1:1/none" })
      assert.notStrictEqual(result.code, 0)
      assert.deepStrictEqual(lines(result.stderr), [
        "error: cannot connect to the database at 127.0.0.1:1/none: connect ECONNREFUSED 127.0.0.1:1"
      ])
    }))

  it.effect("npm run migrate is idempotent", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const migrate = run(entryPoints.migrate, [], { DATABASE_URL: database.url, LOG_FORMAT: "json" })
      const first = yield* migrate
      assert.strictEqual(first.code, 0, first.stderr)
      const again = yield* migrate
      assert.strictEqual(again.code, 0, again.stderr)
      assert.include(again.stderr, "up to date")
      const missing = yield* run(entryPoints.migrate, [], {})
      assert.notStrictEqual(missing.code, 0)
      assert.match(missing.stderr, /^invalid setting DATABASE_URL/)
    }))
})
