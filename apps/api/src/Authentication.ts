/**
 * Bearer-key authentication (docs/integrators.md "Authentication",
 * docs/decisions.md "Authentication and scopes") and the per-key rate limit
 * (docs/integrators.md "Limits", docs/decisions.md "Rate limits"), the first
 * step of every request. Order: the key's shape, then a key this process
 * already knows to be over budget (429 with no I/O), then
 * ONE round trip that looks the key up by its prefix and, if it
 * authenticates, counts the request; then a constant-time comparison of the
 * secret's hash, revoked before expired (401), and the limit's verdict (429
 * with `Retry-After`, no `X-RateLimit-*` headers). Both answers are the
 * contract's typed errors.
 *
 * Before the round trip, the guard against failed authentications per client
 * address (`AuthFailureGuard.ts`, docs/decisions.md "Rate limits") may answer
 * instead: the same 401 for a credential this client just failed with, or
 * 429 for a client that has spent its failures; after it, the guard learns
 * what the database said.
 *
 * The guard's 429 is also decided before routing (`earlyRefusal`, answered
 * by apps/api/src/Server.ts `EarlyRefusals`): the same credential, the same
 * checks in the same order, with the same answer, for a fraction of the
 * work; the request then never reaches this middleware.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import type { IncomingMessage } from "node:http"
import { ApiKey, Errors, RateLimit } from "@school/domain"
import { Authentication, CurrentKey } from "@school/domain/api/Middleware"
import type { Encoded } from "@school/domain/ErrorTable"
import type { Admission } from "@school/persistence/RateLimits"
import * as AccessLog from "@school/runtime/AccessLog"
import { AuthFailureGuard, type FailureReason } from "./AuthFailureGuard.ts"
import * as ClientAddress from "./ClientAddress.ts"
import * as Metrics from "./Metrics.ts"
import { RateLimiter } from "./RateLimiter.ts"

/** 429 rate_limit_exceeded, `Retry-After` in whole seconds (docs/integrators.md "Limits"). */
const rateLimitExceeded = (waitMicros: number) => {
  const retryAfter = RateLimit.retryAfterSeconds(waitMicros)
  return new Errors.RateLimitExceeded({
    message: `Too many requests for this API key. Retry after ${retryAfter} second${retryAfter === 1 ? "" : "s"}.`,
    headers: { "retry-after": retryAfter }
  })
}

/**
 * 429 rate_limit_exceeded for a client address that has spent its failed
 * authentications (docs/decisions.md "Rate limits"), `Retry-After` in whole seconds.
 */
const tooManyFailures = (waitMicros: number) => {
  const retryAfter = RateLimit.retryAfterSeconds(waitMicros)
  return new Errors.RateLimitExceeded({
    message: `Too many failed authentications from this address. Retry after ${retryAfter} second${
      retryAfter === 1 ? "" : "s"
    }.`,
    headers: { "retry-after": retryAfter }
  })
}

/**
 * Why the key found (or not) for a credential does not authenticate; None when it does (docs/integrators.md
 * "Authentication"). `secretHash`: the presented secret's (`ApiKey.hashSecret`).
 */
export const failureOf = (found: Option.Option<Admission>, secretHash: Uint8Array): Option.Option<FailureReason> => {
  if (Option.isNone(found)) return Option.some("unknown_key")
  const { key } = found.value
  if (!ApiKey.hashMatches(secretHash, key.secret_hash)) return Option.some("unknown_key")
  if (key.revoked) return Option.some("revoked_key")
  if (key.expired) return Option.some("expired_key")
  return Option.none()
}

const BEARER = "bearer"

/**
 * The credential of `Authorization: Bearer <credential>` as the bearer
 * middleware receives it (effect/http-api `HttpApiSecurity.bearer`): the
 * scheme in any case, one space or more, the rest as sent; "" for anything else.
 */
export const bearerCredential = (authorization: string | undefined): string => {
  if (
    authorization === undefined || authorization.length <= BEARER.length || authorization.charCodeAt(BEARER.length) !== 32 ||
    authorization.slice(0, BEARER.length).toLowerCase() !== BEARER
  ) return ""
  let start = BEARER.length + 1
  while (authorization.charCodeAt(start) === 32) start++
  return authorization.slice(start)
}

/** The guard's 429 as sent: the encoded `tooManyFailures`, its envelope as JSON text. */
export interface EncodedRefusal extends Omit<Encoded, "body"> {
  readonly body: string
}

