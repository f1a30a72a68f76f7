/**
 * The dispatcher process (docs/development.md "apps/dispatcher"; spec 6.5):
 * reads the settings, connects to DATABASE_URL, runs the delivery loop
 * (apps/dispatcher/src/Dispatcher.ts) and serves /health/live and
 * /health/ready on HOST:DISPATCHER_PORT, until SIGTERM/SIGINT: then it
 * stops claiming, lets the attempts in flight finish (WEBHOOK_TIMEOUT at
 * most), records them and exits 0. It says "dispatcher ready" (with the
 * port) once it runs. A database unreachable at start is one line and exit
 * 1 (as the API); one that goes away later is logged and waited for, and the
 * process keeps running.
 */
import { checkConnection } from "@school/local-postgres/Database"
import { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import * as Sql from "@school/persistence/Sql"
import { runMain } from "@school/runtime/Main"
import { cannotListen } from "@school/runtime/Ports"
import { InvalidSetting, Settings } from "@school/runtime/Settings"
import { Duration, Effect, Layer, Option } from "effect"
import { Dispatcher, optionsFromSettings } from "./Dispatcher.ts"
import { serveHealth } from "./Health.ts"

const program = Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isNone(settings.databaseUrl)) {
    return yield* new InvalidSetting({
      setting: "DATABASE_URL",
      expected: "a postgres:// URL (the dispatcher does not start a database; use npm start for that)",
      got: ""
    })
  }
  const options = optionsFromSettings(settings)
  const database = Sql.layer({
    url: settings.databaseUrl.value,
    // The loop, the recorder, the purge and /health/ready; LISTEN holds one more.
    maxConnections: 6,
    applicationName: "school-dispatcher",
    statementTimeout: settings.databaseStatementTimeout,
    acquireTimeout: settings.databaseAcquireTimeout
  })
  const pool = yield* Layer.build(database).pipe(Effect.orDie)
  // Reachable at start, or one line and exit 1; once running, an outage is waited for.
  yield* checkConnection(settings.databaseUrl.value).pipe(Effect.provideContext(pool))
  const context = yield* Layer.build(
    Dispatcher.layer(options).pipe(Layer.provideMerge(DeliveryQueue.layer), Layer.provideMerge(Layer.succeedContext(pool)))
  )
  const port = yield* serveHealth(settings.host, settings.dispatcherPort).pipe(
    Effect.provideContext(context),
    Effect.catch((cause) =>
      cannotListen({ host: settings.host, port: settings.dispatcherPort, setting: "DISPATCHER_PORT", cause })
    )
  )
  yield* Effect.logInfo(`dispatcher ready; health on http://${settings.host}:${port}/health/ready`, {
    port,
    concurrency: options.concurrency,
    timeout: Duration.format(options.timeout)
  })
  return yield* Effect.never
}).pipe(Effect.scoped, Effect.provide(Settings.layerWithLogging))

runMain(program)
