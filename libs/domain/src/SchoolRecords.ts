/**
 * The back office's school records as rules, without I/O (docs/back-office.md
 * "Students and payments"; docs/decisions.md "Resources", "Writes"): the
 * request bodies of reference data (filials, subjects, programs, levels),
 * groups, students, lessons, attendance marks and payments, with every
 * field's rule; the attendance mark as returned; and the ids they use.
 *
 * Text is trimmed and bounded (docs/decisions.md "Requests and responses");
 * an optional field that is `null` is read as absent. A reference to another
 * record (filial_id, group_id, ...) is checked against the caller's school
 * by the repository: 422 VALIDATION_FAILED on that field when it is not the
 * school's, exactly as when it does not exist.
 */
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { DecimalIntFromString, IntUpToMaxId, PositiveInt32 } from "./Ids.ts"
import { optionalField } from "./Leads.ts"
import { PaymentType } from "./Models.ts"
import { PaymentKopecks } from "./Money.ts"
import { validatePhone } from "./Phone.ts"
import { NAME_MAX, PHONE_MAX, Text } from "./Text.ts"
import { IsoInstant, Timestamp } from "./Timestamps.ts"

// ---------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------

export const LessonId = PositiveInt32.pipe(Schema.brand("LessonId"))
export type LessonId = typeof LessonId.Type
/** `/lessons/{id}/attendance`. */
export const LessonIdFromPath = DecimalIntFromString(LessonId)

/** A reference to another record in a body: a positive `integer`. */
const Reference = (what: string) => IntUpToMaxId(1, `Expected a positive ${what} id`)

/** A required body field, with its own message when it is missing. */
const required = <S extends Schema.Top>(schema: S, name: string): S["Rebuild"] =>
  schema.pipe(Schema.annotateKey<S>({ messageMissingKey: `${name} is required` }))

const optionalReference = (what: string, description: string) =>
  optionalField(Reference(what), "an integer", description)

// ---------------------------------------------------------------------------
// Text fields
// ---------------------------------------------------------------------------

/** A name: trimmed, non-empty, at most NAME_MAX characters. */
export const RequiredName = Text(NAME_MAX).check(Schema.isMinLength(1, { message: "Expected a non-empty string" }))

export const ADDRESS_MAX = 1000
export const TOPIC_MAX = 1000
/** RFC 5321's limit on an address. */
export const EMAIL_MAX = 320

/** A student's phone: "" (none), or the phone rule of POST /leads (Phone.ts). */
export const StudentPhone = Text(PHONE_MAX).check(
  Schema.makeFilter((phone: string) =>
    phone === "" || Result.match(validatePhone(phone), { onSuccess: () => true, onFailure: (message) => message })
  )
)

const EMAIL = /^[^\s@]+@[^\s@]+$/u
/** A student's e-mail: "" (none), or something@somewhere without spaces. */
export const StudentEmail = Text(EMAIL_MAX).check(
  Schema.makeFilter((email: string) => email === "" || EMAIL.test(email) || "Expected an e-mail address, e.g. anna@example.com")
)

// ---------------------------------------------------------------------------
// Reference data (docs/decisions.md "Resources")
// ---------------------------------------------------------------------------

const body = (identifier: string) => ({ identifier, message: "Expected a JSON object", description: "Unknown fields are ignored." })

export const CreateFilialRequest = Schema.Struct({
  name: required(RequiredName, "name"),
  address: optionalField(Text(ADDRESS_MAX), "a string", `At most ${ADDRESS_MAX} characters, trimmed; omitted, null or "": none`)
}).annotate({ ...body("CreateFilialRequest"), examples: [{ name: "Central", address: "12 Lenina St, Moscow" }] })
export type CreateFilialRequest = typeof CreateFilialRequest.Type

export const CreateSubjectRequest = Schema.Struct({
  name: required(RequiredName, "name")
}).annotate({ ...body("CreateSubjectRequest"), examples: [{ name: "English" }] })
export type CreateSubjectRequest = typeof CreateSubjectRequest.Type

export const CreateProgramRequest = Schema.Struct({
  name: required(RequiredName, "name"),
  subject_id: optionalReference("subject", "A subject of the school; omitted or null: none")
}).annotate({ ...body("CreateProgramRequest"), examples: [{ name: "General English", subject_id: 4 }] })
export type CreateProgramRequest = typeof CreateProgramRequest.Type

export const CreateLevelRequest = Schema.Struct({
  name: required(RequiredName, "name"),
  program_id: optionalReference("program", "A program of the school; omitted or null: none")
}).annotate({ ...body("CreateLevelRequest"), examples: [{ name: "B1", program_id: 5 }] })
export type CreateLevelRequest = typeof CreateLevelRequest.Type

// ---------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------

/** A group's capacity: 0 to the largest `integer` (a new group has no one enrolled, so capacity >= enrolled holds). */
export const Capacity = IntUpToMaxId(0, "Expected a capacity from 0 to 2147483647")

export const CreateGroupRequest = Schema.Struct({
  name: required(RequiredName, "name"),
  filial_id: required(Reference("filial"), "filial_id"),
  capacity: required(Capacity, "capacity"),
  subject_id: optionalReference("subject", "A subject of the school; omitted or null: none"),
  program_id: optionalReference("program", "A program of the school; omitted or null: none"),
  level_id: optionalReference("level", "A level of the school; omitted or null: none"),
  teacher_id: optionalReference("employee", "An employee of the school who teaches the group; omitted or null: none")
}).annotate({
  ...body("CreateGroupRequest"),
  examples: [{ name: "English B1", filial_id: 2, capacity: 12, subject_id: 4, program_id: 5, level_id: 6, teacher_id: 8 }]
})
export type CreateGroupRequest = typeof CreateGroupRequest.Type

