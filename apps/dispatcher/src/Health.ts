/**
 * The dispatcher's liveness and readiness for orchestrators
 * (docs/operations.md "Process endpoints"), the same answers as the API's
 * (apps/api/src/Health.ts) on DISPATCHER_PORT: `/health/live` is 200 while
 * the process runs; `/health/ready` is 200 while the delivery loop's last
 * step reached the database and the database answers within 2 s with every
 * migration this code expects, else 503 `not_ready` (the database away, or
 * the process starting), `database_refused` or `migrations_missing`
 * (libs/runtime/src/DatabaseStatus.ts), 503 `clock_skewed` (this machine's
 * clock more than a minute from the database's; docs/operations.md
 * "Clock"), or 503 `shutting_down` from SIGTERM on
 * (libs/runtime/src/Shutdown.ts; docs/operations.md "Shutdown"). The routes
 * listen before the loop runs, so they answer while the process waits for
 * its database.
 *
 * `/metrics` is the dispatcher's metrics in the Prometheus text format
 * (apps/dispatcher/src/Metrics.ts, docs/operations.md "Metrics").
 *
 * A plain node:http server: three fixed routes need no router.
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as SqlClient from "effect/sql/SqlClient"
import * as Http from "node:http"
import * as RequestId from "@school/domain/RequestId"
import { missingMigrations } from "@school/persistence/Migrations"
import * as DatabaseStatus from "@school/runtime/DatabaseStatus"
import { SHUTTING_DOWN, Stopping } from "@school/runtime/Shutdown"
import { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import * as RuntimeMetrics from "@school/runtime/Metrics"
import { listenUntilClosed } from "@school/runtime/Ports"
import { Dispatcher } from "./Dispatcher.ts"
import * as Metrics from "./Metrics.ts"

/** `DISPATCHER_PORT`: where these routes listen, on HOST; 0: any free port (`npm start` reads it too). */
export { DISPATCHER_PORT } from "@school/runtime/Settings"

const json = (response: Http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  response.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) })
  response.end(text)
}

/** The request's id (libs/domain/src/RequestId.ts), on every answer. */
const withRequestId = (request: Http.IncomingMessage, response: Http.ServerResponse): void => {
  const sent = request.headers[RequestId.HEADER]
  response.setHeader(RequestId.HEADER, RequestId.of(typeof sent === "string" ? sent : undefined))
}

const NOT_READY = DatabaseStatus.NOT_READY
const CLOCK_SKEWED = {
  error: { code: "clock_skewed", message: "This machine's clock is more than a minute from the database's: fix it (NTP)." }
}
const READY = { status: "ready" }

/** One check of the database: it answers and lacks no migration (one round trip, within 2 s). */
export const checkDatabase = DatabaseStatus.probe(missingMigrations)

/**
 * Listens on `host`:`port` (0: a free port) until the scope closes: the
 * port it listens on, and `running`, to call once the delivery loop runs.
 * Before that (the process waits for its database: away, refusing the
 * connection, lacking migrations), `/health/ready` answers 503 with the
 * database's state as `DatabaseStatus` last found it; after, it checks the
 * database on each call and asks the loop.
 */
export const serveHealth = (host: string, port: number) =>
  Effect.gen(function*() {
    const loop = Ref.makeUnsafe<Dispatcher["Service"] | undefined>(undefined)
    const sql = yield* SqlClient.SqlClient
    const { stopping } = yield* Stopping
    const status = yield* DatabaseStatus.DatabaseStatus
    const queue = yield* DeliveryQueue
    yield* RuntimeMetrics.processGauges
    yield* Metrics.initialize
    // With METRICS_PORT set, /metrics has a listener of its own (main.ts) and is 404 here.
    const metricsHere = yield* RuntimeMetrics.onOwnPort
    const context = yield* Effect.context<never>()
    const ready = Effect.gen(function*() {
      if (yield* stopping) return SHUTTING_DOWN
      const dispatcher = yield* Ref.get(loop)
      if (dispatcher === undefined) {
        const state = status.currentUnsafe()
        // Ready, and the loop not running yet: still starting.
        return DatabaseStatus.readinessBody(DatabaseStatus.isReady(state) ? DatabaseStatus.UNKNOWN : state)
      }
      if (yield* dispatcher.clockSkewed) return CLOCK_SKEWED
      const state = yield* Effect.provideService(checkDatabase, SqlClient.SqlClient, sql)
      if (!DatabaseStatus.isReady(state)) return DatabaseStatus.readinessBody(state)
      return (yield* dispatcher.ready) ? READY : NOT_READY
    })
    const server = Http.createServer((request, response) => {
      withRequestId(request, response)
      const path = (request.url ?? "").split("?")[0]
      if (request.method !== "GET" && request.method !== "HEAD") return json(response, 405, { error: { code: "method_not_allowed", message: "GET only." } })
      if (path === "/health/live") return json(response, 200, { status: "ok" })
      if (path === RuntimeMetrics.PATH && metricsHere) {
        return void Effect.runPromiseWith(context)(Metrics.render(queue)).then(
          (text) => {
            response.writeHead(200, { "content-type": RuntimeMetrics.CONTENT_TYPE, "content-length": String(Buffer.byteLength(text)) })
            response.end(text)
          },
          () => json(response, 500, { error: { code: "internal_error", message: "The metrics could not be rendered." } })
        )
      }
      if (path === "/health/ready") {
        return void Effect.runPromise(ready).then(
          (answer) => json(response, answer === READY ? 200 : 503, answer),
          () => json(response, 503, NOT_READY)
        )
      }
      return json(response, 404, { error: { code: "not_found", message: "No such route." } })
    })
    const listening = yield* listenUntilClosed(server, host, port)
    return {
      port: listening,
      /** The delivery loop runs: readiness asks it from now on. */
      running: (dispatcher: Dispatcher["Service"]) => Ref.set(loop, dispatcher)
    }
  })
