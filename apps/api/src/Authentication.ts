/**
 * Bearer-key authentication (spec 5.1, docs/decisions.md "Authentication and
 * scopes") and the per-key rate limit (spec 8, docs/decisions.md "Rate
 * limits"), the first step of every request. Order: the key's shape, then a
 * key this process already knows to be over budget (429 with no I/O), then
 * ONE round trip that looks the key up by its prefix and, if it
 * authenticates, counts the request; then a constant-time comparison of the
 * secret's hash, revoked before expired (401), and the limit's verdict (429
 * with `Retry-After`, no `X-RateLimit-*` headers). Both answers are the
 * contract's typed errors.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { ApiKey, Errors, RateLimit } from "@school/domain"
import { Authentication, CurrentKey } from "@school/domain/api/Middleware"
import { RateLimiter } from "./RateLimiter.ts"

/** 429 rate_limit_exceeded, `Retry-After` in whole seconds (spec 8). */
const rateLimitExceeded = (waitMicros: number) => {
  const retryAfter = RateLimit.retryAfterSeconds(waitMicros)
  return new Errors.RateLimitExceeded({
    message: `Too many requests for this API key. Retry after ${retryAfter} second${retryAfter === 1 ? "" : "s"}.`,
    headers: { "retry-after": retryAfter }
  })
}

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    return Authentication.of({
      bearer: Effect.fnUntraced(function*(httpEffect, { credential }) {
        const parsed = ApiKey.parseApiKey(Redacted.value(credential))
        if (Option.isNone(parsed)) {
          return yield* Errors.unauthorized("missing_or_malformed_key")
        }
        const { prefix, secret } = parsed.value
        const blocked = yield* limiter.blocked(prefix, secret)
        if (Option.isSome(blocked)) return yield* rateLimitExceeded(blocked.value)
        const found = yield* limiter.admit(prefix, secret)
        if (Option.isNone(found)) {
          return yield* Errors.unauthorized("unknown_key")
        }
        const { key, outcome } = found.value
        if (!ApiKey.secretMatches(secret, key.secret_hash)) {
          return yield* Errors.unauthorized("unknown_key")
        }
        if (key.revoked) return yield* Errors.unauthorized("revoked_key")
        if (key.expired) return yield* Errors.unauthorized("expired_key")
        if (outcome._tag === "Rejected") return yield* rateLimitExceeded(outcome.wait)
        return yield* Effect.provideService(httpEffect, CurrentKey, {
          keyId: key.id,
          schoolId: key.school_id,
          scope: key.scope,
          plan: key.plan
        })
      })
    })
  })
).pipe(Layer.provide(RateLimiter.layer))
