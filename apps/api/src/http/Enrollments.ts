/**
 * POST /students/{id}/groups (spec 4.2, docs/decisions.md "Writes") and GET
 * /enrollments (docs/decisions.md "Enrollments in bulk"): one repository call each.
 */
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Pagination } from "@school/domain"
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

export const EnrollmentListHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "enrollmentList",
  Effect.fnUntraced(function*(handlers) {
    const enrollments = yield* Enrollments
    return handlers.handle("list", Effect.fnUntraced(function*({ query }) {
      const { schoolId } = yield* CurrentKey
      return Pagination.listBody(yield* enrollments.listActive(schoolId, Pagination.listRequest(query)))
    }))
  })
)