/** Distinct waits kept at most (whole seconds, at most the guard's interval and the failures in flight). */
const MAX_ENCODED = 64

/**
 * Decides, before routing and from Node's own message, whether the bearer
 * middleware would answer the guard's 429 (docs/decisions.md "Rate limits"):
 * that answer, encoded, when it would; undefined when the request must go the
 * whole way. The same steps as the middleware, in its order: the
 * credential's shape, no local block of the key under its prefix (that
 * answer is the per-key 429, the middleware's), then the guard's Blocked
 * verdict, for the address ClientAddress.ts finds (TRUST_PROXY). A client
 * that is not blocked costs the credential's parse and a map lookup or two;
 * the secret is hashed only for a blocked one, once (the guard keeps the hash
 * for the middleware's `check`). The answer depends on the whole seconds of
 * Retry-After alone: it is encoded once per value (the error's construction
 * and encoding cost more than the rest of the refusal). A refusal is counted
 * as the middleware counts it (`refused`).
 */
export const earlyRefusal = Effect.gen(function*() {
  const limiter = yield* RateLimiter
  const guard = yield* AuthFailureGuard
  const trust = ClientAddress.trusted(yield* ClientAddress.TRUST_PROXY)
  const encoded = new Map<number, EncodedRefusal>()
  const encode = (wait: number): EncodedRefusal => {
    const seconds = RateLimit.retryAfterSeconds(wait)
    const found = encoded.get(seconds)
    if (found !== undefined) return found
    const { status, headers, body } = tooManyFailures(wait).encode()
    const refusal = { status, headers, body: JSON.stringify(body) }
    if (encoded.size >= MAX_ENCODED) encoded.clear()
    encoded.set(seconds, refusal)
    return refusal
  }
  return (message: IncomingMessage): EncodedRefusal | undefined => {
    const parsed = ApiKey.parseApiKey(bearerCredential(message.headers.authorization))
    if (Option.isNone(parsed)) return undefined
    const { prefix, secret } = parsed.value
    if (limiter.holdsBlock(prefix)) return undefined
    const wait = guard.blockedEarly(() => ClientAddress.messageAddress(message, trust), prefix, secret, message)
    return wait === undefined ? undefined : encode(wait)
  }
})

/** What the middleware counts when it answers the guard's 429; `earlyRefusal`'s answers count the same. */
export const refused: Effect.Effect<void> = Metrics.rateLimitRejected("auth_failures")

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    const guard = yield* AuthFailureGuard
    const trust = ClientAddress.trusted(yield* ClientAddress.TRUST_PROXY)
    return Authentication.of({
      bearer: Effect.fnUntraced(function*(httpEffect, { credential }) {
        const parsed = ApiKey.parseApiKey(Redacted.value(credential))
        if (Option.isNone(parsed)) {
          return yield* Errors.unauthorized("missing_or_malformed_key")
        }
        const { prefix, secret } = parsed.value
        const blocked = yield* limiter.blocked(prefix, secret)
        if (Option.isSome(blocked)) {
          yield* Metrics.rateLimitRejected("key")
          return yield* rateLimitExceeded(blocked.value)
        }
        const request = yield* HttpServerRequest.HttpServerRequest
        const verdict = yield* guard.check(ClientAddress.clientAddress(request, trust), prefix, secret, request.source)
        if (verdict._tag === "Repeat") return yield* Errors.unauthorized(verdict.reason)
        if (verdict._tag === "Blocked") {
          yield* refused
          return yield* tooManyFailures(verdict.wait)
        }
        // The guard hashed the secret (once a request): the lookup and the comparison take its hash.
        const found = yield* limiter.admit(prefix, verdict.secretHash)
        const failure = failureOf(found, verdict.secretHash)
        yield* guard.settle(verdict, failure)
        if (Option.isSome(failure)) return yield* Errors.unauthorized(failure.value)
        const { key, outcome } = Option.getOrThrow(found)
        // The key authenticated: its school goes on the access line (docs/operations.md "Log lines").
        yield* AccessLog.setSchool(key.school_id)
        if (outcome._tag === "Rejected") {
          yield* Metrics.rateLimitRejected("key")
          return yield* rateLimitExceeded(outcome.wait)
        }
        return yield* Effect.provideService(httpEffect, CurrentKey, {
          keyId: key.id,
          schoolId: key.school_id,
          scope: key.scope,
          plan: key.plan
        })
      })
    })
  })
).pipe(Layer.provide([RateLimiter.layer, AuthFailureGuard.layer]))
