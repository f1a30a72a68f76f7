/**
 * Demo (trial) lessons booked through POST /demo-lessons (spec 1, 4.2;
 * DECISIONS "Writes"): who comes (exactly one of a student `user_id` or a
 * `lead_id`), to which group, when, and the booking as returned. A demo
 * lesson emits no webhook (spec part 1).
 */
import { Schema } from "effect"
import { optionalField } from "./Leads.ts"
import { COMMENT_MAX, IntFrom, Text } from "./Text.ts"
import { IsoInstant } from "./Timestamps.ts"

/** A lesson time PostgreSQL and the response format can carry: years 1970 to 9999. */
const StartsAt = IsoInstant.check(
  Schema.makeFilter((s: string) => {
    const year = Number(s.slice(0, 4))
    return year >= 1970 && year <= 9999
  }, { message: "Expected a time between the years 1970 and 9999" })
)

const Id = IntFrom(1, "Expected a positive integer id")

export const NEITHER_MESSAGE = "Give user_id (a student of the school) or lead_id (a lead of the school)"
export const BOTH_MESSAGE = "Give either user_id or lead_id, not both"

export const CreateDemoLessonRequest = Schema.Struct({
  user_id: optionalField(Id, "an integer", "A student of the school (give exactly one of user_id and lead_id)"),
  lead_id: optionalField(Id, "an integer", "A lead of the school (give exactly one of user_id and lead_id)"),
  group_id: Id.pipe(Schema.annotateKey({ messageMissingKey: "group_id is required" })),
  starts_at: optionalField(StartsAt, "a string", "When the lesson starts: ISO 8601 with an offset"),
  comment: optionalField(Text(COMMENT_MAX), "a string", `At most ${COMMENT_MAX} characters, trimmed`)
}).annotate({
  identifier: "CreateDemoLessonRequest",
  message: "Expected a JSON object",
  description: "Exactly one of user_id and lead_id. Unknown fields are ignored."
}).check(
  // spec 4.2: neither user_id nor lead_id is validation_failed with fields.user_id.
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
  | { readonly _tag: "Student"; readonly id: number }
  | { readonly _tag: "Lead"; readonly id: number }

export interface NewDemoLesson {
  readonly attendee: Attendee
  readonly groupId: number
  /** ISO 8601 with offset, already validated; null when not given. */
  readonly startsAt: string | null
  readonly comment: string
}

/** The request with its rule applied (the schema guarantees exactly one attendee). */
export const toNewDemoLesson = (request: CreateDemoLessonRequest): NewDemoLesson => ({
  attendee: request.user_id !== undefined && request.user_id !== null
    ? { _tag: "Student", id: request.user_id }
    : { _tag: "Lead", id: request.lead_id ?? 0 },
  groupId: request.group_id,
  startsAt: request.starts_at ?? null,
  comment: request.comment ?? ""
})

const Timestamp = Schema.String.annotate({ description: "ISO 8601 UTC with microseconds and Z" })

export const DemoLesson = Schema.Struct({
  id: Schema.Int,
  user_id: Schema.NullOr(Schema.Int),
  lead_id: Schema.NullOr(Schema.Int),
  group_id: Schema.Int,
  starts_at: Schema.NullOr(Timestamp),
  comment: Schema.String,
  status: Schema.Literal("scheduled"),
  created_at: Timestamp
}).annotate({ identifier: "DemoLesson" })
export type DemoLesson = typeof DemoLesson.Type
