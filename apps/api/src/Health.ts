/** Liveness and readiness for orchestrators: ready means the database answers. */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"

export const HEALTH_ROUTES = [["GET", "/health/live"], ["GET", "/health/ready"]] as const

export const HealthRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/health/live", HttpServerResponse.jsonUnsafe({ status: "ok" })),
  HttpRouter.use(Effect.fnUntraced(function*(router) {
    const sql = yield* SqlClient.SqlClient
    yield* router.add(
      "GET",
      "/health/ready",
      sql`SELECT 1`.pipe(
        Effect.timeout("2 seconds"),
        Effect.as(HttpServerResponse.jsonUnsafe({ status: "ready" })),
        Effect.catchCause(() =>
          Effect.succeed(HttpServerResponse.jsonUnsafe(
            { error: { code: "not_ready", message: "The database does not answer." } },
            { status: 503 }
          ))
        )
      )
    )
  }))
)
