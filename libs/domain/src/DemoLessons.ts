/**
 * Demo (trial) lessons booked through POST /demo-lessons (docs/integrators.md "Writing";
 * docs/decisions.md "Writes"): who comes (exactly one of a student
 * `user_id` or a `lead_id`), to which group, when, and the booking as
 * returned. A demo lesson emits no webhook.
 */
import * as Schema from "effect/Schema"
import { GroupId, LeadId, StudentId } from "./Ids.ts"
import { optionalField } from "./Leads.ts"
import { COMMENT_MAX, Text } from "./Text.ts"
import { IsoInstant, Timestamp } from "./Timestamps.ts"

/** A lesson time PostgreSQL and the response format can carry: years 1970 to 9999. */
const StartsAt = IsoInstant.check(
  Schema.makeFilter((s: string) => {
    const year = Number(s.slice(0, 4))
    return year >= 1970 && year <= 9999
  }, { message: "Expected a time between the years 1970 and 9999" })
)

export const NEITHER_MESSAGE = "Give user_id (a student of the school) or lead_id (a lead of the school)"
export const BOTH_MESSAGE = "Give either user_id or lead_id, not both"

export const CreateDemoLessonRequest = Schema.Struct({
  user_id: optionalField(StudentId, "an integer", "A student of the school (give exactly one of user_id and lead_id)"),
  lead_id: optionalField(LeadId, "an integer", "A lead of the school (give exactly one of user_id and lead_id)"),
  group_id: GroupId.pipe(Schema.annotateKey({ messageMissingKey: "group_id is required" })),
  starts_at: optionalField(StartsAt, "a string", "When the lesson starts: ISO 8601 with an offset"),
  comment: optionalField(Text(COMMENT_MAX), "a string", `At most ${COMMENT_MAX} characters, trimmed`)
}).annotate({
  identifier: "CreateDemoLessonRequest",
  message: "Expected a JSON object",
  description: "Exactly one of user_id and lead_id. Unknown fields are ignored.",
  examples: [{ lead_id: LeadId.make(7), group_id: GroupId.make(3), starts_at: "2026-11-24T16:00:00+03:00" }]
}).check(
  // Neither user_id nor lead_id is validation_failed with fields.user_id (docs/integrators.md "Writing").
  Schema.makeFilter((body) => {
    const hasUser = body.user_id !== undefined && body.user_id !== null
    const hasLead = body.lead_id !== undefined && body.lead_id !== null
    if (hasUser && hasLead) {
      return [{ path: ["user_id"], issue: BOTH_MESSAGE }, { path: ["lead_id"], issue: BOTH_MESSAGE }]
    }
    return hasUser || hasLead ? undefined : { path: ["user_id"], issue: NEITHER_MESSAGE }
  })
)
export type CreateDemoLessonRequest = typeof CreateDemoLessonRequest.Type

/** Who the demo lesson is for: a student or a lead of the school. */
export type Attendee =
  | { readonly _tag: "Student"; readonly id: StudentId }
  | { readonly _tag: "Lead"; readonly id: LeadId }

export interface NewDemoLesson {
  readonly attendee: Attendee
  readonly groupId: GroupId
  /** ISO 8601 with offset, already validated; null when not given. */
  readonly startsAt: string | null
  readonly comment: string
}

/** The request with its rule applied. */
export const toNewDemoLesson = (request: CreateDemoLessonRequest): NewDemoLesson => ({
  attendee: attendeeOf(request),
  groupId: request.group_id,
  startsAt: request.starts_at ?? null,
  comment: request.comment ?? ""
})

/** The schema's check guarantees exactly one of user_id and lead_id; a request without either never decodes. */
const attendeeOf = ({ user_id, lead_id }: CreateDemoLessonRequest): Attendee => {
  if (user_id !== undefined && user_id !== null) return { _tag: "Student", id: user_id }
  if (lead_id !== undefined && lead_id !== null) return { _tag: "Lead", id: lead_id }
  throw new Error("CreateDemoLessonRequest decoded without user_id or lead_id")
}

export const DemoLesson = Schema.Struct({
  id: Schema.Int,
  user_id: Schema.NullOr(Schema.Int),
  lead_id: Schema.NullOr(Schema.Int),
  group_id: Schema.Int,
  starts_at: Schema.NullOr(Timestamp),
  comment: Schema.String,
  status: Schema.Literal("scheduled"),
  created_at: Timestamp
}).annotate({
  identifier: "DemoLesson",
  examples: [{
    id: 12,
    user_id: null,
    lead_id: 7,
    group_id: 3,
    starts_at: "2026-11-24T13:00:00.000000Z",
    comment: "",
    status: "scheduled",
    created_at: "2026-11-22T09:15:03.123456Z"
  }]
})
export type DemoLesson = typeof DemoLesson.Type
