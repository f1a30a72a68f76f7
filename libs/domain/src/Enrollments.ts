/**
 * Enrolling a student into a group through POST /students/{id}/groups (spec
 * 4.2, 7.2; DECISIONS "Writes"): the body, and the enrollment as returned.
 */
import { Schema } from "effect"
import { IntFrom } from "./Text.ts"

export const CreateEnrollmentRequest = Schema.Struct({
  group_id: IntFrom(1, "Expected a positive integer id").pipe(
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
  enrolled_at: Schema.String.annotate({ description: "ISO 8601 UTC with microseconds and Z" })
}).annotate({ identifier: "Enrollment" })
export type Enrollment = typeof Enrollment.Type
