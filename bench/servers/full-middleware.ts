/**
 * The subject of the "full middleware, no database route" scenario: the API
 * process exactly as apps/api/src/Server.ts and main.ts compose it (settings
 * and logging, envelope, request validation, authentication and rate limit,
 * the per-request logger, every route), except that the students handlers are
 * given a `Students` service answering GET /students from a page read once at
 * start. What is left per request is our middleware; its authentication and
 * rate limit still make their round trip, as they do in the API.
 *
 * Keep this in step with Server.ts: a handler group added there must be added
 * here (tsc reports the missing one).
 *
 * Env: as the API (DATABASE_URL, PORT, HOST, LOG_LEVEL) and BENCH_SCHOOL_ID,
 * the school whose first page is served.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { ByteSize, Effect, Layer, Option } from "effect"
import { HttpIncomingMessage, HttpRouter } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { createServer } from "node:http"
import { AuthenticationLive, RequireWriteScopeLive } from "@school/api/Authentication"
import { ErrorEnvelope, routeTable } from "@school/api/ErrorEnvelope"
import { HEALTH_ROUTES, HealthRoutes } from "@school/api/Health"
import { CatalogHandlers } from "@school/api/http/Catalog"
import { DemoLessonsHandlers } from "@school/api/http/DemoLessons"
import { EnrollmentsHandlers } from "@school/api/http/Enrollments"
import { LeadsHandlers } from "@school/api/http/Leads"
import { PaymentsHandlers } from "@school/api/http/Payments"
import { StudentsHandlersNoDeps } from "@school/api/http/Students"
import { IdempotentWriteLive } from "@school/api/Idempotency"
import { RequestValidationLive } from "@school/api/RequestValidation"
import { DOCS_PATH, MAX_BODY_BYTES, OPENAPI_PATH } from "@school/api/Server"
import { PublicApi } from "@school/domain/PublicApi"
import { runMain } from "@school/persistence/Main"
import { InvalidSetting, Settings } from "@school/persistence/Settings"
import * as Sql from "@school/persistence/Sql"
import { Students } from "@school/persistence/Students"

/** The real repository for everything but the list, which is read once. */
const StudentsFromMemory = Layer.effect(
  Students,
  Effect.gen(function*() {
    const real = yield* Students
    const schoolId = Number(process.env["BENCH_SCHOOL_ID"])
    const page = yield* real.list(schoolId, { page: { page: 1, perPage: 20 } })
    return Students.of({ list: () => Effect.succeed(page), get: real.get })
  })
).pipe(Layer.provide(Students.layer))

const PublicRoutes = HttpApiBuilder.layer(PublicApi, { openapiPath: OPENAPI_PATH }).pipe(
  Layer.provide([
    StudentsHandlersNoDeps.pipe(Layer.provide(StudentsFromMemory)),
    PaymentsHandlers,
    CatalogHandlers,
    LeadsHandlers,
    DemoLessonsHandlers,
    EnrollmentsHandlers
  ]),
  Layer.provide([AuthenticationLive, RequestValidationLive, RequireWriteScopeLive, IdempotentWriteLive])
)

const allowedMethods = routeTable(PublicApi, [...HEALTH_ROUTES, ["GET", OPENAPI_PATH], ["GET", DOCS_PATH]])

const AppRoutes = Layer.mergeAll(
  PublicRoutes,
  HttpApiScalar.layerCdn(PublicApi, { path: DOCS_PATH }),
  HealthRoutes,
  ErrorEnvelope(allowedMethods)
).pipe(Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES))))

const program = Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isNone(settings.databaseUrl)) {
    return yield* new InvalidSetting({ setting: "DATABASE_URL", expected: "a postgres:// URL", got: "" })
  }
  return yield* Layer.launch(HttpRouter.serve(AppRoutes).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { port: settings.port, host: settings.host })),
    Layer.provide(Sql.layer({ url: settings.databaseUrl.value, applicationName: "school-api" }))
  ))
}).pipe(Effect.provide(Settings.layerWithLogging))

runMain(program)
