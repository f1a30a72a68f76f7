/**
 * The API process: reads the settings, serves the public API on HOST:PORT
 * against DATABASE_URL until SIGTERM/SIGINT. Then (docs/operations.md
 * "Shutdown"; libs/runtime/src/Shutdown.ts) /health/ready answers 503
 * `shutting_down` while everything else is served for SHUTDOWN_DELAY; then
 * it stops accepting, lets the requests in flight finish (SHUTDOWN_TIMEOUT
 * at most) and exits 0. It says "listening" only once it listens; an address
 * it cannot listen on (already in use, not ours) is one error line in the
 * configured log format on stderr, and exit 1.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { runMain } from "@school/runtime/Main"
import { cannotListen } from "@school/runtime/Ports"
import { InvalidSetting, Settings } from "@school/runtime/Settings"
import * as Shutdown from "@school/runtime/Shutdown"
import { ServerLayer, serverOptions } from "./Server.ts"

const program = Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isNone(settings.databaseUrl)) {
    return yield* new InvalidSetting({
      setting: "DATABASE_URL",
      expected: "a postgres:// URL (the API process does not start a database; use npm start for that)",
      got: ""
    })
  }
  const address = `${settings.host.includes(":") ? `[${settings.host}]` : settings.host}:${settings.port}`
  const shutdown = yield* Shutdown.make
  yield* Layer.build(
    ServerLayer(serverOptions(settings, settings.databaseUrl.value)).pipe(Layer.provide(Layer.succeed(Shutdown.Stopping, shutdown)))
  ).pipe(
    Effect.catchTag("ServeError", (error) =>
      cannotListen({ host: settings.host, port: settings.port, setting: "PORT", cause: error.cause }))
  )
  // Added last, so it runs first on SIGTERM: readiness 503, SHUTDOWN_DELAY, then the server closes.
  yield* Shutdown.drainFirst(shutdown, settings.shutdownDelay)
  yield* Effect.logInfo(`public API listening on http://${address}/api/public/v1`)
  return yield* Effect.never
}).pipe(Effect.scoped, Effect.provide(Settings.layerWithLogging))

runMain(program)
