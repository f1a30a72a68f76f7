/**
 * Everything that leaves the server outside HttpApi's typed errors gets the
 * public envelope too (docs/decisions.md "Requests and responses"): unknown
 * routes (404 not_found), a known path with the wrong method (405 with
 * `Allow`), oversized bodies (413), non-JSON bodies (415), a database that
 * is away, over its bounds or refuses the connection, or one that lacks
 * migrations (503 service_unavailable with `Retry-After`), and any
 * unexpected failure (500 internal_error: logged here, never sent).
 * First of all, a request HTTP/1.1 refuses (no Host, a Transfer-Encoding
 * other than chunked: apps/api/src/ParserErrors.ts) is 400 bad_request and
 * reaches no route.
 * Every JSON response carries `charset=utf-8`.
 * Under the back office's prefix (`/api/crm/`) the same answers use the back
 * office's envelope and codes (libs/domain/src/BackOfficeErrors.ts).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { SqlError } from "effect/sql/SqlError"
import * as FindMyWay from "effect/http/FindMyWay"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as HttpApi from "effect/http-api/HttpApi"
import type { HttpApiGroup } from "effect/http-api"
import { Errors } from "@school/domain"
import * as BackOfficeErrors from "@school/domain/BackOfficeErrors"
import { DatabaseStatus, refusalOf, sqlErrorIn, sqlStateOf } from "@school/runtime/DatabaseStatus"
import { type EncodableError, errorResponse, JSON_CONTENT_TYPE } from "./ErrorResponse.ts"
import { refusedRequest } from "./ParserErrors.ts"

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const

const isPathInput = (path: string): path is HttpRouter.PathInput => path.startsWith("/") || path === "*"

/** A table of every known route, to tell 405 from 404 (`find`, not `has`: params must match). */
export const routeTable = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  extra: ReadonlyArray<readonly [method: string, path: HttpRouter.PathInput]> = [],
  config: Partial<FindMyWay.RouterConfig> = {}
) => {
  const router = FindMyWay.make<true>(config)
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      if (isPathInput(endpoint.path)) router.on(endpoint.method, endpoint.path, true)
    }
  })
  for (const [method, path] of extra) router.on(method, path, true)
  return (path: string): ReadonlyArray<string> => METHODS.filter((method) => router.find(method, path) !== undefined)
}

/** The rows of an error table this module answers with; the public and the back office's tables both have them. */
interface EnvelopeRows {
  readonly ValidationFailed: new(body: { readonly message: string }) => EncodableError
  readonly NotFound: new(body: { readonly message: string }) => EncodableError
  readonly MethodNotAllowed: new(body: { readonly message: string }) => EncodableError
  readonly PayloadTooLarge: new(body: { readonly message: string }) => EncodableError
  readonly UnsupportedMediaType: new(body: { readonly message: string }) => EncodableError
  readonly InternalError: new(body: { readonly message: string }) => EncodableError
  readonly BadRequest: new(body: { readonly message: string }) => EncodableError
  readonly ServiceUnavailable: new(
    body: { readonly message: string; readonly headers: { readonly "retry-after": number } }
  ) => EncodableError
}

const BACK_OFFICE_PREFIX = "/api/crm/"

/** The error table of the API a path belongs to: the back office's under `/api/crm/`, else the public one. */
const rowsFor = (path: string): EnvelopeRows => path.startsWith(BACK_OFFICE_PREFIX) ? BackOfficeErrors : Errors

/** The error for a status HttpApi or the router answered without our envelope, in the path's table. */
const fromStatusFor = (path: string) => (status: number): EncodableError => {
  const rows = rowsFor(path)
  switch (status) {
    case 400:
    case 422:
      return new rows.ValidationFailed({ message: "The request could not be read." })
    case 404:
      return new rows.NotFound({ message: "No such resource." })
    case 405:
      return new rows.MethodNotAllowed({ message: "This method is not allowed on this path." })
    case 413:
      return new rows.PayloadTooLarge({ message: "The request body is larger than 256 KiB." })
    case 415:
      return new rows.UnsupportedMediaType({ message: "Send the body as application/json." })
    default:
      return new rows.InternalError({ message: "Something went wrong on our side. Try again later." })
  }
}

const isJson = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Uint8Array" && response.body.contentType.startsWith("application/json")

/** Any error status without our JSON body (HttpApi's bare 413/415/500s) gets the envelope, keeping its headers. */
const ensureEnvelope = (response: HttpServerResponse.HttpServerResponse, path: string) => {
  if (response.status < 400 || isJson(response)) return withCharset(response)
  const status = response.status === 400 ? 422 : response.status >= 500 ? 500 : response.status
  const kept: Record<string, string> = {}
  for (const [name, value] of Object.entries(response.headers)) {
    if (name !== "content-type" && name !== "content-length") kept[name] = value
  }
  return HttpServerResponse.setHeaders(errorResponse(fromStatusFor(path)(status)), kept)
}

