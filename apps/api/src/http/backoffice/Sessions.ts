/**
 * POST /sessions, GET and DELETE /sessions/current of the back office
 * (docs/decisions.md "Back-office sessions"): sign-in with its throttle per
 * (e-mail, client address) and per address and its bounded password checks,
 * the cookie, the current session, sign-out; and POST
 * /sessions/current/password (docs/back-office.md "Signing in"). A disabled
 * employee's right password is the same 401 as a wrong one, after the same
 * hash check (docs/back-office.md "Staff").
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Semaphore from "effect/Semaphore"
import * as HttpEffect from "effect/http/HttpEffect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as Errors from "@school/domain/BackOfficeErrors"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { CurrentEmployee } from "@school/domain/api/BackOfficeMiddleware"
import { retryAfterSeconds } from "@school/domain/RateLimit"
import * as LoginThrottle from "@school/domain/LoginThrottle"
import * as SessionRules from "@school/domain/Sessions"
import { Sessions } from "@school/persistence/Sessions"
import * as AccessLog from "@school/runtime/AccessLog"
import { hashPassword, verifyPassword } from "@school/runtime/Passwords"
import * as SettingKinds from "@school/runtime/SettingKinds"
import { randomBytes } from "node:crypto"
import * as ClientAddress from "../../ClientAddress.ts"
import * as Metrics from "../../Metrics.ts"
import { invalidBody } from "./Refusals.ts"

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

/**
 * Password checks (scrypt) running at once in this process, at most, and how
 * long an attempt waits for one before it is refused (429, Retry-After 1,
 * counted against its address): a spray costs the sprayer, not the owner.
 */
export const MAX_CHECKS = 4
export const CHECK_WAIT = Duration.seconds(2)

/**
 * How long an attempt waits for the attempts of the same (e-mail, address)
 * ahead of it in this process: they go one at a time, so each reads the
 * failures of those before it (a burst of wrong guesses gets the free ones
 * and then waits) while concurrent correct sign-ins all get in.
 */
export const PAIR_WAIT = Duration.seconds(10)

const wrongCredentials = () => new Errors.Unauthenticated({ message: "Wrong e-mail or password." })

const tooManyAttempts = (waitMs: number, why: string) =>
  Effect.gen(function*() {
    const retryAfter = retryAfterSeconds(waitMs * 1000)
    yield* Metrics.rateLimitRejected("sign_in")
    return yield* new Errors.TooManyAttempts({
      message: `Too many failed sign-ins ${why}. Retry after ${retryAfter} second${retryAfter === 1 ? "" : "s"}.`,
      headers: { "retry-after": retryAfter }
    })
  })

