/**
 * The API process: checks its settings (ApiSettings.ts), serves the public API on HOST:PORT
 * against DATABASE_URL until SIGTERM/SIGINT. Then (docs/operations.md
 * "Shutdown"; libs/runtime/src/Shutdown.ts) /health/ready answers 503
 * `shutting_down` while everything else is served for SHUTDOWN_DELAY; then
 * it stops accepting, lets the requests in flight finish (SHUTDOWN_TIMEOUT
 * at most) and exits 0. An address it cannot listen on (already in use,
 * not ours) is one error line in the configured log format on stderr, and
 * exit 1.
 *
 * It listens first, then waits for its database: until the database answers
 * and has every migration (libs/runtime/src/DatabaseStatus.ts; checked again
 * every 2 s, its state logged once per change), every request gets an
 * answer from Health.ts's `answerUntilServed` (503, never silence); then the
 * routes serve, and it says "listening".
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { checkVersionIfReachable, describeUrl } from "@school/runtime/DatabaseConnection"
import * as DatabaseStatus from "@school/runtime/DatabaseStatus"
import * as Listening from "@school/runtime/Listening"
import { runMain } from "@school/runtime/Main"
import { cannotListen } from "@school/runtime/Ports"
import * as Settings from "@school/runtime/Settings"
import * as Shutdown from "@school/runtime/Shutdown"
import * as Tracing from "@school/runtime/Tracing"
import { ApiSettings } from "./ApiSettings.ts"
import { answerUntilServed, checkDatabase } from "./Health.ts"
import { ApiSqlLayer, apiHttpServer, Repositories, ServeLayerNoDeps } from "./Server.ts"

const program = Effect.gen(function*() {
  const host = yield* Settings.HOST
  const port = yield* Settings.PORT
  const address = `${host.includes(":") ? `[${host}]` : host}:${port}`
  const url = yield* Settings.requiredDatabaseUrl(
    "a postgres:// URL (the API process does not start a database; use npm start for that)"
  )
  const status = DatabaseStatus.make({ where: describeUrl(url) })
  const shutdown = yield* Shutdown.make
  // Listening first: from here on every request is answered, 503 until the routes serve it.
  const server = yield* Layer.build(apiHttpServer(answerUntilServed(status))).pipe(
    Effect.catchTag("ServeError", (error) => cannotListen({ host, port, setting: "PORT", cause: error.cause }))
  )
  const pool = yield* Layer.build(ApiSqlLayer).pipe(Effect.orDie)
  const check = Effect.provideContext(checkDatabase, pool)
  yield* DatabaseStatus.waitFor(status, check, DatabaseStatus.answers)
  // A PostgreSQL older than the oldest supported: one line, exit 1 (docs/operations.md "PostgreSQL versions").
  yield* checkVersionIfReachable.pipe(Effect.provideContext(pool))
  // `npm run migrate` while it waits makes it ready without a restart.
  yield* DatabaseStatus.waitFor(status, check, DatabaseStatus.isReady)
  // A database that goes away or refuses later is checked again until it is back.
  yield* Effect.forkScoped(DatabaseStatus.watch(status, check))
  yield* Layer.build(ServeLayerNoDeps.pipe(
    Layer.provide(Repositories),
    Layer.provide(Layer.succeedContext(Context.merge(server, pool))),
    Layer.provide(Layer.succeed(Shutdown.Stopping, shutdown)),
    Layer.provide(Layer.succeed(DatabaseStatus.DatabaseStatus, status))
  ))
  // Added last, so it runs first on SIGTERM: readiness 503, SHUTDOWN_DELAY, then the server closes.
  yield* Shutdown.drainFirst(shutdown, yield* Settings.SHUTDOWN_DELAY)
  yield* Effect.logInfo(`public API listening on http://${address}/api/public/v1`)
  // npm start prints its banner once its own children say they listen (libs/runtime/src/Listening.ts).
  yield* Listening.announce("api", port)
  return yield* Effect.never
}).pipe(Effect.scoped, Effect.provide(Tracing.layer("school-api")), Effect.provide(Settings.layer(ApiSettings, "api")))

runMain(program)
