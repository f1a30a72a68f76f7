/**
 * The API process's one Layer graph: public API routes, its OpenAPI document
 * and reference page, health, and the envelope for everything else.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { ByteSize, type Duration, Layer } from "effect"
import { HttpIncomingMessage, HttpRouter } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { createServer } from "node:http"
import { BASE_PATH, PublicApi } from "@school/domain/PublicApi"
import { IdempotencyConfig, IdempotencyPurge } from "@school/persistence/Idempotency"
import * as Sql from "@school/persistence/Sql"
import { AuthenticationLive, RequireWriteScopeLive } from "./Authentication.ts"
import { ErrorEnvelope, routeTable } from "./ErrorEnvelope.ts"
import { HEALTH_ROUTES, HealthRoutes } from "./Health.ts"
import { CatalogHandlers } from "./http/Catalog.ts"
import { DemoLessonsHandlers } from "./http/DemoLessons.ts"
import { EnrollmentsHandlers } from "./http/Enrollments.ts"
import { LeadsHandlers } from "./http/Leads.ts"
import { PaymentsHandlers } from "./http/Payments.ts"
import { StudentsHandlers } from "./http/Students.ts"
import { IdempotentWriteLive } from "./Idempotency.ts"
import { RequestValidationLive } from "./RequestValidation.ts"
import { RateLimitOptions } from "./RateLimiter.ts"

export const OPENAPI_PATH = `${BASE_PATH}/openapi.json`
export const DOCS_PATH = `${BASE_PATH}/docs`
/** DECISIONS "Requests and responses": larger bodies get 413 payload_too_large. */
export const MAX_BODY_BYTES = 256 * 1024

/**
 * Every route of the API process; needs only a SqlClient. `students` swaps
 * the students handlers (the benchmark's no-database variant uses this); the
 * rest of the composition stays the one the process serves.
 */
export const appRoutes = (students: typeof StudentsHandlers = StudentsHandlers) => {
  const publicRoutes = HttpApiBuilder.layer(PublicApi, { openapiPath: OPENAPI_PATH }).pipe(
    Layer.provide([
      students,
      PaymentsHandlers,
      CatalogHandlers,
      LeadsHandlers,
      DemoLessonsHandlers,
      EnrollmentsHandlers
    ]),
    Layer.provide([AuthenticationLive, RequestValidationLive, RequireWriteScopeLive, IdempotentWriteLive])
  )
  return Layer.mergeAll(
    publicRoutes,
    HttpApiScalar.layerCdn(PublicApi, { path: DOCS_PATH }),
    HealthRoutes,
    ErrorEnvelope(allowedMethods)
  ).pipe(
    Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES)))
  )
}

const allowedMethods = routeTable(PublicApi, [
  ...HEALTH_ROUTES,
  ["GET", OPENAPI_PATH],
  ["GET", DOCS_PATH]
])

/** Every route of the API process, as it serves them. */
export const AppRoutes = appRoutes()

export interface ServerOptions {
  readonly databaseUrl: string
  readonly port: number
  readonly host: string
  readonly maxConnections?: number
  /** RATE_LIMIT_WINDOW (default 60 s; None: off). */
  readonly rateLimitWindow?: RateLimitOptions["window"]
  /** IDEMPOTENCY_WAIT (default 2 s). */
  readonly idempotencyWait?: Duration.Duration
}

/** The whole HTTP server, listening, with its database pool and the idempotency purge job. */
export const ServerLayer = (options: ServerOptions) =>
  Layer.merge(HttpRouter.serve(AppRoutes), IdempotencyPurge).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { port: options.port, host: options.host })),
    Layer.provide(
      options.rateLimitWindow === undefined
        ? Layer.empty
        : Layer.succeed(RateLimitOptions, { ...RateLimitOptions.defaultValue(), window: options.rateLimitWindow })
    ),
    Layer.provide(
      options.idempotencyWait === undefined
        ? Layer.empty
        : Layer.succeed(IdempotencyConfig, { ...IdempotencyConfig.defaultValue(), wait: options.idempotencyWait })
    ),
    Layer.provide(Sql.layer({
      url: options.databaseUrl,
      applicationName: "school-api",
      ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections })
    }))
  )
