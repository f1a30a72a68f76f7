/**
 * The dispatcher process (docs/development.md "apps/dispatcher";
 * docs/integrators.md "Receiving webhooks"):
 * checks its settings (DispatcherSettings.ts), connects to DATABASE_URL, runs the delivery loop
 * (apps/dispatcher/src/Dispatcher.ts) and serves /health/live and
 * /health/ready on HOST:DISPATCHER_PORT, until SIGTERM/SIGINT: then
 * (docs/operations.md "Shutdown") /health/ready answers 503 `shutting_down`
 * while it goes on delivering for SHUTDOWN_DELAY; then it stops claiming,
 * lets the attempts in flight finish (WEBHOOK_TIMEOUT at most), records
 * them, closes its health routes last and exits 0. It says "dispatcher ready" (with the
 * port) once it runs. A database unreachable at start is one line and exit
 * 1; one that answers no (the login, the database name, too many clients,
 * starting up) or lacks migrations is logged once and waited for, checked
 * again every 2 s (libs/runtime/src/DatabaseStatus.ts): its health routes
 * answer meanwhile (`/health/ready` 503 with the reason) and it claims
 * nothing until the database is ready. One that goes away later is logged
 * and waited for, and the process keeps running.
 */
import { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import { Listeners } from "@school/persistence/Listeners"
import * as Sql from "@school/persistence/Sql"
import { checkConnection, describeUrl } from "@school/runtime/DatabaseConnection"
import * as DatabaseStatus from "@school/runtime/DatabaseStatus"
import { runMain } from "@school/runtime/Main"
import { cannotListen } from "@school/runtime/Ports"
import * as Listening from "@school/runtime/Listening"
import * as Settings from "@school/runtime/Settings"
import * as Shutdown from "@school/runtime/Shutdown"
import * as Tracing from "@school/runtime/Tracing"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { Dispatcher, DISPATCHER_CONCURRENCY, WEBHOOK_TIMEOUT } from "./Dispatcher.ts"
import { DispatcherSettings } from "./DispatcherSettings.ts"
import { checkDatabase, DISPATCHER_PORT, serveHealth } from "./Health.ts"
import * as Metrics from "./Metrics.ts"

const program = Effect.gen(function*() {
  const url = yield* Settings.requiredDatabaseUrl(
    "a postgres:// URL (the dispatcher does not start a database; use npm start for that)"
  )
  const host = yield* Settings.HOST
  const dispatcherPort = yield* DISPATCHER_PORT
  const database = Sql.layer({
    url,
    // The loop, the recorder, the purge and /health/ready; LISTEN holds one more.
    maxConnections: 6,
    applicationName: "school-dispatcher",
    // Every statement of the queue is keyed; no plan made on a small table's statistics scans it once it has grown.
    sequentialScans: false,
    statementTimeout: yield* Settings.DATABASE_STATEMENT_TIMEOUT,
    acquireTimeout: yield* Settings.DATABASE_ACQUIRE_TIMEOUT
  })
  const pool = yield* Layer.build(database).pipe(Effect.orDie)
  const status = DatabaseStatus.make({ where: describeUrl(url), label: "dispatcher: " })
  const check = Effect.provideContext(checkDatabase, pool)
  // Reachable at start, or one line and exit 1; a database that answers no, or lacks migrations, is waited for.
  const first = yield* check
  if (!DatabaseStatus.answers(first) && first._tag !== "Refused") yield* checkConnection(url).pipe(Effect.provideContext(pool))
  const queue = Context.merge(
    pool,
    yield* Layer.build(Layer.mergeAll(DeliveryQueue.layer, Listeners.layer).pipe(Layer.provide(Layer.succeedContext(pool))))
  )
  const shutdown = yield* Shutdown.make
  // The health routes answer from here on, while it waits for its database too.
  const health = yield* serveHealth(host, dispatcherPort).pipe(
    Effect.provideContext(queue),
    Effect.provideService(Shutdown.Stopping, shutdown),
    Effect.provideService(DatabaseStatus.DatabaseStatus, status),
    Effect.catch((cause) => cannotListen({ host, port: dispatcherPort, setting: "DISPATCHER_PORT", cause }))
  )
  const port = health.port
  yield* DatabaseStatus.waitFor(status, check, DatabaseStatus.answers)
  // A PostgreSQL older than the oldest supported: one line and exit 1.
  yield* checkConnection(url).pipe(Effect.provideContext(pool))
  // Nothing is claimed before every migration is there: `npm run migrate` lets it start without a restart.
  yield* DatabaseStatus.waitFor(status, check, DatabaseStatus.isReady)
  // The loop gets a scope of its own, so a stop can end it while the health routes still answer.
  const loopScope = yield* Effect.acquireRelease(Scope.make(), (scope, exit) => Scope.close(scope, exit))
  const context = yield* Layer.buildWithScope(Dispatcher.layer.pipe(Layer.provideMerge(Layer.succeedContext(queue))), loopScope)
  yield* health.running(Context.get(context, Dispatcher))
  // With METRICS_PORT set, /metrics on a listener of its own; then npm start learns we listen.
  yield* Metrics.serveSeparately.pipe(Effect.provideContext(context))
  yield* Listening.announce("dispatcher", port)
  yield* Effect.logInfo(`dispatcher ready; health on http://${host}:${port}/health/ready`, {
    port,
    concurrency: yield* DISPATCHER_CONCURRENCY,
    timeout: Duration.format(yield* WEBHOOK_TIMEOUT)
  })
  // On SIGTERM, in the reverse order of these two: readiness 503 and SHUTDOWN_DELAY; then the loop
  // stops; the health routes close after it.
  yield* Effect.addFinalizer(() => Scope.close(loopScope, Exit.void))
  yield* Shutdown.drainFirst(shutdown, yield* Settings.SHUTDOWN_DELAY)
  return yield* Effect.never
}).pipe(
  Effect.scoped,
  // Its loops poll: only the spans of work done are recorded (libs/runtime/src/Tracing.ts).
  Effect.provide(Tracing.layer("school-dispatcher", { ambient: false })),
  Effect.provide(Settings.layer(DispatcherSettings, "dispatcher"))
)

runMain(program)
