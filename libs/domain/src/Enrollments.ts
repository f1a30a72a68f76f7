/**
 * Enrolling a student into a group through POST /students/{id}/groups (spec
 * 4.2, 7.2; docs/decisions.md "Writes"): the body, and the enrollment as
 * returned.
 */
import { Schema } from "effect"
import { GroupId } from "./Ids.ts"
import { Timestamp } from "./Timestamps.ts"

export const CreateEnrollmentRequest = Schema.Struct({
  group_id: GroupId.pipe(
    Schema.annotateKey({ messageMissingKey: "group_id is required" })
  )
}).annotate({
  identifier: "CreateEnrollmentRequest",
  message: "Expected a JSON object",
  description: "Unknown fields are ignored."
})
export type CreateEnrollmentRequest = typeof CreateEnrollmentRequest.Type

export const Enrollment = Schema.Struct({
  id: Schema.Int.annotate({ description: "The enrollment id" }),
  student_id: Schema.Int,
  group_id: Schema.Int,
  enrolled_at: Timestamp
}).annotate({ identifier: "Enrollment" })
export type Enrollment = typeof Enrollment.Type
