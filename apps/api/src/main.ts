/**
 * The API process: checks its settings (ApiSettings.ts), serves the public API on HOST:PORT
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
import { runMain } from "@school/runtime/Main"
import { cannotListen } from "@school/runtime/Ports"
import * as Settings from "@school/runtime/Settings"
import * as Shutdown from "@school/runtime/Shutdown"
import * as Tracing from "@school/runtime/Tracing"
import { ApiSettings } from "./ApiSettings.ts"
import { ServerLayer } from "./Server.ts"

const program = Effect.gen(function*() {
  const host = yield* Settings.HOST
  const port = yield* Settings.PORT
  const address = `${host.includes(":") ? `[${host}]` : host}:${port}`
  const shutdown = yield* Shutdown.make
  yield* Layer.build(ServerLayer.pipe(Layer.provide(Layer.succeed(Shutdown.Stopping, shutdown)))).pipe(
    Effect.catchTag("ServeError", (error) => cannotListen({ host, port, setting: "PORT", cause: error.cause }))
  )
  // Added last, so it runs first on SIGTERM: readiness 503, SHUTDOWN_DELAY, then the server closes.
  yield* Shutdown.drainFirst(shutdown, yield* Settings.SHUTDOWN_DELAY)
  yield* Effect.logInfo(`public API listening on http://${address}/api/public/v1`)
  return yield* Effect.never
}).pipe(Effect.scoped, Effect.provide(Tracing.layer("school-api")), Effect.provide(Settings.layer(ApiSettings)))

runMain(program)
