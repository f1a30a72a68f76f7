/**
 * Liveness and readiness for orchestrators (docs/operations.md "Process
 * endpoints"): ready means the database answers and the process is not
 * stopping (libs/runtime/src/Shutdown.ts: 503 `shutting_down` from SIGTERM on).
 */
import { Stopping, SHUTTING_DOWN } from "@school/runtime/Shutdown"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as SqlClient from "effect/sql/SqlClient"

export const HEALTH_ROUTES = [["GET", "/health/live"], ["GET", "/health/ready"]] as const

export const HealthRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/health/live", HttpServerResponse.jsonUnsafe({ status: "ok" })),
  HttpRouter.use(Effect.fnUntraced(function*(router) {
    const sql = yield* SqlClient.SqlClient
    const { stopping } = yield* Stopping
    const database = sql`SELECT 1`.pipe(
      Effect.timeout("2 seconds"),
      // A probe makes no span (docs/operations.md "Traces").
      Effect.withTracerEnabled(false),
      Effect.as(HttpServerResponse.jsonUnsafe({ status: "ready" })),
      Effect.catchCause(() =>
        Effect.succeed(HttpServerResponse.jsonUnsafe(
          { error: { code: "not_ready", message: "The database does not answer." } },
          { status: 503 }
        ))
      )
    )
    yield* router.add(
      "GET",
      "/health/ready",
      Effect.flatMap(stopping, (stop) => stop ? Effect.succeed(HttpServerResponse.jsonUnsafe(SHUTTING_DOWN, { status: 503 })) : database)
    )
  }))
)
