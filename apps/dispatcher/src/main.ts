/**
 * The dispatcher process (docs/development.md "apps/dispatcher"), for now only its
 * shell: reads the settings, checks DATABASE_URL answers (`SELECT 1`), says it
 * is ready, and waits until SIGTERM/SIGINT, then exits 0.
 */
import { checkConnection } from "@school/local-postgres/Database"
import * as Sql from "@school/persistence/Sql"
import { runMain } from "@school/runtime/Main"
import { InvalidSetting, Settings } from "@school/runtime/Settings"
import { Duration, Effect, Option } from "effect"

const program = Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isNone(settings.databaseUrl)) {
    return yield* new InvalidSetting({
      setting: "DATABASE_URL",
      expected: "a postgres:// URL (the dispatcher does not start a database; use npm start for that)",
      got: ""
    })
  }
  const url = settings.databaseUrl.value
  yield* Effect.gen(function*() {
    yield* checkConnection(url)
    yield* Effect.logInfo("dispatcher ready", {
      concurrency: settings.dispatcherConcurrency,
      retryDelays: settings.webhookRetryDelays.map(Duration.format),
      timeout: Duration.format(settings.webhookTimeout)
    })
    return yield* Effect.never
  }).pipe(
    Effect.provide(Sql.layer({ url, maxConnections: 2, applicationName: "school-dispatcher" })),
    Effect.onInterrupt(() => Effect.logInfo("dispatcher stopping"))
  )
}).pipe(Effect.provide(Settings.layerWithLogging))

runMain(program)
