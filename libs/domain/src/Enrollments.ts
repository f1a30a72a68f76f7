/**
 * Enrolling a student into a group through POST /students/{id}/groups (spec
 * 4.2, 7.2; docs/decisions.md "Writes"): the body, and the enrollment as
 * returned; and the same refusals in the back office's codes (POST
 * /students/{id}/enrollments, docs/back-office.md).
 */
import * as Schema from "effect/Schema"
import * as BackOfficeErrors from "./BackOfficeErrors.ts"
import * as Errors from "./PublicErrors.ts"
import { GroupId } from "./Ids.ts"
import { Timestamp } from "./Timestamps.ts"

export const CreateEnrollmentRequest = Schema.Struct({
  group_id: GroupId.pipe(
    Schema.annotateKey({ messageMissingKey: "group_id is required" })
  )
}).annotate({
  identifier: "CreateEnrollmentRequest",
  message: "Expected a JSON object",
  description: "Unknown fields are ignored.",
  examples: [{ group_id: GroupId.make(3) }]
})
export type CreateEnrollmentRequest = typeof CreateEnrollmentRequest.Type

export const Enrollment = Schema.Struct({
  id: Schema.Int.annotate({ description: "The enrollment id" }),
  student_id: Schema.Int,
  group_id: Schema.Int,
  enrolled_at: Timestamp
}).annotate({ identifier: "Enrollment" })
export type Enrollment = typeof Enrollment.Type

/**
 * The one enrollment (libs/persistence Enrollments.enroll) answers with the
 * public API's codes (spec 7.2); the back office's POST
 * /students/{id}/enrollments says the same things in its own table
 * (docs/back-office.md): the student not the school's is 404 NOT_FOUND (it
 * is the path's id); the group not the school's is 422 on `group_id` (a body
 * reference); no free place 409 GROUP_FULL; already in the group 409
 * ALREADY_ENROLLED.
 */
export const toBackOfficeError = (
  error: Errors.StudentNotFound | Errors.GroupNotFound | Errors.GroupFull | Errors.AlreadyEnrolled
): BackOfficeErrors.NotFound | BackOfficeErrors.ValidationFailed | BackOfficeErrors.GroupFull | BackOfficeErrors.AlreadyEnrolled => {
  switch (error._tag) {
    case "StudentNotFound":
      return new BackOfficeErrors.NotFound({ message: error.message })
    case "GroupNotFound":
      return new BackOfficeErrors.ValidationFailed({
        message: "Invalid request body: group_id",
        fields: { group_id: [error.message] }
      })
    case "GroupFull":
      return new BackOfficeErrors.GroupFull({ message: error.message })
    case "AlreadyEnrolled":
      return new BackOfficeErrors.AlreadyEnrolled({ message: error.message })
  }
}
