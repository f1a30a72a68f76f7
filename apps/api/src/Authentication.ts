/**
 * Bearer-key authentication (spec 5.1, DECISIONS "Authentication") and the
 * scope check. Order: the key's shape, then its prefix, then a constant-time
 * comparison of the secret's hash, then revoked before expired.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { ApiKey, Errors } from "@school/domain"
import { Authentication, CurrentKey, RequireWriteScope } from "@school/domain/PublicApi"
import { ApiKeys } from "@school/persistence/ApiKeys"

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    return Authentication.of({
      bearer: Effect.fnUntraced(function*(httpEffect, { credential }) {
        const parsed = ApiKey.parseApiKey(Redacted.value(credential))
        if (Option.isNone(parsed)) {
          return yield* Errors.unauthorized("missing_or_malformed_key")
        }
        const found = yield* keys.findByPrefix(parsed.value.prefix)
        if (Option.isNone(found)) {
          return yield* Errors.unauthorized("unknown_key")
        }
        const key = found.value
        if (!ApiKey.secretMatches(parsed.value.secret, key.secret_hash)) {
          return yield* Errors.unauthorized("unknown_key")
        }
        if (key.revoked) return yield* Errors.unauthorized("revoked_key")
        if (key.expired) return yield* Errors.unauthorized("expired_key")
        return yield* Effect.provideService(httpEffect, CurrentKey, {
          keyId: key.id,
          schoolId: key.school_id,
          scope: key.scope,
          plan: key.plan
        })
      })
    })
  })
).pipe(Layer.provide(ApiKeys.layer))

/** A `write` key covers reads too; only writes ask for it (spec 5.1). */
export const RequireWriteScopeLive = Layer.succeed(
  RequireWriteScope,
  RequireWriteScope.of(Effect.fnUntraced(function*(httpEffect) {
    const key = yield* CurrentKey
    if (key.scope !== "write") {
      return yield* new Errors.InsufficientScope({ message: "This endpoint needs an API key with write scope." })
    }
    return yield* httpEffect
  }))
)
