/** POST /students/{id}/groups (spec 4.2, docs/decisions.md "Writes"): one repository call. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
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