const withCharset = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Uint8Array" && response.body.contentType === "application/json"
    ? HttpServerResponse.setHeader(response, "content-type", JSON_CONTENT_TYPE)
    : response

/** docs/decisions.md "Requests and responses": how long a 503 asks the client to wait. */
export const RETRY_AFTER_SECONDS = 2

/**
 * SQLSTATEs that say the server is going away or cannot take us now, which
 * the driver leaves unclassified: admin_shutdown, crash_shutdown,
 * cannot_connect_now, and class 53 (insufficient resources: too many
 * connections, out of memory, disk full). The refusals of a connection
 * (libs/runtime/src/DatabaseStatus.ts `refusalOf`: the login, no such
 * database, too many clients, starting up) are unavailable too.
 */
const unavailableStates = new Set(["57P01", "57P02", "57P03"])

/**
 * Whether a failed request failed because the database is away or over its
 * bounds rather than because of a bug (docs/decisions.md "Requests and
 * responses"): no connection (refused, reset, no free one within
 * DATABASE_ACQUIRE_TIMEOUT, which Sql.ts reports as a ConnectionError), a
 * statement past DATABASE_STATEMENT_TIMEOUT or a lock wait past its bound,
 * the server shutting down or out of resources, the server refusing the
 * connection (a login it refuses, no such database: a configuration the
 * operator fixes while the process waits). Every other SqlError stays a
 * 500. The one place that decides it.
 */
export const isDatabaseUnavailable = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((reason) => {
    const error = reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : undefined
    if (!(error instanceof SqlError)) return false
    switch (error.reason._tag) {
      case "ConnectionError":
      case "StatementTimeoutError":
      case "LockTimeoutError":
        return true
      default: {
        const state = sqlStateOf(error)
        return state !== undefined && (unavailableStates.has(state) || state.startsWith("53") || refusalOf(error) !== undefined)
      }
    }
  })

/** 503 service_unavailable with `Retry-After` in the envelope of the path's API. */
export const unavailableError = (path: string): EncodableError =>
  new (rowsFor(path).ServiceUnavailable)({
    message: "The database is unavailable. Try again later.",
    headers: { "retry-after": RETRY_AFTER_SECONDS }
  })

const serviceUnavailable = (path: string) => errorResponse(unavailableError(path))

const isRouteNotFound = (cause: Cause.Cause<unknown>) =>
  cause.reasons.some((reason) =>
    reason._tag === "Fail" && (
      reason.error instanceof HttpServerError.RouteNotFound ||
      (reason.error instanceof HttpServerError.HttpServerError &&
        reason.error.reason instanceof HttpServerError.RouteNotFound)
    )
  )

export const ErrorEnvelope = (allowedMethods: (path: string) => ReadonlyArray<string>) => {
  /** 404 for an unknown path; 405 with `Allow` for a known path and another method. */
  const noRoute = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const path = request.url.split("?")[0] ?? "/"
    const allowed = allowedMethods(path)
    const errorFor = fromStatusFor(path)
    return allowed.length === 0
      ? errorResponse(errorFor(404))
      : HttpServerResponse.setHeader(errorResponse(errorFor(405)), "allow", allowed.join(", "))
  })
  return HttpRouter.middleware((httpEffect) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = request.url.split("?")[0] ?? "/"
      const refused = refusedRequest(request)
      if (refused !== undefined) {
        const error = new (rowsFor(path).BadRequest)({ message: refused.message })
        return HttpServerResponse.setHeader(errorResponse(error), "connection", "close")
      }
      const exit = yield* Effect.exit(httpEffect)
      if (Exit.isSuccess(exit)) {
        const response = exit.value
        return response.status === 404 && !isJson(response) ? yield* noRoute : ensureEnvelope(response, path)
      }
      const cause = exit.cause
      if (Cause.hasInterruptsOnly(cause)) return yield* Effect.failCause(cause)
      if (isRouteNotFound(cause)) return yield* noRoute
      const sqlError = sqlErrorIn(cause)
      if (sqlError !== undefined) {
        // A refusal, or a database without the migrations this code needs, is the process's state:
        // logged once when it begins (libs/runtime/src/DatabaseStatus.ts), not per request.
        const status = yield* DatabaseStatus
        const refused = refusalOf(sqlError)
        if (refused !== undefined) {
          yield* status.failed({ _tag: "Refused", ...refused })
          return serviceUnavailable(path)
        }
        if ((yield* status.current)._tag === "Behind") return serviceUnavailable(path)
      }
      if (isDatabaseUnavailable(cause)) {
        yield* Effect.logWarning("request failed: the database is unavailable", cause)
        return serviceUnavailable(path)
      }
      const [response] = yield* HttpServerError.causeResponse(cause)
      if (response.status >= 500) {
        yield* Effect.logError("request failed", cause)
      }
      return ensureEnvelope(response, path)
    }), { global: true })
}
