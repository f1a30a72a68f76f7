/** POST /students/{id}/groups (spec 4.2, DECISIONS "Writes"): one repository call. */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CurrentKey, PublicApi } from "@school/domain/PublicApi"
import { Enrollments } from "@school/persistence/Enrollments"

export const EnrollmentsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "enrollments",
  Effect.fnUntraced(function*(handlers) {
    const enrollments = yield* Enrollments
    return handlers.handle("create", Effect.fnUntraced(function*({ params, payload }) {
      const { schoolId } = yield* CurrentKey
      return { data: yield* enrollments.enroll(schoolId, params.id, payload.group_id) }
    }))
  })
)

export const EnrollmentsHandlers = EnrollmentsHandlersNoDeps.pipe(Layer.provide(Enrollments.layer))
