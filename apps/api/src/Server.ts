/**
 * The API process's one Layer graph: public API routes with their
 * middleware, handlers and repositories, its OpenAPI document and reference
 * page, the back-office API (`/api/crm/v1`) with its OpenAPI document and
 * reference page, the web panel (`/crm`), health, metrics (`/metrics`,
 * apps/api/src/Metrics.ts), and the envelope for everything else.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as ByteSize from "effect/ByteSize"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { FindMyWay, HttpServerResponse } from "effect/http"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { createServer, IncomingMessage, type Server, ServerResponse } from "node:http"
import { BACK_OFFICE_PATH, BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { Authentication } from "@school/domain/api/Middleware"
import { BASE_PATH, PublicApi } from "@school/domain/api/PublicApi"
import * as RequestId from "@school/domain/RequestId"
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
import { OTEL_EXPORTER_OTLP_ENDPOINT } from "@school/runtime/Tracing"
import { Students } from "@school/persistence/Students"
import { AuthenticationLive, earlyRefusal, refused } from "./Authentication.ts"
import { AuthFailureGuard, AuthFailureGuardOptions } from "./AuthFailureGuard.ts"
import * as ClientAddress from "./ClientAddress.ts"
import { BackOfficeValidationLive, RoleCheckLive, SessionAuthenticationLive } from "./BackOfficeAuth.ts"
import { ErrorEnvelope, routeTable } from "./ErrorEnvelope.ts"
import { JSON_CONTENT_TYPE } from "./ErrorResponse.ts"
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
/** The request series' recorder, shared by the access log and `EarlyRefusals`. */
const httpRecorder = Metrics.makeHttpRecorder()
export const accessLog = AccessLog.middleware(routeTemplate, httpRecorder)

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
 * docs/operations.md "Shutdown"). While it listens, `EarlyRefusals` may
 * answer a request before any `request` listener sees it (`answeringEarly`).
 */
export const createApiServer = (shutdownTimeout: Duration.Duration): Server => {
  const server = createServer({ requireHostHeader: false })
  server.on("clientError", onClientError)
  return closeWhenIdle(answeringEarly(server), shutdownTimeout)
}

/** Answers a request itself (true), or leaves it to the server's `request` listeners (false). */
type EarlyAnswer = (request: IncomingMessage, response: ServerResponse) => boolean

/** The early answer armed on a server made by createApiServer, while `EarlyRefusals` lives. */
const earlyAnswers = new WeakMap<Server, EarlyAnswer>()

/**
 * Makes `server` offer each request to its armed early answer before its
 * `request` listeners (Effect's handler among them): a request it answers
 * never becomes an Effect request, no fiber, no router. Only while the
 * server listens: once it closes, every request gets the whole path, which
 * `closeWhenIdle` marks `Connection: close`.
 */
const answeringEarly = (server: Server): Server => {
  const emit = server.emit.bind(server)
  server.emit = (event: string, ...args: Array<unknown>): boolean => {
    if (event === "request" && server.listening) {
      const answer = earlyAnswers.get(server)
      const [request, response] = args
      if (
        answer !== undefined && request instanceof IncomingMessage && response instanceof ServerResponse &&
        answer(request, response)
      ) return true
    }
    return emit(event, ...args)
  }
  return server
}

/** The Node server made by createApiServer that the API listens with, for `EarlyRefusals`. */
export class ApiNodeServer extends Context.Service<ApiNodeServer, Server>()("school/api/Server/ApiNodeServer") {}

/** `server` (createApiServer's) listening with `options`, as an HttpServer and as ApiNodeServer. */
export const listenApi = (server: Server, options: NodeHttpServer.Options) =>
  Layer.merge(NodeHttpServer.layer(() => server, options), Layer.succeed(ApiNodeServer, server))

/** The endpoints behind the bearer middleware (every public one), as `METHOD template`. */
const authenticatedRoutes = (() => {
  const routes = new Set<string>()
  HttpApi.reflect(PublicApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, middleware }) => {
      const keys: ReadonlySet<unknown> = middleware
      if (keys.has(Authentication)) routes.add(`${endpoint.method} ${endpoint.path}`)
    }
  })
  return routes
})()

/** The methods of the public endpoints; HEAD (the router's GET without a body) takes the whole path. */
const EARLY_METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"])

/**
 * A request whose answer nothing before the bearer middleware can change:
 * HTTP/1, a path in origin form, no body (so nothing to read or drain).
 * Exactly one Host (`oneHost`, the rule of apps/api/src/ParserErrors.ts
 * `refusedRequest`, which answers before routing) and its route are checked
 * after the refusal, for a blocked client only.
 */
const plainRequest = (request: IncomingMessage): boolean =>
  request.httpVersionMajor === 1 && request.url?.startsWith("/") === true && request.method !== undefined &&
  EARLY_METHODS.has(request.method) && request.headers["transfer-encoding"] === undefined &&
  (request.headers["content-length"] === undefined || request.headers["content-length"] === "0")

/** One request `EarlyRefusals` answered, for its count and its access line; `elapsed` in ms. */
interface Answered {
  readonly method: string
  readonly route: string
  readonly status: number
  readonly elapsed: number
  readonly requestId: string
}

/** Whether the request has exactly one Host header (`headersDistinct` without its allocation). */
const oneHost = (request: IncomingMessage): boolean => {
  let hosts = 0
  const raw = request.rawHeaders
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]?.length === 4 && raw[i]?.toLowerCase() === "host") hosts++
  }
  return hosts === 1
}

