/**
 * The public API's resources as they appear on the wire (docs/integrators.md
 * "Reading", docs/decisions.md "Resources"). Names are the wire names (snake_case) end to end, so
 * a row decodes straight into its response with no renaming.
 */
import * as Schema from "effect/Schema"
import { Timestamp } from "./Timestamps.ts"

const Id = Schema.Int
const NullableId = Schema.NullOr(Schema.Int)

const studentFields = {
  id: Id,
  fio: Schema.String.annotate({ description: "Full name" }),
  phone: Schema.String,
  email: Schema.String,
  balance_kopecks: Schema.Int.annotate({ description: "Balance in whole kopecks, never a float" }),
  filial_id: Id,
  created_at: Timestamp,
  updated_at: Schema.NullOr(Timestamp).annotate({
    description: "Last-modified time; null for legacy records, which never match updated_since"
  })
}

/** The one student the examples show (the OpenAPI documents take them from the annotations). */
const studentExample = {
  id: 11,
  fio: "Anna Ivanova",
  phone: "+7 (999) 123-45-67",
  email: "anna@example.com",
  balance_kopecks: 150050,
  filial_id: 2,
  created_at: "2026-11-22T09:15:03.123456Z",
  updated_at: "2026-11-22T09:15:03.123456Z"
}
const activeGroupExample = {
  group_id: 3,
  group_name: "English B1",
  filial_id: 2,
  enrollment_id: 9,
  enrolled_at: "2026-11-22T09:15:03.123456Z"
}

export const StudentListItem = Schema.Struct({
  ...studentFields,
  active_groups: Schema.Null.annotate({ description: "Always null in lists; see GET /students/{id}" })
}).annotate({
  identifier: "StudentListItem",
  examples: [{ ...studentExample, active_groups: null }]
})
export type StudentListItem = typeof StudentListItem.Type

export const ActiveGroup = Schema.Struct({
  group_id: Id,
  group_name: Schema.String,
  filial_id: Id,
  enrollment_id: Id,
  enrolled_at: Timestamp
}).annotate({
  identifier: "ActiveGroup",
  examples: [activeGroupExample]
})
export type ActiveGroup = typeof ActiveGroup.Type

export const StudentCard = Schema.Struct({
  ...studentFields,
  active_groups: Schema.Array(ActiveGroup)
}).annotate({
  identifier: "Student",
  examples: [{ ...studentExample, active_groups: [activeGroupExample] }]
})
export type StudentCard = typeof StudentCard.Type

export const PaymentType = Schema.Literals(["cash", "card", "transfer", "online"])
export type PaymentType = typeof PaymentType.Type

export const Payment = Schema.Struct({
  id: Id,
  student_id: Id,
  amount_kopecks: Schema.Int.annotate({ description: "Amount in whole kopecks" }),
  payment_type: PaymentType,
  group_id: NullableId,
  filial_id: Id,
  paid_at: Timestamp,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({
  identifier: "Payment",
  examples: [{
    id: 8,
    student_id: 11,
    amount_kopecks: 150050,
    payment_type: "card",
    group_id: 3,
    filial_id: 2,
    paid_at: "2026-11-22T09:15:03.123456Z",
    created_at: "2026-11-22T09:15:03.123456Z",
    updated_at: "2026-11-22T09:15:03.123456Z"
  }]
})
export type Payment = typeof Payment.Type

export const Group = Schema.Struct({
  id: Id,
  name: Schema.String,
  filial_id: Id,
  subject_id: NullableId,
  program_id: NullableId,
  level_id: NullableId,
  teacher_id: NullableId,
  capacity: Schema.Int,
  enrolled_count: Schema.Int,
  free_places: Schema.Int
}).annotate({
  identifier: "Group",
  examples: [{
    id: 3,
    name: "English B1",
    filial_id: 2,
    subject_id: 4,
    program_id: 5,
    level_id: 6,
    teacher_id: 8,
    capacity: 12,
    enrolled_count: 9,
    free_places: 3
  }]
})
export type Group = typeof Group.Type

export const Lesson = Schema.Struct({
  id: Id,
  group_id: Id,
  filial_id: Id,
  teacher_id: NullableId,
  starts_at: Timestamp,
  ends_at: Timestamp,
  topic: Schema.NullOr(Schema.String)
}).annotate({
  identifier: "Lesson",
  examples: [{
    id: 40,
    group_id: 3,
    filial_id: 2,
    teacher_id: 8,
    starts_at: "2026-11-24T13:00:00.000000Z",
    ends_at: "2026-11-24T14:30:00.000000Z",
    topic: "Past Simple"
  }]
})
export type Lesson = typeof Lesson.Type

export const Filial = Schema.Struct({
  id: Id,
  name: Schema.String,
  address: Schema.NullOr(Schema.String)
}).annotate({ identifier: "Filial", examples: [{ id: 2, name: "Central", address: "12 Lenina St, Moscow" }] })

export const Subject = Schema.Struct({ id: Id, name: Schema.String }).annotate({
  identifier: "Subject",
  examples: [{ id: 4, name: "English" }]
})

export const Program = Schema.Struct({ id: Id, name: Schema.String, subject_id: NullableId }).annotate({
  identifier: "Program",
  examples: [{ id: 5, name: "General English", subject_id: 4 }]
})

export const Level = Schema.Struct({ id: Id, name: Schema.String, program_id: NullableId }).annotate({
  identifier: "Level",
  examples: [{ id: 6, name: "B1", program_id: 5 }]
})
