/**
 * Liveness and readiness for orchestrators (docs/operations.md "Process
 * endpoints"): ready means the database answers and has every migration
 * this code expects (libs/runtime/src/DatabaseStatus.ts), and the process
 * is not stopping (libs/runtime/src/Shutdown.ts: 503 `shutting_down` from
 * SIGTERM on); each probe checks again, with one round trip.
 *
 * Before the routes serve (the process is starting, or waits for its
 * database: away, refusing the connection, lacking migrations), the port
 * already answers every request itself (`answerUntilServed`): 200 on
 * `/health/live`, 503 with the database's state on `/health/ready`, and 503
 * `service_unavailable` with `Retry-After` in the path's envelope on
 * anything else; never silence.
 */
import * as RequestId from "@school/domain/RequestId"
import { missingMigrations } from "@school/persistence/Migrations"
import * as DatabaseStatus from "@school/runtime/DatabaseStatus"
import { Stopping, SHUTTING_DOWN } from "@school/runtime/Shutdown"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as SqlClient from "effect/sql/SqlClient"
import type * as Http from "node:http"
import { unavailableError } from "./ErrorEnvelope.ts"
import { JSON_CONTENT_TYPE } from "./ErrorResponse.ts"

/** One check of the database: it answers and lacks no migration (one round trip, within 2 s). */
export const checkDatabase = DatabaseStatus.probe(missingMigrations)

export const HEALTH_ROUTES = [["GET", "/health/live"], ["GET", "/health/ready"]] as const

export const HealthRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/health/live", HttpServerResponse.jsonUnsafe({ status: "ok" })),
  HttpRouter.use(Effect.fnUntraced(function*(router) {
    const { stopping } = yield* Stopping
    const status = yield* DatabaseStatus.DatabaseStatus
    const sql = yield* SqlClient.SqlClient
    const database = Effect.gen(function*() {
      const state = yield* Effect.provideService(checkDatabase, SqlClient.SqlClient, sql)
      yield* status.report(state)
      return DatabaseStatus.isReady(state)
        ? HttpServerResponse.jsonUnsafe({ status: "ready" })
        : HttpServerResponse.jsonUnsafe(DatabaseStatus.readinessBody(state), { status: 503 })
    })
    yield* router.add(
      "GET",
      "/health/ready",
      Effect.flatMap(stopping, (stop) => stop ? Effect.succeed(HttpServerResponse.jsonUnsafe(SHUTTING_DOWN, { status: 503 })) : database)
    )
  }))
)

/** A JSON answer written straight to Node's response (HEAD: the headers only), with the request's id. */
const answer = (
  request: Http.IncomingMessage,
  response: Http.ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string | number>> = {}
) => {
  const text = JSON.stringify(body)
  const sent = request.headers[RequestId.HEADER]
  response.writeHead(status, {
    ...headers,
    "content-type": JSON_CONTENT_TYPE,
    "content-length": Buffer.byteLength(text),
    [RequestId.HEADER]: RequestId.of(typeof sent === "string" ? sent : undefined)
  })
  response.end(request.method === "HEAD" ? undefined : text)
}

/**
 * Makes `server` answer every request while no `request` listener added
 * after this one is attached, i.e. from the moment it listens until the
 * routes serve (`HttpRouter.serve` attaches theirs): the answers of a
 * process that waits for its database (`status`), see the module comment.
 * Once the routes serve, this listener leaves every request to them.
 * (Listeners added before, such as `closeWhenIdle`'s count, answer nothing.)
 */
export const answerUntilServed = (status: DatabaseStatus.DatabaseStatusShape) => (server: Http.Server): Http.Server => {
  let handlers = 0
  server.on("request", (request: Http.IncomingMessage, response: Http.ServerResponse) => {
    if (handlers > 0) return
    const path = (request.url ?? "/").split("?")[0] ?? "/"
    if (path === "/health/live") return answer(request, response, 200, { status: "ok" })
    if (path === "/health/ready") {
      const state = status.currentUnsafe()
      // Ready, and the routes not attached yet: still starting.
      return answer(request, response, 503, DatabaseStatus.readinessBody(DatabaseStatus.isReady(state) ? DatabaseStatus.UNKNOWN : state))
    }
    const { status: code, headers, body } = unavailableError(path).encode()
    answer(request, response, code, body, headers)
  })
  // Counted from here on: the listeners added after this one.
  server.on("newListener", (event: string | symbol) => {
    if (event === "request") handlers++
  })
  return server.on("removeListener", (event: string | symbol) => {
    if (event === "request") handlers--
  })
}