/**
 * The guard's 429 for a blocked client address, answered before routing
 * (docs/decisions.md "Rate limits"; apps/api/src/Authentication.ts
 * `earlyRefusal` decides it, with the middleware's steps): a flood of
 * credentials from an address that has spent its failures costs the process
 * a few map lookups, a hash and a share of one short fiber per turn of the
 * event loop instead of the whole request path, so the other clients do not
 * queue behind it. The answer is the one the bearer middleware gives, byte
 * for byte: status, envelope, `Retry-After`, `X-Request-Id`, content type
 * (tested against it: test/api/auth-failure-early-answer.test.ts); it is counted
 * (`api_rate_limit_rejections_total`) and, with `accessLog` (the process's
 * `serveMiddleware`), logged and counted in the request series as the access
 * log does, under its route's template. Only a request that could not be
 * answered otherwise: a public endpoint's route, `plainRequest`; anything
 * else takes the whole path and gets the same answer there. Off with
 * AuthFailureGuardOptions' `answerEarly`, and while spans are exported
 * (OTEL_EXPORTER_OTLP_ENDPOINT; docs/operations.md "Traces"): a request
 * answered here has no span.
 */
const EarlyRefusals = (options: { readonly accessLog: boolean }) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const { answerEarly } = yield* AuthFailureGuardOptions
    if (!answerEarly || Option.isSome(yield* OTEL_EXPORTER_OTLP_ENDPOINT)) return
    const server = yield* ApiNodeServer
    const refuse = yield* earlyRefusal
    const context = yield* Effect.context<never>()
    const run = Effect.runSyncWith(context)
    /** What the middleware's pass counts and logs for one answer (`serveMiddleware`), with its request's id. */
    const observe = (answered: Answered) =>
      Effect.andThen(
        refused,
        options.accessLog
          ? AccessLog.answered(context, httpRecorder, answered.method, answered.route, answered.status, answered.elapsed, undefined)
          : Effect.void
      ).pipe(Effect.annotateLogs(RequestId.ANNOTATION, answered.requestId))
    // The answers of one turn of the event loop are counted and logged by one fiber, after that turn's
    // I/O (a flood comes in bursts): a fiber per answer cost more than the rest of the answer.
    let pending: Array<Answered> = []
    let scheduled: ReturnType<typeof setImmediate> | undefined
    const flush = () => {
      scheduled = undefined
      const batch = pending
      pending = []
      run(Effect.forEach(batch, observe, { discard: true }))
    }
    const answer: EarlyAnswer = (request, response) => {
      const started = performance.now()
      if (!plainRequest(request)) return false
      const refusal = refuse(request)
      if (refusal === undefined || !oneHost(request)) return false
      const method = request.method ?? ""
      const route = routeTemplate(method, request.url ?? "/")
      if (!authenticatedRoutes.has(`${method} ${route}`)) return false
      const requestId = RequestId.of(ClientAddress.headerText(request.headers[RequestId.HEADER]))
      const { status, headers, body } = refusal
      // A client gone before its answer gets nothing written, as from the whole path.
      if (!response.destroyed) {
        response.writeHead(status, {
          "content-type": JSON_CONTENT_TYPE,
          "content-length": Buffer.byteLength(body),
          ...headers,
          [RequestId.HEADER]: requestId
        })
        response.end(body)
      }
      pending.push({ method, route, status, elapsed: performance.now() - started, requestId })
      scheduled ??= setImmediate(flush)
      return true
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => earlyAnswers.set(server, answer)),
      () =>
        Effect.sync(() => {
          earlyAnswers.delete(server)
          if (scheduled !== undefined) clearImmediate(scheduled)
          flush()
        })
    )
  })).pipe(Layer.provide([RateLimiter.layer, AuthFailureGuard.layer]))

/**
 * `routes` served on the API's Node server (listenApi), each request with
 * its id, and with `accessLog` its access line and its count in the request
 * metrics (`serveMiddleware`), the guard's 429 for a blocked address answered
 * before routing as the middleware would (`EarlyRefusals`, the same lines
 * and counts). `EarlyRefusals` is built with the routes, as one of them:
 * `HttpRouter.serve` builds its routes with a memo map of its own, and only
 * there is the layer of the guard the routes' authentication uses the same
 * instance (a layer built outside, before or beside, is another guard).
 */
export const serveApi = <A, E, R>(
  routes: Layer.Layer<A, E, R>,
  options: { readonly accessLog: boolean; readonly disableListenLog?: boolean }
) =>
  HttpRouter.serve(Layer.merge(routes, EarlyRefusals(options)), {
    disableLogger: true,
    disableListenLog: options.disableListenLog ?? false,
    middleware: options.accessLog ? serveMiddleware : AccessLog.requestIds
  })

/**
 * The API's Node server, listening on HOST:PORT and closing by
 * SHUTDOWN_TIMEOUT (docs/operations.md "Settings"); `prepare` adds to the
 * Node server before it listens (main.ts: the answers until the routes serve).
 */
export const apiHttpServer = (prepare: (server: Server) => Server = (server) => server) => Layer.unwrap(Effect.gen(function*() {
  const host = yield* HOST
  const port = yield* PORT
  const shutdownTimeout = yield* SHUTDOWN_TIMEOUT
  return listenApi(prepare(createApiServer(shutdownTimeout)), {
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
  serveApi(AppRoutesNoDeps, { accessLog: true }),
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
