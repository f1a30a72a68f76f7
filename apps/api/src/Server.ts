/**
 * The API process's one Layer graph: public API routes with their
 * middleware, handlers and repositories, its OpenAPI document and reference
 * page, the back-office API (`/api/crm/v1`) with its OpenAPI document and
 * reference page, the web panel (`/crm`), health, metrics (`/metrics`,
 * apps/api/src/Metrics.ts), and the envelope for everything else.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as ByteSize from "effect/ByteSize"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { FindMyWay, HttpServerResponse } from "effect/http"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { createServer, type Server } from "node:http"
import { BACK_OFFICE_PATH, BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { BASE_PATH, PublicApi } from "@school/domain/api/PublicApi"
import { Catalog } from "@school/persistence/Catalog"
import { DemoLessons } from "@school/persistence/DemoLessons"
import { Enrollments } from "@school/persistence/Enrollments"
import { IdempotencyPurge } from "@school/persistence/IdempotencyStore"
import { SessionPurge } from "@school/persistence/Sessions"
import { Leads } from "@school/persistence/Leads"
import { Payments } from "@school/persistence/Payments"
import { Sessions } from "@school/persistence/Sessions"
import * as Sql from "@school/persistence/Sql"
import * as AccessLog from "@school/runtime/AccessLog"
import { closeWhenIdle } from "@school/runtime/Shutdown"
import * as Metrics from "@school/runtime/Metrics"
import {
  DATABASE_ACQUIRE_TIMEOUT,
  DATABASE_STATEMENT_TIMEOUT,
  HOST,
  PORT,
  requiredDatabaseUrl,
  SHUTDOWN_TIMEOUT
} from "@school/runtime/Settings"
import { Students } from "@school/persistence/Students"
import { AuthenticationLive } from "./Authentication.ts"
import { BackOfficeValidationLive, RoleCheckLive, SessionAuthenticationLive } from "./BackOfficeAuth.ts"
import { ErrorEnvelope, routeTable } from "./ErrorEnvelope.ts"
import { HEALTH_ROUTES, HealthRoutes } from "./Health.ts"
import { LoginHandlersNoDeps, SessionsHandlersNoDeps } from "./http/backoffice/Sessions.ts"
import { SignInGuard } from "./http/backoffice/SignInGuard.ts"
import { LeadSectionHandlersNoDeps, LeadSectionRepositories } from "./http/backoffice/LeadSection.ts"
import { SchoolHandlersNoDeps, SchoolRepositories } from "./http/backoffice/School.ts"
import { StaffHandlersNoDeps, StaffRepositories } from "./http/backoffice/Staff.ts"
import { DevelopmentKeyWarning, WebhooksHandlersNoDeps, WebhooksRepositories } from "./http/backoffice/Webhooks.ts"
import { CatalogHandlersNoDeps } from "./http/Catalog.ts"
import { DemoLessonsHandlersNoDeps } from "./http/DemoLessons.ts"
import { EnrollmentListHandlersNoDeps, EnrollmentsHandlersNoDeps } from "./http/Enrollments.ts"
import { LeadsHandlersNoDeps } from "./http/Leads.ts"
import { PaymentsHandlersNoDeps } from "./http/Payments.ts"
import { StudentsHandlersNoDeps } from "./http/Students.ts"
import { PANEL_ROUTES, PanelRoutes } from "./http/Panel.ts"
import { OpenApiDocument, ReferencePage } from "./http/Reference.ts"
import { IdempotentWriteLive } from "./IdempotentWrite.ts"
import { METRICS_ROUTES, MetricsRoute } from "./Metrics.ts"
import { onClientError } from "./ParserErrors.ts"
import { RateLimiter } from "./RateLimiter.ts"
import { RequestValidationLive } from "./RequestValidation.ts"
import { RequireWriteScopeLive } from "./RequireWriteScope.ts"

export const OPENAPI_PATH = `${BASE_PATH}/openapi.json`
export const DOCS_PATH = `${BASE_PATH}/docs`
export const BACK_OFFICE_OPENAPI_PATH = `${BACK_OFFICE_PATH}/openapi.json`
export const BACK_OFFICE_DOCS_PATH = `${BACK_OFFICE_PATH}/docs`
/** docs/decisions.md "Requests and responses": larger bodies get 413 payload_too_large. */
export const MAX_BODY_BYTES = 256 * 1024

/** The repositories the handlers call; each needs only a SqlClient. */
export const Repositories = Layer.mergeAll(
  Students.layer,
  Payments.layer,
  Catalog.layer,
  Leads.layer,
  DemoLessons.layer,
  Enrollments.layer,
  Sessions.layer,
  StaffRepositories,
  WebhooksRepositories,
  SchoolRepositories,
  LeadSectionRepositories
)

