/**
 * The webhook event catalog (spec 6.3; docs/decisions.md "Webhooks"): each
 * event's name and payload, field for field and in the specification's
 * order. A business write puts its event in the outbox in the same
 * transaction (docs/development.md "libs/persistence"); the dispatcher delivers the payload as
 * stored.
 *
 * Integer fields are never null: where the record has none the value is 0
 * (docs/decisions.md "Webhooks"). Payloads decode strictly: an extra or missing field
 * is an error, so a test that decodes an outbox row checks the shape exactly.
 */
import * as Schema from "effect/Schema"

const Int = Schema.Int

export const StudentCreated = Schema.Struct({
  student_id: Int,
  student_name: Schema.String,
  filial_id: Int
})

export const LeadCreated = Schema.Struct({
  lead_id: Int,
  name: Schema.String,
  phone: Schema.String,
  source: Schema.String
})

export const GroupEnrolled = Schema.Struct({
  enrollment_id: Int,
  student_id: Int,
  group_id: Int,
  group_name: Schema.String,
  filial_id: Int
})

export const LessonCompleted = Schema.Struct({
  student_id: Int,
  lesson_id: Int,
  group_id: Int,
  teacher_id: Int,
  visit_status: Int,
  filial_id: Int
})

export const PaymentReceived = Schema.Struct({
  student_id: Int,
  payment_id: Int,
  amount: Schema.Finite.annotate({ description: "Roubles with kopecks after the point (spec 6.4)" }),
  payment_amount: Schema.Finite,
  payment_type: Schema.String,
  group_id: Int,
  filial_id: Int
})

export const WebhookTest = Schema.Struct({
  subscription_id: Int,
  message: Schema.String
})

/** Event name → payload schema. */
export const payloads = {
  "student.created": StudentCreated,
  "lead.created": LeadCreated,
  "group.enrolled": GroupEnrolled,
  "lesson.completed": LessonCompleted,
  "payment.received": PaymentReceived,
  "webhook.test": WebhookTest
} as const

export type EventName = keyof typeof payloads
export const EventName = Schema.Literals([
  "student.created",
  "lead.created",
  "group.enrolled",
  "lesson.completed",
  "payment.received",
  "webhook.test"
])

/** Strict decoding: no field more, none less. */
export const strict = { onExcessProperty: "error" } as const
