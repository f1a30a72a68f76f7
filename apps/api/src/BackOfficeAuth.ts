/**
 * The back office's session authentication and request validation
 * (docs/decisions.md "Back-office sessions"): the token comes from
 * `Authorization: Session <token>` or, failing that, the `crm_session`
 * cookie; an API key (`Authorization: Bearer …`) never authenticates here.
 * Only the token's hash is looked up; a revoked or expired session is the
 * same 401 UNAUTHENTICATED as an unknown one. A state-changing call
 * authenticated by the cookie passes the cross-site request forgery check
 * first (403 FORBIDDEN).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiError from "effect/http-api/HttpApiError"
import * as Errors from "@school/domain/BackOfficeErrors"
import {
  BackOfficeValidation,
  CurrentEmployee,
  RequiredAccess,
  RoleCheck,
  SessionAuthentication
} from "@school/domain/api/BackOfficeMiddleware"
import * as SessionRules from "@school/domain/Sessions"
import { Sessions } from "@school/persistence/Sessions"
import * as AccessLog from "@school/runtime/AccessLog"
import { JSON_MEDIA_TYPE, parseContentType, readableBodyIn } from "./RequestBody.ts"
import { validationBody } from "./RequestValidation.ts"

const unauthenticated = (message: string) => new Errors.Unauthenticated({ message })

const SAFE_METHODS = new Set(SessionRules.SAFE_METHODS)

/** The host (with port) of an `Origin` header; undefined when it is not a URL (e.g. `null`). */
const originHost = (origin: string): string | undefined => {
  try {
    return new URL(origin).host
  } catch {
    return undefined
  }
}

const isJsonContentType = (value: string | undefined) =>
  value !== undefined && parseContentType(value).mediaType === JSON_MEDIA_TYPE

/**
 * docs/decisions.md "Back-office sessions": a cookie-authenticated call that
 * changes state must carry `Content-Type: application/json`, body or not (a
 * cross-site form or `sendBeacon` cannot send it without a CORS preflight,
 * which this server never grants), and, when an `Origin` header is present,
 * one whose host equals `Host`. Why it fails, or undefined when it passes.
 */
export const csrfFailure = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  if (SAFE_METHODS.has(request.method)) return undefined
  const origin = request.headers["origin"]
  if (origin !== undefined && originHost(origin) !== request.headers["host"]) {
    return "A cross-origin request may not change anything with the session cookie."
  }
  if (!isJsonContentType(request.headers["content-type"])) {
    return "A request with the session cookie that changes something must say Content-Type: application/json."
  }
  return undefined
}

/** The token a request presents, and whether it came in the cookie; a Bearer credential is an API key's. */
const presented = (request: HttpServerRequest.HttpServerRequest):
  | { readonly _tag: "Token"; readonly token: string; readonly cookie: boolean }
  | { readonly _tag: "ApiKey" }
  | { readonly _tag: "None" } =>
{
  const authorization = request.headers["authorization"]
  if (authorization !== undefined) {
    const [scheme, token] = authorization.trim().split(/\s+/u)
    if (scheme?.toLowerCase() === "session" && token !== undefined) return { _tag: "Token", token, cookie: false }
    if (scheme?.toLowerCase() === "bearer") return { _tag: "ApiKey" }
    return { _tag: "None" }
  }
  const cookie = request.cookies[SessionRules.COOKIE_NAME]
  return cookie === undefined || cookie === "" ? { _tag: "None" } : { _tag: "Token", token: cookie, cookie: true }
}

export const SessionAuthenticationLive = Layer.effect(
  SessionAuthentication,
  Effect.gen(function*() {
    const sessions = yield* Sessions
    return SessionAuthentication.of(Effect.fnUntraced(function*(httpEffect) {
      const request = yield* HttpServerRequest.HttpServerRequest
      const credential = presented(request)
      if (credential._tag === "ApiKey") {
        return yield* unauthenticated("API keys do not work on the back office: sign in with POST /sessions.")
      }
      if (credential._tag === "None") {
        return yield* unauthenticated("Sign in with POST /sessions, then send the crm_session cookie or 'Authorization: Session <token>'.")
      }
      if (credential.cookie) {
        const failure = csrfFailure(request)
        if (failure !== undefined) return yield* new Errors.Forbidden({ message: failure })
      }
      const found = SessionRules.isTokenShaped(credential.token)
        ? yield* sessions.findLive(SessionRules.hashToken(credential.token))
        : Option.none()
      if (Option.isNone(found)) return yield* unauthenticated("The session is unknown, ended or expired: sign in again.")
      const session = found.value
      // The session's school goes on the access line (docs/operations.md "Log lines").
      yield* AccessLog.setSchool(session.school_id)
      return yield* Effect.provideService(httpEffect, CurrentEmployee, {
        schoolId: session.school_id,
        employee: session.employee,
        sessionId: session.id,
        expiresAt: session.expires_at
      })
    }))
  })
)

/** Whether the endpoint's `RequiredAccess` admits the role (docs/back-office.md "Roles"). */
const admits = (endpoint: HttpApiEndpoint.Top, role: SessionRules.Role): boolean =>
  Context.get(endpoint.annotations, RequiredAccess).includes(role)

/**
 * The back office's request validation, around every endpoint that decodes
 * something (sign-in included). First, for an endpoint that takes a body,
 * the public API's body check (RequestBody.ts `readableBodyIn`, in the back
 * office's envelope; docs/back-office.md "Answers and errors"): 415
 * UNSUPPORTED_MEDIA_TYPE for a Content-Encoding other than identity (with
 * `Accept-Encoding: identity`), a body without Content-Type, a media type
 * other than JSON or a charset other than UTF-8; 422 VALIDATION_FAILED for
 * bytes that are not UTF-8; the endpoint does not run. A caller the
 * endpoint's role refuses is left to `RoleCheck` (inside this middleware):
 * 403 whatever it sent, its body unread. Then decoding failures become 422
 * VALIDATION_FAILED with per-field messages.
 */
export const BackOfficeValidationLive = Layer.succeed(
  BackOfficeValidation,
  (httpEffect, { endpoint }) =>
    Effect.gen(function*() {
      if (endpoint.payload.size > 0) {
        const caller = yield* Effect.serviceOption(CurrentEmployee)
        if (Option.isNone(caller) || admits(endpoint, caller.value.employee.role)) {
          const unreadable = yield* readableBodyIn(Errors)
          if (unreadable !== undefined) return unreadable
        }
      }
      return yield* httpEffect
    }).pipe(Effect.catch((error) =>
      Effect.fail<typeof error | Errors.ValidationFailed>(
        HttpApiError.HttpApiSchemaError.is(error) ? new Errors.ValidationFailed(validationBody(error)) : error
      )
    ))
)

/**
 * docs/back-office.md "Roles": the endpoint's `RequiredAccess`, checked
 * before its request is decoded: the caller's role is in it, or 403
 * FORBIDDEN and nothing runs. The one place roles are checked; handlers
 * read the caller from `CurrentEmployee`.
 */
export const RoleCheckLive = Layer.succeed(
  RoleCheck,
  (httpEffect, { endpoint }) =>
    Effect.flatMap(CurrentEmployee, (current) =>
      Effect.andThen(
        admits(endpoint, current.employee.role)
          ? Effect.void
          : Effect.fail(new Errors.Forbidden({ message: `The ${current.employee.role} role may not do this.` })),
        httpEffect
      ))
)