/**
 * How the router matches a path (docs/decisions.md "Requests and
 * responses"): exactly as the routes are written. FindMyWay's defaults
 * (case-insensitive, a trailing slash and repeated slashes ignored) would
 * make `/Leads`, `/leads/` and `//leads` the same endpoint as `/leads`;
 * here they are 404 not_found. (A `;` ends the path for FindMyWay, like `?`.)
 */
export const ROUTER_CONFIG: Partial<FindMyWay.RouterConfig> = {
  caseSensitive: true,
  ignoreTrailingSlash: false,
  ignoreDuplicateSlashes: false
}

/**
 * The router the routes register with, configured by ROUTER_CONFIG. The
 * routes carry it, so every server of them (`HttpRouter.serve`,
 * `toWebHandler`, the tests' and the benchmark's) matches paths the same
 * way: the app's own `HttpRouter` wins over the default one `serve` adds
 * (`Layer.provideMerge` keeps the app's services over the router layer's).
 */
export const StrictRouter = Layer.effect(HttpRouter.HttpRouter, HttpRouter.make).pipe(
  // A layer of its own, not `HttpRouter.layer`: that one is memoized, so `serve`'s default would be shared.
  Layer.provide(Layer.succeed(HttpRouter.RouterConfig, ROUTER_CONFIG))
)

const publicMethods = routeTable(PublicApi, [
  ...HEALTH_ROUTES,
  ...METRICS_ROUTES,
  ...PANEL_ROUTES,
  ["GET", OPENAPI_PATH],
  ["GET", DOCS_PATH]
], ROUTER_CONFIG)
const backOfficeMethods = routeTable(BackOfficeApi, [["GET", BACK_OFFICE_OPENAPI_PATH], ["GET", BACK_OFFICE_DOCS_PATH]], ROUTER_CONFIG)
export const allowedMethods = (path: string) => [...publicMethods(path), ...backOfficeMethods(path)]

/** Every route of the API process as written, for the access log's route templates. */
const routeList = (): ReadonlyArray<readonly [method: string, path: string]> => {
  const routes: Array<readonly [string, string]> = [
    ...HEALTH_ROUTES,
    ...METRICS_ROUTES,
    ...PANEL_ROUTES,
    ["GET", OPENAPI_PATH],
    ["GET", DOCS_PATH],
    ["GET", BACK_OFFICE_OPENAPI_PATH],
    ["GET", BACK_OFFICE_DOCS_PATH]
  ]
  const onEndpoint = ({ endpoint }: { readonly endpoint: { readonly method: string; readonly path: string } }) => {
    routes.push([endpoint.method, endpoint.path])
  }
  HttpApi.reflect(PublicApi, { onGroup: () => {}, onEndpoint })
  HttpApi.reflect(BackOfficeApi, { onGroup: () => {}, onEndpoint })
  return routes
}

/**
 * The access log (docs/operations.md "Settings"): one line per request with
 * the route's template, never the path or query as sent, which may hold a key;
 * the same pass counts the request in /metrics (docs/operations.md "Metrics").
 */
export const routeTemplate = AccessLog.routeTemplates(routeList(), ROUTER_CONFIG)
export const accessLog = AccessLog.middleware(routeTemplate, Metrics.makeHttpRecorder())

/**
 * The name of a request's span when spans are exported (docs/operations.md
 * "Traces"): the method and the route's template, as in the access line.
 */
export const RequestSpanNames = Layer.succeed(
  HttpMiddleware.SpanNameGenerator,
  (request) => `${request.method} ${routeTemplate(request.method, request.url)}`
)

