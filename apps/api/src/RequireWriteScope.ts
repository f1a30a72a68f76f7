/** The scope check of every write (docs/integrators.md "Scopes"): a `write` key covers reads too; only writes ask for it. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Errors } from "@school/domain"
import { CurrentKey, RequireWriteScope } from "@school/domain/api/Middleware"

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
