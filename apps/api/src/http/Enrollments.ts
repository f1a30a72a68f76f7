/**
 * POST /students/{id}/groups (docs/integrators.md "Writing", docs/decisions.md
 * "Writes") and GET
 * /enrollments (docs/decisions.md "Enrollments in bulk"): one repository call each.
 */
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Enrollments as EnrollmentRules, Errors, Pagination } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
import { Enrollments } from "@school/persistence/Enrollments"
import { listResponse } from "./ListResponse.ts"
import * as RefusalMessages from "./RefusalMessages.ts"

const enrollmentList = listResponse(EnrollmentRules.Enrollment)

export const EnrollmentsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "enrollments",
  Effect.fnUntraced(function*(handlers) {
    const enrollments = yield* Enrollments
    return handlers.handle("create", Effect.fn("PublicApi.enrollments.create")(function*({ params, payload }) {
      const { schoolId } = yield* CurrentKey
      return { data: yield* enrollments.enroll(schoolId, params.id, payload.group_id) }
    }, Effect.catchReasons("EnrollmentRefused", {
      StudentNotFound: (reason) => Effect.fail(new Errors.StudentNotFound({ message: RefusalMessages.studentNotFound(reason) })),
      GroupNotFound: (reason) => Effect.fail(new Errors.GroupNotFound({ message: RefusalMessages.groupNotFound(reason) })),
      GroupFull: (reason) => Effect.fail(new Errors.GroupFull({ message: RefusalMessages.groupFull(reason) })),
      AlreadyEnrolled: (reason) => Effect.fail(new Errors.AlreadyEnrolled({ message: RefusalMessages.alreadyEnrolled(reason) }))
    }, Effect.die)))
  })
)

export const EnrollmentListHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "enrollmentList",
  Effect.fnUntraced(function*(handlers) {
    const enrollments = yield* Enrollments
    return handlers.handle("list", Effect.fn("PublicApi.enrollmentList.list")(function*({ query }) {
      const { schoolId } = yield* CurrentKey
      return enrollmentList(yield* enrollments.listActive(schoolId, Pagination.listRequest(query)))
    }))
  })
)
