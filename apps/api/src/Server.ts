/**
 * The API process's one Layer graph: public API routes with their
 * middleware, handlers and repositories, its OpenAPI document and reference
 * page, the back-office API (`/api/crm/v1`) with its OpenAPI document and
 * reference page, the web panel (`/crm`), health, metrics (`/metrics`,
 * apps/api/src/Metrics.ts), and the envelope for everything else.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { Effect } from "effect"
import * as ByteSize from "effect/ByteSize"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import type { FindMyWay, HttpServerResponse } from "effect/http"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { createServer, type Server } from "node:http"
import { BACK_OFFICE_PATH, BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { BASE_PATH, PublicApi } from "@school/domain/api/PublicApi"
import { Catalog } from "@school/persistence/Catalog"
import { DemoLessons } from "@school/persistence/DemoLessons"
import { Enrollments } from "@school/persistence/Enrollments"
import { IdempotencyConfig, IdempotencyPurge } from "@school/persistence/IdempotencyStore"
import { Leads } from "@school/persistence/Leads"
import { Payments } from "@school/persistence/Payments"
import { Sessions } from "@school/persistence/Sessions"
import * as Sql from "@school/persistence/Sql"
import * as AccessLog from "@school/runtime/AccessLog"
import { closeWhenIdle } from "@school/runtime/Shutdown"
import * as Metrics from "@school/runtime/Metrics"
import type { SettingsShape } from "@school/runtime/Settings"
import { Students } from "@school/persistence/Students"
import { AuthenticationLive } from "./Authentication.ts"
import { BackOfficeValidationLive, RoleCheckLive, SessionAuthenticationLive, SessionConfig } from "./BackOfficeAuth.ts"
import { ErrorEnvelope, routeTable } from "./ErrorEnvelope.ts"
import { HEALTH_ROUTES, HealthRoutes } from "./Health.ts"
import { LoginHandlersNoDeps, SessionsHandlersNoDeps } from "./http/BackOfficeSessions.ts"
import { LeadSectionHandlersNoDeps, LeadSectionRepositories } from "./http/backoffice/LeadSection.ts"
import { SchoolHandlersNoDeps, SchoolRepositories } from "./http/backoffice/School.ts"
import { StaffHandlersNoDeps, StaffRepositories } from "./http/backoffice/Staff.ts"
import { webhookConfigLayer, WebhooksHandlersNoDeps, WebhooksRepositories } from "./http/backoffice/Webhooks.ts"
import { CatalogHandlersNoDeps } from "./http/Catalog.ts"
import { DemoLessonsHandlersNoDeps } from "./http/DemoLessons.ts"
import { EnrollmentListHandlersNoDeps, EnrollmentsHandlersNoDeps } from "./http/Enrollments.ts"
import { LeadsHandlersNoDeps } from "./http/Leads.ts"
import { PaymentsHandlersNoDeps } from "./http/Payments.ts"
import { StudentsHandlersNoDeps } from "./http/Students.ts"
import { PANEL_ROUTES, PanelRoutes } from "./http/Panel.ts"
import { ReferencePage } from "./http/Reference.ts"
import { IdempotentWriteLive } from "./IdempotentWrite.ts"
import { METRICS_ROUTES, MetricsRoute } from "./Metrics.ts"
import { onClientError } from "./ParserErrors.ts"
import { RateLimiter, RateLimitOptions } from "./RateLimiter.ts"
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
const StrictRouter = Layer.effect(HttpRouter.HttpRouter, HttpRouter.make).pipe(
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
const allowedMethods = (path: string) => [...publicMethods(path), ...backOfficeMethods(path)]

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
export const accessLog = AccessLog.middleware(
  AccessLog.routeTemplates(routeList(), ROUTER_CONFIG),
  Metrics.makeHttpRecorder()
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
  HttpApiBuilder.layer(PublicApi, { openapiPath: OPENAPI_PATH }).pipe(
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
  HttpApiBuilder.layer(BackOfficeApi, { openapiPath: BACK_OFFICE_OPENAPI_PATH }).pipe(
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
    Layer.provide([SessionAuthenticationLive, BackOfficeValidationLive, RoleCheckLive, RateLimiter.layer])
  ),
  // The reference pages, Scalar inlined (apps/api/src/http/Reference.ts).
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

export interface ServerOptions {
  readonly databaseUrl: string
  readonly port: number
  readonly host: string
  readonly maxConnections?: number
  /** RATE_LIMIT_WINDOW (default 60 s; None: off). */
  readonly rateLimitWindow?: RateLimitOptions["window"]
  /** IDEMPOTENCY_WAIT (default 2 s). */
  readonly idempotencyWait?: Duration.Duration
  /** SESSION_TTL (default 12 h). */
  readonly sessionTtl?: Duration.Duration
  /**
   * WEBHOOK_ALLOW_INSECURE_URLS, WEBHOOK_SECRET_KEY, WEBHOOK_MAX_SUBSCRIPTIONS and WEBHOOK_ACTIONS_PER_MINUTE
   * (defaults: https and public receivers, the development key, the limits' defaults).
   */
  readonly webhooks?: Parameters<typeof webhookConfigLayer>[0]
  /** DATABASE_STATEMENT_TIMEOUT (docs/operations.md "Settings"; none when omitted). */
  readonly statementTimeout?: Duration.Duration
  /** DATABASE_ACQUIRE_TIMEOUT (docs/operations.md "Settings"; none when omitted). */
  readonly acquireTimeout?: Duration.Duration
  /** SHUTDOWN_TIMEOUT (docs/operations.md "Shutdown"; default 10 s). */
  readonly shutdownTimeout?: Duration.Duration
}

