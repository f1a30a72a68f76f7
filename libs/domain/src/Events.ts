/**
 * The webhook event catalog (docs/integrators.md "Event catalog"; docs/decisions.md "Webhooks"): each
 * event's name and payload, field for field and in the catalog's
 * order. A business write puts its event in the outbox in the same
 * transaction (docs/development.md "libs/persistence"); the dispatcher delivers the payload as
 * stored.
 *
 * Integer fields are never null: where the record has none the value is 0
 * (docs/decisions.md "Webhooks"). Payloads decode strictly: an extra or missing field
 * is an error, so a test that decodes an outbox row checks the shape exactly.
 */
import * as Record from "effect/Record"
import * as Schema from "effect/Schema"

const Int = Schema.Int

export const StudentCreated = Schema.Struct({
  student_id: Int,
  student_name: Schema.String,
  filial_id: Int
}).annotate({ examples: [{ student_id: 11, student_name: "Anna Ivanova", filial_id: 2 }] })

export const LeadCreated = Schema.Struct({
  lead_id: Int,
  name: Schema.String,
  phone: Schema.String,
  source: Schema.String
}).annotate({ examples: [{ lead_id: 7, name: "Anna Ivanova", phone: "+7 (999) 123-45-67", source: "website" }] })

export const GroupEnrolled = Schema.Struct({
  enrollment_id: Int,
  student_id: Int,
  group_id: Int,
  group_name: Schema.String,
  filial_id: Int
}).annotate({ examples: [{ enrollment_id: 9, student_id: 11, group_id: 3, group_name: "English B1", filial_id: 2 }] })

export const LessonCompleted = Schema.Struct({
  student_id: Int,
  lesson_id: Int,
  group_id: Int,
  teacher_id: Int,
  visit_status: Int,
  filial_id: Int
}).annotate({ examples: [{ student_id: 11, lesson_id: 40, group_id: 3, teacher_id: 8, visit_status: 1, filial_id: 2 }] })

export const PaymentReceived = Schema.Struct({
  student_id: Int,
  payment_id: Int,
  amount: Schema.Finite.annotate({ description: "Roubles with kopecks after the point" }),
  payment_amount: Schema.Finite,
  payment_type: Schema.String,
  group_id: Int,
  filial_id: Int
}).annotate({
  examples: [{
    student_id: 11,
    payment_id: 8,
    amount: 1500.5,
    payment_amount: 1500.5,
    payment_type: "card",
    group_id: 3,
    filial_id: 2
  }]
})

export const WebhookTest = Schema.Struct({
  subscription_id: Int,
  message: Schema.String
}).annotate({
  examples: [{
    subscription_id: 4,
    message: "This is a test event from the school service: your endpoint receives its webhooks."
  }]
})

/**
 * The catalog: event name → payload schema, in the catalog's order. It is
 * the one list of the events' names; `EVENT_NAMES`, `EventName` and the
 * subscribable subset derive from it, and the web panel's list is generated
 * from the contract built on them (apps/cli/src/panelContract.ts).
 */
export const payloads = {
  "student.created": StudentCreated,
  "lead.created": LeadCreated,
  "group.enrolled": GroupEnrolled,
  "lesson.completed": LessonCompleted,
  "payment.received": PaymentReceived,
  "webhook.test": WebhookTest
} as const

export type EventName = keyof typeof payloads

/** Every event's name, in the catalog's order. */
export const EVENT_NAMES: ReadonlyArray<EventName> = Record.keys(payloads)
export const EventName = Schema.Literals(EVENT_NAMES)

/**
 * The event sent on request only (`POST /webhooks/{id}/test`, to the one
 * subscription it names); no subscription ticks it (docs/back-office.md
 * "Webhooks").
 */
export const TEST_EVENT = "webhook.test" satisfies EventName

/** An event a subscription may tick: every event of the catalog but `webhook.test`. */
export type SubscribableEventName = Exclude<EventName, typeof TEST_EVENT>

export const isSubscribable = (name: string): name is SubscribableEventName =>
  name !== TEST_EVENT && EVENT_NAMES.some((event) => event === name)

/** The events a subscription may tick, in the catalog's order. */
export const SUBSCRIBABLE_EVENTS: ReadonlyArray<SubscribableEventName> = EVENT_NAMES.filter(isSubscribable)
export const SubscribableEventName = Schema.Literals(SUBSCRIBABLE_EVENTS)

/** Strict decoding: no field more, none less. */
export const strict = { onExcessProperty: "error" } as const
