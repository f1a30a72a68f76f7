/**
 * POST /sessions, GET and DELETE /sessions/current of the back office
 * (docs/decisions.md "Back-office sessions"): sign-in with its throttle per
 * (e-mail, client address) and per address and its bounded password checks
 * (SignInGuard.ts), the cookie, the current session, sign-out; and POST
 * /sessions/current/password (docs/back-office.md "Signing in"). A disabled
 * employee's right password is the same 401 as a wrong one, after the same
 * hash check (docs/back-office.md "Staff").
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as HttpEffect from "effect/http/HttpEffect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as Errors from "@school/domain/BackOfficeErrors"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { CurrentEmployee } from "@school/domain/api/BackOfficeMiddleware"
import * as SessionRules from "@school/domain/Sessions"
import { Sessions } from "@school/persistence/Sessions"
import * as AccessLog from "@school/runtime/AccessLog"
import { hashPassword, verifyPassword } from "@school/runtime/Passwords"
import * as SettingKinds from "@school/runtime/SettingKinds"
import { randomBytes } from "node:crypto"
import * as ClientAddress from "../../ClientAddress.ts"
import { invalidBody } from "./Refusals.ts"
import { SignInGuard } from "./SignInGuard.ts"

/** `crm_session=<value>; HttpOnly; SameSite=Lax; Path=/api/crm` (+ `Secure`, ClientAddress.secureCookie, + extra). */
const cookie = (request: HttpServerRequest.HttpServerRequest, trust: ClientAddress.Trusted, value: string, extra = "") =>
  `${SessionRules.COOKIE_NAME}=${value}; HttpOnly; SameSite=Lax; Path=${SessionRules.COOKIE_PATH}${
    ClientAddress.secureCookie(request, trust) ? "; Secure" : ""
  }${extra}`

const setCookie = (trust: ClientAddress.Trusted, value: string, extra = "") =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const header = cookie(request, trust, value, extra)
    yield* HttpEffect.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "set-cookie", header))
    )
  })

/** `SESSION_TTL` (docs/operations.md "Settings"): how long a back-office session lasts from sign-in. */
export const SESSION_TTL = SettingKinds.make("SESSION_TTL", SettingKinds.positiveDuration, SessionRules.DEFAULT_TTL)

const wrongCredentials = () => new Errors.Unauthenticated({ message: "Wrong e-mail or password." })

export const LoginHandlersNoDeps = HttpApiBuilder.group(
  BackOfficeApi,
  "login",
  Effect.fnUntraced(function*(handlers) {
    const sessions = yield* Sessions
    const guard = yield* SignInGuard
    const ttl = yield* SESSION_TTL
    const trust = ClientAddress.trusted(yield* ClientAddress.TRUST_PROXY)
    // Verified when the e-mail is unknown, so both answers cost one scrypt.
    const dummyHash = yield* hashPassword(randomBytes(16).toString("base64url"))

    /** The password check and, when it is right, the new session; None: a failure (SignInGuard counts it). */
    const attempt = Effect.fnUntraced(function*(email: string, password: string) {
      const [login, matches] = yield* guard.hashing(Effect.gen(function*() {
        const login = yield* sessions.findLogin(email)
        const stored = Option.isSome(login) ? login.value.password_hash : dummyHash
        return [login, yield* verifyPassword(password, stored)] as const
      }))
      // A disabled employee's right password is a failure too (docs/back-office.md "Staff").
      if (Option.isNone(login) || !matches || login.value.disabled) return Option.none()
      const token = SessionRules.generateToken()
      // None: disabled since the lookup.
      const created = yield* sessions.create(
        login.value.school_id,
        login.value.employee.id,
        SessionRules.hashToken(token),
        ttl
      )
      return Option.map(created, (session) => ({ token, session, login: login.value }))
    })

    return handlers.handle("create", Effect.fn("BackOfficeApi.login.create")(function*({ payload }) {
      const request = yield* HttpServerRequest.HttpServerRequest
      const client = ClientAddress.clientKey(request, trust)
      const outcome = yield* guard.guarded(payload.email, client, attempt(payload.email, payload.password))
      if (Option.isNone(outcome)) return yield* wrongCredentials()
      const { token, session, login } = outcome.value
      yield* AccessLog.setSchool(login.school_id)
      yield* setCookie(trust, token)
      return { token, expires_at: session.expires_at, employee: login.employee }
    }))
  })
)

const SessionsGroupLive = HttpApiBuilder.group(
  BackOfficeApi,
  "sessions",
  Effect.fnUntraced(function*(handlers) {
    const sessions = yield* Sessions
    const trust = ClientAddress.trusted(yield* ClientAddress.TRUST_PROXY)
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
          yield* setCookie(trust, "", "; Max-Age=0")
          return {}
        }))
  })
)

const PasswordGroupLive = HttpApiBuilder.group(
  BackOfficeApi,
  "password",
  Effect.fnUntraced(function*(handlers) {
    const sessions = yield* Sessions
    const guard = yield* SignInGuard
    const trust = ClientAddress.trusted(yield* ClientAddress.TRUST_PROXY)
    return handlers.handle("change", Effect.fn("BackOfficeApi.password.change")(function*({ payload }) {
      const current = yield* CurrentEmployee
      const request = yield* HttpServerRequest.HttpServerRequest
      const stored = yield* sessions.passwordHash(current.schoolId, current.employee.id)
      // The session's employee exists: the session was found through their row.
      if (Option.isNone(stored)) return yield* Effect.die("the signed-in employee has no row")
      // A wrong current password counts like a failed sign-in (docs/back-office.md "Signing in").
      const right = yield* guard.guarded(
        current.employee.email,
        ClientAddress.clientKey(request, trust),
        guard.hashing(verifyPassword(payload.current_password, stored.value)).pipe(
          Effect.map((matches) => matches ? Option.some(true) : Option.none())
        )
      )
      if (Option.isNone(right)) return yield* wrongCurrentPassword()
      const newHash = yield* guard.hashing(hashPassword(payload.new_password))
      // Stored only if the hash is still the one just checked; every other session ends with it.
      yield* sessions.changePassword(current.schoolId, current.employee.id, current.sessionId, stored.value, newHash).pipe(
        Effect.catchTag("WrongPassword", wrongCurrentPassword)
      )
      return {}
    }))
  })
)

/** 422 VALIDATION_FAILED on `current_password` (docs/back-office.md "Signing in"). */
const wrongCurrentPassword = () =>
  Effect.fail(invalidBody({ current_password: ["This is not your current password"] }))

export const SessionsHandlersNoDeps = Layer.mergeAll(SessionsGroupLive, PasswordGroupLive)