/** SHUTDOWN_TIMEOUT's default (libs/runtime/src/Settings.ts) for servers built without settings. */
const DEFAULT_SHUTDOWN_TIMEOUT = Duration.seconds(10)

/**
 * The Node HTTP server the API listens with: what its parser refuses is
 * answered in the envelope (`clientError`), and Node's own Host check, which
 * answers with an empty body, gives way to the app's (apps/api/src/ParserErrors.ts).
 * Closing it lets the requests in flight finish, keeps no idle keep-alive
 * connection open, and cuts what is left after `shutdownTimeout`
 * (libs/runtime/src/Shutdown.ts `closeWhenIdle`; docs/operations.md "Shutdown").
 */
export const createApiServer = (shutdownTimeout: Duration.Duration = DEFAULT_SHUTDOWN_TIMEOUT): Server => {
  const server = createServer({ requireHostHeader: false })
  server.on("clientError", onClientError)
  return closeWhenIdle(server, shutdownTimeout)
}

/** The server's options as the settings give them (docs/operations.md "Settings"). */
export const serverOptions = (settings: SettingsShape, databaseUrl: string): ServerOptions => ({
  databaseUrl,
  port: settings.port,
  host: settings.host,
  rateLimitWindow: settings.rateLimitWindow,
  idempotencyWait: settings.idempotencyWait,
  sessionTtl: settings.sessionTtl,
  webhooks: {
    allowInsecureUrls: settings.webhookAllowInsecureUrls,
    secretKey: settings.webhookSecretKey,
    maxSubscriptions: settings.webhookMaxSubscriptions,
    actionsPerMinute: settings.webhookActionsPerMinute
  },
  statementTimeout: settings.databaseStatementTimeout,
  acquireTimeout: settings.databaseAcquireTimeout,
  shutdownTimeout: settings.shutdownTimeout
})

/**
 * The HTTP server, listening, with the access log and the idempotency purge
 * job; needs the repositories (`Repositories`) and the pool. The benchmark's
 * full-middleware server provides a different Students repository here.
 */
export const ServerLayerNoDeps = (options: Omit<ServerOptions, "databaseUrl" | "maxConnections" | "statementTimeout" | "acquireTimeout">) =>
  Layer.merge(HttpRouter.serve(AppRoutesNoDeps, { disableLogger: true, middleware: serveMiddleware }), IdempotencyPurge).pipe(
    Layer.provide(NodeHttpServer.layer(() => createApiServer(options.shutdownTimeout), {
      port: options.port,
      host: options.host,
      // Our server cuts what is left at shutdownTimeout; Effect's own wait (20 s by default) must not give up first.
      gracefulShutdownTimeout: Duration.sum(options.shutdownTimeout ?? DEFAULT_SHUTDOWN_TIMEOUT, Duration.seconds(1))
    })),
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
    Layer.provide(
      options.sessionTtl === undefined ? Layer.empty : Layer.succeed(SessionConfig, { ttl: options.sessionTtl })
    ),
    Layer.provide(options.webhooks === undefined ? Layer.empty : webhookConfigLayer(options.webhooks))
  )

/** The API's pool, with its bounds (docs/operations.md "Settings"). */
export const ApiSqlLayer = (options: ServerOptions) =>
  Sql.layer({
    url: options.databaseUrl,
    applicationName: "school-api",
    statementTimeout: options.statementTimeout,
    acquireTimeout: options.acquireTimeout,
    ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections })
  })

/** The whole HTTP server, listening, with its repositories, its database pool and the idempotency purge job. */
export const ServerLayer = (options: ServerOptions) =>
  ServerLayerNoDeps(options).pipe(Layer.provide(Repositories), Layer.provide(ApiSqlLayer(options)))
