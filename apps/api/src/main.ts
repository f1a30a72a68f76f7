/**
 * The API process: reads the settings, serves the public API on HOST:PORT
 * against DATABASE_URL until SIGTERM/SIGINT, then lets in-flight requests
 * finish and exits 0.
 */
import { Effect, Layer, Option } from "effect"
import { runMain } from "@school/runtime/Main"
import { InvalidSetting, Settings } from "@school/runtime/Settings"
import { ServerLayer } from "./Server.ts"

const program = Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isNone(settings.databaseUrl)) {
    return yield* new InvalidSetting({
      setting: "DATABASE_URL",
      expected: "a postgres:// URL (the API process does not start a database; use npm start for that)",
      got: ""
    })
  }
  yield* Effect.logInfo(`public API listening on http://${settings.host}:${settings.port}/api/public/v1`)
  return yield* Layer.launch(ServerLayer({
    databaseUrl: settings.databaseUrl.value,
    port: settings.port,
    host: settings.host,
    rateLimitWindow: settings.rateLimitWindow,
    idempotencyWait: settings.idempotencyWait,
    statementTimeout: settings.databaseStatementTimeout,
    acquireTimeout: settings.databaseAcquireTimeout
  }))
}).pipe(Effect.provide(Settings.layerWithLogging))

runMain(program)
