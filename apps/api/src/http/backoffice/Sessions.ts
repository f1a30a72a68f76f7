/**
 * POST /sessions, GET and DELETE /sessions/current of the back office
 * (docs/decisions.md "Back-office sessions"): sign-in with its throttle per
 * e-mail, the cookie, the current session, sign-out.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as HttpEffect from "effect/http/HttpEffect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as Errors from "@school/domain/BackOfficeErrors"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { CurrentEmployee } from "@school/domain/api/BackOfficeMiddleware"
import { retryAfterSeconds } from "@school/domain/RateLimit"
import * as SessionRules from "@school/domain/Sessions"
import { Sessions } from "@school/persistence/Sessions"
import * as AccessLog from "@school/runtime/AccessLog"
import { hashPassword, verifyPassword } from "@school/runtime/Passwords"
import * as SettingKinds from "@school/runtime/SettingKinds"
import { randomBytes } from "node:crypto"
import * as Metrics from "../../Metrics.ts"

/** Whether the request came over HTTPS, as the proxy in front says (`X-Forwarded-Proto`). */
const viaHttps = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["x-forwarded-proto"]?.split(",")[0]?.trim().toLowerCase() === "https"

/** `crm_session=<value>; HttpOnly; SameSite=Lax; Path=/api/crm` (+ `Secure` over HTTPS, + extra). */
const cookie = (request: HttpServerRequest.HttpServerRequest, value: string, extra = "") =>
  `${SessionRules.COOKIE_NAME}=${value}; HttpOnly; SameSite=Lax; Path=${SessionRules.COOKIE_PATH}${
    viaHttps(request) ? "; Secure" : ""
  }${extra}`

const setCookie = (value: string, extra = "") =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const header = cookie(request, value, extra)
    yield* HttpEffect.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "set-cookie", header))
    )
  })

/** `SESSION_TTL` (docs/operations.md "Settings"): how long a back-office session lasts from sign-in. */
export const SESSION_TTL = SettingKinds.make("SESSION_TTL", SettingKinds.positiveDuration, SessionRules.DEFAULT_TTL)

/** Rounds of compare-and-set before a contended attempt is told to wait. */
const ADMIT_ROUNDS = 5

/**
 * docs/decisions.md "Back-office sessions": admits an attempt (0), counting it
 * as a failure until its password proves right, or says how many
 * milliseconds it must wait. An attempt inside the wait is neither checked
 * nor counted.
 */
const admit = (sessions: Sessions["Service"], email: string) =>
  Effect.gen(function*() {
    for (let round = 0; round < ADMIT_ROUNDS; round++) {
      const failures = yield* sessions.failures(email)
      const seen = Option.isSome(failures) ? failures.value.failures : 0
      const wait = Option.isSome(failures)
        ? SessionRules.loginWaitMs(seen, failures.value.last_failed_at_ms, failures.value.now_ms)
        : 0
      if (wait > 0) return wait
      if (yield* sessions.claimAttempt(email, seen)) return 0
    }
    return SessionRules.FIRST_DELAY_MS
  })

const wrongCredentials = () => new Errors.Unauthenticated({ message: "Wrong e-mail or password." })

export const LoginHandlersNoDeps = HttpApiBuilder.group(
  BackOfficeApi,
  "login",
  Effect.fnUntraced(function*(handlers) {
    const sessions = yield* Sessions
    const ttl = yield* SESSION_TTL
    // Verified when the e-mail is unknown, so both answers cost one scrypt.
    const dummyHash = yield* hashPassword(randomBytes(16).toString("base64url"))
    return handlers.handle("create", Effect.fn("BackOfficeApi.login.create")(function*({ payload }) {
      const admitted = yield* admit(sessions, payload.email)
      if (admitted > 0) {
        const retryAfter = retryAfterSeconds(admitted * 1000)
        yield* Metrics.rateLimitRejected("sign_in")
        return yield* new Errors.TooManyAttempts({
          message: `Too many failed sign-ins for this e-mail. Retry after ${retryAfter} second${retryAfter === 1 ? "" : "s"}.`,
          headers: { "retry-after": retryAfter }
        })
      }
      const login = yield* sessions.findLogin(payload.email)
      const matches = yield* verifyPassword(
        payload.password,
        Option.isSome(login) ? login.value.password_hash : dummyHash
      )
      // The attempt was counted as a failure when it was admitted.
      if (Option.isNone(login) || !matches) return yield* wrongCredentials()
      yield* sessions.clearFailures(payload.email)
      yield* AccessLog.setSchool(login.value.school_id)
      const token = SessionRules.generateToken()
      const created = yield* sessions.create(
        login.value.school_id,
        login.value.employee.id,
        SessionRules.hashToken(token),
        ttl
      )
      yield* setCookie(token)
      return { token, expires_at: created.expires_at, employee: login.value.employee }
    }))
  })
)

export const SessionsHandlersNoDeps = HttpApiBuilder.group(
  BackOfficeApi,
  "sessions",
  Effect.fnUntraced(function*(handlers) {
    const sessions = yield* Sessions
    return handlers
      .handle("current", () =>
        Effect.gen(function*() {
          const current = yield* CurrentEmployee
          return { employee: current.employee, expires_at: current.expiresAt }
        }))
      .handle("delete", () =>
        Effect.gen(function*() {
          const current = yield* CurrentEmployee
          yield* sessions.revoke(current.schoolId, current.sessionId)
          yield* setCookie("", "; Max-Age=0")
          return {}
        }))
  })
)
