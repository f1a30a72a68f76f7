/**
 * The dispatcher's liveness and readiness for orchestrators
 * (docs/operations.md "Process endpoints"), the same answers as the API's
 * (apps/api/src/Health.ts) on DISPATCHER_PORT: `/health/live` is 200 while
 * the process runs; `/health/ready` is 200 while the delivery loop's last
 * step reached the database and `SELECT 1` answers within 2 s, else 503
 * `not_ready` (the database away), 503 `clock_skewed` (this machine's clock
 * more than a minute from the database's; docs/operations.md "Clock"), or
 * 503 `shutting_down` from SIGTERM on (libs/runtime/src/Shutdown.ts;
 * docs/operations.md "Shutdown").
 *
 * `/metrics` is the dispatcher's metrics in the Prometheus text format
 * (apps/dispatcher/src/Metrics.ts, docs/operations.md "Metrics").
 *
 * A plain node:http server: three fixed routes need no router.
 */
import * as Effect from "effect/Effect"
import * as SqlClient from "effect/sql/SqlClient"
import * as Http from "node:http"
import * as RequestId from "@school/domain/RequestId"
import { SHUTTING_DOWN, Stopping } from "@school/runtime/Shutdown"
import { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import * as RuntimeMetrics from "@school/runtime/Metrics"
import * as SettingKinds from "@school/runtime/SettingKinds"
import { Dispatcher } from "./Dispatcher.ts"
import * as Metrics from "./Metrics.ts"

/** `DISPATCHER_PORT` (docs/operations.md "Settings"): where these routes listen, on HOST; 0: any free port. */
export const DISPATCHER_PORT = SettingKinds.make("DISPATCHER_PORT", SettingKinds.integer(0, 65535), 3001)

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

const NOT_READY = { error: { code: "not_ready", message: "The database does not answer." } }
const CLOCK_SKEWED = {
  error: { code: "clock_skewed", message: "This machine's clock is more than a minute from the database's: fix it (NTP)." }
}
const READY = { status: "ready" }

/**
 * Listens on `host`:`port` (0: a free port) until the scope closes; the
 * port it listens on.
 */
export const serveHealth = (host: string, port: number) =>
  Effect.gen(function*() {
    const dispatcher = yield* Dispatcher
    const sql = yield* SqlClient.SqlClient
    const { stopping } = yield* Stopping
    const queue = yield* DeliveryQueue
    yield* RuntimeMetrics.processGauges
    yield* Metrics.initialize
    const context = yield* Effect.context<never>()
    const ready = Effect.gen(function*() {
      if (yield* stopping) return SHUTTING_DOWN
      if (yield* dispatcher.clockSkewed) return CLOCK_SKEWED
      if (!(yield* dispatcher.ready)) return NOT_READY
      return yield* sql`SELECT 1`.pipe(Effect.timeout("2 seconds"), Effect.as(READY), Effect.orElseSucceed(() => NOT_READY))
    })
    const server = Http.createServer((request, response) => {
      withRequestId(request, response)
      const path = (request.url ?? "").split("?")[0]
      if (request.method !== "GET" && request.method !== "HEAD") return json(response, 405, { error: { code: "method_not_allowed", message: "GET only." } })
      if (path === "/health/live") return json(response, 200, { status: "ok" })
      if (path === RuntimeMetrics.PATH) {
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
    return yield* Effect.acquireRelease(
      Effect.callback<number, Error>((resume) => {
        server.once("error", (error) => resume(Effect.fail(error)))
        server.listen(port, host, () => {
          const address = server.address()
          resume(Effect.succeed(address !== null && typeof address === "object" ? address.port : port))
        })
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
  })