/** `serve`'s middleware: each request's id (X-Request-Id), around the access log so its line carries the id. */
export const serveMiddleware = <E, R>(httpApp: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  AccessLog.requestIds(accessLog(httpApp))

/**
 * Every route of the API process, without the repositories (and the
 * SqlClient) its handlers need: what a variant that answers one list from
 * somewhere else (the benchmark's full-middleware server) provides first.
 */
export const AppRoutesNoDeps = Layer.mergeAll(
  HttpApiBuilder.layer(PublicApi).pipe(
    Layer.provide([
      StudentsHandlersNoDeps,
      PaymentsHandlersNoDeps,
      CatalogHandlersNoDeps,
      LeadsHandlersNoDeps,
      DemoLessonsHandlersNoDeps,
      EnrollmentsHandlersNoDeps,
      EnrollmentListHandlersNoDeps
    ]),
    Layer.provide([AuthenticationLive, RequireWriteScopeLive, IdempotentWriteLive, RequestValidationLive])
  ),
  HttpApiBuilder.layer(BackOfficeApi).pipe(
    Layer.provide([
      LoginHandlersNoDeps,
      SessionsHandlersNoDeps,
      StaffHandlersNoDeps,
      WebhooksHandlersNoDeps,
      SchoolHandlersNoDeps,
      LeadSectionHandlersNoDeps
    ]),
    // RateLimiter.layer is the same value AuthenticationLive provides: one instance (layers are memoized),
    // so a key revoked here drops this process's local block at once.
    // One SignInGuard for sign-in and the password change: one queue per address and one set of hash slots.
    Layer.provide([SessionAuthenticationLive, BackOfficeValidationLive, RoleCheckLive, RateLimiter.layer, SignInGuard.layer])
  ),
  // The OpenAPI documents and the reference pages, Scalar inlined, compressed (apps/api/src/http/Reference.ts).
  OpenApiDocument(PublicApi, OPENAPI_PATH),
  OpenApiDocument(BackOfficeApi, BACK_OFFICE_OPENAPI_PATH),
  ReferencePage(PublicApi, DOCS_PATH),
  ReferencePage(BackOfficeApi, BACK_OFFICE_DOCS_PATH),
  HealthRoutes,
  MetricsRoute,
  PanelRoutes,
  ErrorEnvelope(allowedMethods)
).pipe(
  Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES))),
  Layer.provideMerge(StrictRouter)
)

/** Every route of the API process, as it serves them; needs only a SqlClient. */
export const AppRoutes = AppRoutesNoDeps.pipe(Layer.provide(Repositories))

/**
 * The Node HTTP server the API listens with: what its parser refuses is
 * answered in the envelope (`clientError`), and Node's own Host check, which
 * answers with an empty body, gives way to the app's (apps/api/src/ParserErrors.ts).
 * Closing it lets the requests in flight finish, keeps no idle keep-alive
 * connection open, and cuts what is left after `shutdownTimeout`
 * (SHUTDOWN_TIMEOUT; libs/runtime/src/Shutdown.ts `closeWhenIdle`;
 * docs/operations.md "Shutdown").
 */
export const createApiServer = (shutdownTimeout: Duration.Duration): Server => {
  const server = createServer({ requireHostHeader: false })
  server.on("clientError", onClientError)
  return closeWhenIdle(server, shutdownTimeout)
}

/**
 * The API's Node server, listening on HOST:PORT and closing by
 * SHUTDOWN_TIMEOUT (docs/operations.md "Settings"); `prepare` adds to the
 * Node server before it listens (main.ts: the answers until the routes serve).
 */
export const apiHttpServer = (prepare: (server: Server) => Server = (server) => server) => Layer.unwrap(Effect.gen(function*() {
  const host = yield* HOST
  const port = yield* PORT
  const shutdownTimeout = yield* SHUTDOWN_TIMEOUT
  return NodeHttpServer.layer(() => prepare(createApiServer(shutdownTimeout)), {
    port,
    host,
    // Our server cuts what is left at SHUTDOWN_TIMEOUT; Effect's own wait (20 s by default) must not give up first.
    gracefulShutdownTimeout: Duration.sum(shutdownTimeout, Duration.seconds(1))
  })
}))

export const ApiHttpServer = apiHttpServer()

/**
 * The routes served on an HTTP server given (main.ts builds the listening
 * one first), with the access log, the idempotency and session purge jobs
 * and the development-key warning; needs the repositories and the pool.
 */
export const ServeLayerNoDeps = Layer.mergeAll(
  HttpRouter.serve(AppRoutesNoDeps, { disableLogger: true, middleware: serveMiddleware }),
  IdempotencyPurge,
  SessionPurge,
  DevelopmentKeyWarning
).pipe(Layer.provide(RequestSpanNames))

/**
 * The HTTP server, listening, with the access log, the idempotency and
 * session purge jobs and the development-key warning; needs the repositories
 * (`Repositories`) and the pool. The benchmark's full-middleware server
 * provides a different Students repository here.
 */
export const ServerLayerNoDeps = ServeLayerNoDeps.pipe(Layer.provide(ApiHttpServer))

/** The API's pool against DATABASE_URL, with its bounds (docs/operations.md "Settings"). */
export const ApiSqlLayer = Layer.unwrap(Effect.gen(function*() {
  const url = yield* requiredDatabaseUrl("a postgres:// URL (the API process does not start a database; use npm start for that)")
  return Sql.layer({
    url,
    applicationName: "school-api",
    statementTimeout: yield* DATABASE_STATEMENT_TIMEOUT,
    acquireTimeout: yield* DATABASE_ACQUIRE_TIMEOUT
  })
}))

/** The whole HTTP server, listening, with its repositories, its database pool and the idempotency purge job. */
export const ServerLayer = ServerLayerNoDeps.pipe(Layer.provide(Repositories), Layer.provide(ApiSqlLayer))
