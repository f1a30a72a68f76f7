/**
 * The one-line access log of an HTTP process (docs/operations.md "Settings":
 * LOG_LEVEL and LOG_FORMAT): method, the matched route's template, status
 * and duration, at Info. Never the path or the query as sent: a client may
 * put an API key in either (`/students/svc_…`, `?key=svc_…`), and a log line
 * is read by more people than the key is meant for. A request that matches
 * no route is logged as `(no route)`.
 *
 * It replaces `HttpRouter.serve`'s own logger (`disableLogger: true`), which
 * writes the raw path as `http.url`. Give it as `serve`'s `middleware`, so
 * the status is the one sent, after every rewrite of the response.
 *
 * `requestIds`, the other `serve` middleware here, gives each request its id
 * (libs/domain/src/RequestId.ts); put it outside this one, so the access
 * line carries the id too.
 *
 * The same pass counts the request in the HTTP metrics (libs/runtime/src/Metrics.ts),
 * with the route template it has already found: one `find` per request.
 *
 * The school of an authenticated request (public key or back-office
 * session) is known only inside the HttpApi middleware, which runs within
 * this one: this middleware gives each request a `RequestSchool` holder,
 * the authentication fills it, and the access line reads it (`school_id`).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FindMyWay from "effect/http/FindMyWay"
import * as HttpEffect from "effect/http/HttpEffect"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as RequestId from "@school/domain/RequestId"
import type { HttpRecorder } from "./Metrics.ts"

/** What an unmatched request is logged as. */
export const NO_ROUTE = "(no route)"

const isPathInput = (path: string): path is FindMyWay.PathInput => path.startsWith("/") || path === "*"

/**
 * The template of the route a request matches, from the same routes and
 * router configuration as the server's own router (HEAD falls back to GET,
 * as the router does). One `find` per request.
 */
export const routeTemplates = (
  routes: Iterable<readonly [method: string, path: string]>,
  config: Partial<FindMyWay.RouterConfig> = {}
): (method: string, url: string) => string => {
  const router = FindMyWay.make<string>(config)
  for (const [method, path] of routes) {
    if (isPathInput(path)) router.on(method, path, path)
  }
  return (method, url) =>
    router.find(method, url)?.handler ?? (method === "HEAD" ? router.find("GET", url)?.handler : undefined) ?? NO_ROUTE
}

/**
 * The school of the request being served, for its access line: the holder
 * `middleware` gives each request, filled by the authentication. Outside a
 * request served with `middleware` there is none (`undefined`) and nothing
 * is recorded.
 */
export const RequestSchool = Context.Reference<{ schoolId: number | undefined } | undefined>(
  "@school/runtime/AccessLog/RequestSchool",
  { defaultValue: () => undefined }
)

/** Tells the access line which school the request is for (a no-op outside `middleware`). */
export const setSchool = (schoolId: number): Effect.Effect<void> =>
  Effect.map(RequestSchool, (holder) => {
    if (holder !== undefined) holder.schoolId = schoolId
  })

/**
 * `serve`'s middleware: runs the request, then logs one line about it and,
 * given a `record`, counts it in the HTTP metrics.
 */
export const middleware = (templateOf: (method: string, url: string) => string, record?: HttpRecorder) =>
<E, R>(
  httpApp: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.contextWith((context: Context.Context<HttpServerRequest.HttpServerRequest>) => {
    const request = Context.get(context, HttpServerRequest.HttpServerRequest)
    const started = performance.now()
    const school: { schoolId: number | undefined } = { schoolId: undefined }
    return Effect.onExit(Effect.provideService(httpApp, RequestSchool, school), (exit) => {
      const route = templateOf(request.method, request.url)
      // A failure that reaches here has no response of ours: the server answers it (500, or 499 for a client gone).
      const status = Exit.isSuccess(exit) ? exit.value.status : HttpServerError.causeResponseStripped(exit.cause)[0].status
      return answered(context, record, request.method, route, status, performance.now() - started, school.schoolId)
    })
  })

/**
 * The access line of one answered request, counted first in the HTTP
 * metrics given a `record`: what `middleware` does once the response is
 * known, for a request answered without it (apps/api/src/Server.ts answers
 * some before routing). `elapsed` in ms.
 */
export const answered = (
  context: Context.Context<never>,
  record: HttpRecorder | undefined,
  method: string,
  route: string,
  status: number,
  elapsed: number,
  schoolId: number | undefined
): Effect.Effect<void> => {
  if (record !== undefined) record(context, method, route, status, elapsed / 1000)
  const durationMs = Math.round(elapsed * 100) / 100
  return Effect.logInfo(`${method} ${route} ${status} ${durationMs}ms`).pipe(
    Effect.annotateLogs(
      schoolId === undefined
        ? {
          "http.method": method,
          "http.route": route,
          "http.status": status,
          "http.duration_ms": durationMs
        }
        : {
          "http.method": method,
          "http.route": route,
          "http.status": status,
          "http.duration_ms": durationMs,
          school_id: schoolId
        }
    )
  )
}

/**
 * `serve`'s middleware that gives each request its id
 * (libs/domain/src/RequestId.ts): `X-Request-Id` on every answer, the
 * router's own included, and `request_id` on every log line of the request.
 * The header is set just before the response is sent: a change made to the
 * response in `serve`'s middleware itself would come too late.
 */
export const requestIds = <E, R>(
  httpApp: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const requestId = RequestId.of(request.headers[RequestId.HEADER])
    return httpApp.pipe(
      HttpEffect.withPreResponseHandler((_, response) =>
        Effect.succeed(HttpServerResponse.setHeader(response, RequestId.HEADER, requestId))
      ),
      Effect.annotateLogs(RequestId.ANNOTATION, requestId)
    )
  })
