/**
 * Enrolling a student into a group through POST /students/{id}/groups
 * (docs/integrators.md "Writing"; docs/decisions.md "Writes"): the body, and the enrollment as
 * returned. The refusals are `DomainErrors.EnrollmentRefused`; each API
 * says them in its own codes (apps/api/src/http/Enrollments.ts,
 * apps/api/src/http/backoffice/School.ts).
 */
import * as Schema from "effect/Schema"
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
}).annotate({
  identifier: "Enrollment",
  examples: [{ id: 9, student_id: 11, group_id: 3, enrolled_at: "2026-11-22T09:15:03.123456Z" }]
})
export type Enrollment = typeof Enrollment.Type