// ---------------------------------------------------------------------------
// Students
// ---------------------------------------------------------------------------

export const CreateStudentRequest = Schema.Struct({
  fio: required(RequiredName, "fio").annotate({ description: "Full name" }),
  phone: optionalField(StudentPhone, "a string", `Omitted, null or "": none; else 5 to 20 digits with + - ( ) and spaces`),
  email: optionalField(StudentEmail, "a string", `Omitted, null or "": none; at most ${EMAIL_MAX} characters`),
  filial_id: required(Reference("filial"), "filial_id")
}).annotate({ ...body("CreateStudentRequest"), examples: [{ fio: "Anna Ivanova", phone: "+7 (999) 123-45-67", email: "anna@example.com", filial_id: 2 }] })
export type CreateStudentRequest = typeof CreateStudentRequest.Type

// ---------------------------------------------------------------------------
// Lessons and attendance
// ---------------------------------------------------------------------------

/**
 * Both instants are accepted in their UTC spelling (`IsoInstant`), whose
 * text order is the time order, so the window check is a comparison of the
 * decoded strings.
 */
export const endsBeforeStart = (startsAtUtc: string, endsAtUtc: string): boolean => endsAtUtc < startsAtUtc

export const CreateLessonRequest = Schema.Struct({
  group_id: required(Reference("group"), "group_id"),
  starts_at: required(IsoInstant, "starts_at"),
  ends_at: required(IsoInstant, "ends_at"),
  teacher_id: optionalReference(
    "employee",
    "An employee of the school; omitted or null: the group's teacher (none when the group has none)"
  ),
  topic: optionalField(Text(TOPIC_MAX), "a string", `At most ${TOPIC_MAX} characters, trimmed; omitted, null or "": none`)
}).annotate({
  // Before the check: a check's own `examples` are not written into the document.
  examples: [{
    group_id: 3,
    starts_at: "2026-11-24T16:00:00+03:00",
    ends_at: "2026-11-24T17:30:00+03:00",
    teacher_id: 8,
    topic: "Past Simple"
  }]
}).check(
  Schema.makeFilter((lesson: { readonly starts_at: string; readonly ends_at: string }) =>
    endsBeforeStart(lesson.starts_at, lesson.ends_at)
      ? { path: ["ends_at"], issue: "Expected ends_at at or after starts_at" }
      : undefined
  )
).annotate(body("CreateLessonRequest"))
export type CreateLessonRequest = typeof CreateLessonRequest.Type

/** docs/decisions.md "Webhooks": 1 attended, 2 absent, 3 excused; only 1 fires lesson.completed. */
export const ATTENDED = 1
export const VisitStatus = Schema.Literals([1, 2, 3]).annotate({
  message: "Expected 1 (attended), 2 (absent) or 3 (excused)",
  description: "1 attended, 2 absent, 3 excused"
})
export type VisitStatus = typeof VisitStatus.Type

export const MarkAttendanceRequest = Schema.Struct({
  student_id: required(Reference("student"), "student_id"),
  visit_status: required(VisitStatus, "visit_status")
}).annotate({ ...body("MarkAttendanceRequest"), examples: [{ student_id: 11, visit_status: 1 }] })
export type MarkAttendanceRequest = typeof MarkAttendanceRequest.Type

/** A student's mark at a lesson, as POST /lessons/{id}/attendance returns it. */
export const AttendanceMark = Schema.Struct({
  lesson_id: Schema.Int,
  student_id: Schema.Int,
  group_id: Schema.Int,
  visit_status: VisitStatus,
  marked_at: Timestamp.annotate({ description: "When the mark was last set" }),
  first_attended_at: Schema.NullOr(Timestamp).annotate({
    description: "When the mark first became 1 (attended), the moment lesson.completed was raised; null: never"
  })
}).annotate({
  identifier: "AttendanceMark",
  examples: [{
    lesson_id: 40,
    student_id: 11,
    group_id: 3,
    visit_status: 1,
    marked_at: "2026-11-24T14:35:00.000000Z",
    first_attended_at: "2026-11-24T14:35:00.000000Z"
  }]
})
export type AttendanceMark = typeof AttendanceMark.Type

/**
 * docs/integrators.md "lesson.completed", docs/decisions.md "Writes": whether a mark raises
 * `lesson.completed`: only when it becomes 1 (attended) for the first time
 * for that lesson and student; a second "attended", 2, 3, and 1 again after
 * 2 or 3 raise nothing. `previous` is the pair's mark before, if any (its
 * first attended time, null when never attended). The database keeps
 * `first_attended_at` by this same rule (migration 0540).
 */
export const raisesLessonCompleted = (
  previous: Option.Option<{ readonly first_attended_at: string | null }>,
  next: VisitStatus
): boolean => next === ATTENDED && Option.match(previous, { onNone: () => true, onSome: (p) => p.first_attended_at === null })

// ---------------------------------------------------------------------------
// Payments
// ---------------------------------------------------------------------------

export const CreatePaymentRequest = Schema.Struct({
  student_id: required(Reference("student"), "student_id"),
  amount_kopecks: required(PaymentKopecks, "amount_kopecks"),
  payment_type: required(PaymentType.annotate({ message: "Expected one of cash, card, transfer, online" }), "payment_type"),
  group_id: optionalReference("group", "A group of the school the payment is for; omitted or null: none"),
  paid_at: optionalField(IsoInstant, "an ISO 8601 date-time with an offset", "When it was paid; omitted or null: now")
}).annotate({
  ...body("CreatePaymentRequest"),
  examples: [{ student_id: 11, amount_kopecks: 150050, payment_type: "card", group_id: 3, paid_at: "2026-11-22T12:15:03+03:00" }]
})
export type CreatePaymentRequest = typeof CreatePaymentRequest.Type