export const LoginHandlersNoDeps = HttpApiBuilder.group(
  BackOfficeApi,
  "login",
  Effect.fnUntraced(function*(handlers) {
    const sessions = yield* Sessions
    const ttl = yield* SESSION_TTL
    const trust = ClientAddress.trusted(yield* ClientAddress.TRUST_PROXY)
    // Verified when the e-mail is unknown, so both answers cost one scrypt.
    const dummyHash = yield* hashPassword(randomBytes(16).toString("base64url"))
    const checks = yield* Semaphore.make(MAX_CHECKS)
    const { interval } = LoginThrottle.ADDRESS_BUDGET
    // Client → its attempts past their pair's turn, being throttled or checked in this process (LoginThrottle `inFlight`).
    const running = new Map<string, number>()
    const enter = (client: string) => Effect.sync(() => running.set(client, (running.get(client) ?? 0) + 1))
    const leave = (client: string) =>
      Effect.sync(() => {
        const left = (running.get(client) ?? 1) - 1
        if (left <= 0) running.delete(client)
        else running.set(client, left)
      })
    // `e-mail address` → its one-at-a-time lock and how many attempts hold or wait for it.
    const pairs = new Map<string, { readonly lock: Semaphore.Semaphore; users: number }>()
    const inTurn = <A, E, R>(email: string, client: string, self: Effect.Effect<A, E, R>) => {
      const key = `${email.trim().toLowerCase()} ${client}`
      return Effect.acquireUseRelease(
        Effect.sync(() => {
          const entry = pairs.get(key) ?? { lock: Semaphore.makeUnsafe(1), users: 0 }
          entry.users++
          pairs.set(key, entry)
          return entry
        }),
        (entry) =>
          Effect.gen(function*() {
            const taken = yield* Semaphore.take(entry.lock, 1).pipe(Effect.timeoutOption(PAIR_WAIT))
            if (Option.isNone(taken)) {
              yield* sessions.recordRefusal(client, interval)
              return yield* tooManyAttempts(1_000, "at the moment")
            }
            return yield* self.pipe(Effect.ensuring(Semaphore.release(entry.lock, 1)))
          }),
        (entry) =>
          Effect.sync(() => {
            entry.users--
            if (entry.users === 0) pairs.delete(key)
          })
      )
    }
    const failed = (email: string, client: string) =>
      Effect.andThen(sessions.recordFailure(email, client, interval, LoginThrottle.FORGET_AFTER_MS), wrongCredentials())

    /**
     * docs/decisions.md "Back-office sessions": the throttle per (e-mail,
     * client address) and per address (LoginThrottle). A refused attempt
     * counts against its address; an admitted one is counted only when its
     * password proves wrong.
     */
    const attempt = Effect.fnUntraced(function*(email: string, password: string, client: string) {
      const state = yield* sessions.throttle(email, client)
      const pair = state.failures === null || state.last_failed_at_ms === null
        ? undefined
        : { failures: state.failures, lastFailedAtMs: state.last_failed_at_ms }
      const pairWait = LoginThrottle.pairWaitMs(pair, state.now_ms)
      const wait = LoginThrottle.waitMs({
        pair,
        address: state.address_ms,
        // The others: this attempt is running too.
        inFlight: (running.get(client) ?? 1) - 1,
        nowMs: state.now_ms
      })
      if (wait > 0) {
        yield* sessions.recordRefusal(client, interval)
        return yield* tooManyAttempts(wait, pairWait === wait ? "for this e-mail" : "from this address")
      }
      const permit = yield* Semaphore.take(checks, 1).pipe(Effect.timeoutOption(CHECK_WAIT))
      if (Option.isNone(permit)) {
        yield* sessions.recordRefusal(client, interval)
        return yield* tooManyAttempts(1_000, "at the moment")
      }
      const [login, matches] = yield* Effect.gen(function*() {
        const login = yield* sessions.findLogin(email)
        const stored = Option.isSome(login) ? login.value.password_hash : dummyHash
        return [login, yield* verifyPassword(password, stored)] as const
      }).pipe(Effect.ensuring(Semaphore.release(checks, 1)))
      // A disabled employee's right password is a failure too (docs/back-office.md "Staff").
      if (Option.isNone(login) || !matches || login.value.disabled) return yield* failed(email, client)
      const token = SessionRules.generateToken()
      // None: disabled since the lookup.
      const created = yield* sessions.create(
        login.value.school_id,
        login.value.employee.id,
        SessionRules.hashToken(token),
        ttl
      )
      if (Option.isNone(created)) return yield* failed(email, client)
      yield* sessions.clearFailures(email, client)
      yield* AccessLog.setSchool(login.value.school_id)
      yield* setCookie(trust, token)
      return { token, expires_at: created.value.expires_at, employee: login.value.employee }
    })

    return handlers.handle("create", Effect.fn("BackOfficeApi.login.create")(function*({ payload }) {
      const request = yield* HttpServerRequest.HttpServerRequest
      const client = ClientAddress.clientKey(request, trust)
      const counted = enter(client).pipe(
        Effect.andThen(attempt(payload.email, payload.password, client)),
        Effect.ensuring(leave(client))
      )
      return yield* inTurn(payload.email, client, counted)
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
    return handlers.handle("change", Effect.fn("BackOfficeApi.password.change")(function*({ payload }) {
      const current = yield* CurrentEmployee
      const stored = yield* sessions.passwordHash(current.schoolId, current.employee.id)
      // The session's employee exists: the session was found through their row.
      if (Option.isNone(stored)) return yield* Effect.die("the signed-in employee has no row")
      if (!(yield* verifyPassword(payload.current_password, stored.value))) return yield* wrongCurrentPassword()
      const newHash = yield* hashPassword(payload.new_password)
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
