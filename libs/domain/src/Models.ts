/**
 * The public API's resources as they appear on the wire (spec part 2,
 * docs/decisions.md "Resources"). Names are the wire names (snake_case) end to end, so
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

export const StudentListItem = Schema.Struct({
  ...studentFields,
  active_groups: Schema.Null.annotate({ description: "Always null in lists; see GET /students/{id}" })
}).annotate({ identifier: "StudentListItem" })
export type StudentListItem = typeof StudentListItem.Type

export const ActiveGroup = Schema.Struct({
  group_id: Id,
  group_name: Schema.String,
  filial_id: Id,
  enrollment_id: Id,
  enrolled_at: Timestamp
}).annotate({ identifier: "ActiveGroup" })
export type ActiveGroup = typeof ActiveGroup.Type

export const StudentCard = Schema.Struct({
  ...studentFields,
  active_groups: Schema.Array(ActiveGroup)
}).annotate({ identifier: "Student" })
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
}).annotate({ identifier: "Payment" })
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
}).annotate({ identifier: "Group" })
export type Group = typeof Group.Type

export const Lesson = Schema.Struct({
  id: Id,
  group_id: Id,
  filial_id: Id,
  teacher_id: NullableId,
  starts_at: Timestamp,
  ends_at: Timestamp,
  topic: Schema.NullOr(Schema.String)
}).annotate({ identifier: "Lesson" })
export type Lesson = typeof Lesson.Type

export const Filial = Schema.Struct({
  id: Id,
  name: Schema.String,
  address: Schema.NullOr(Schema.String)
}).annotate({ identifier: "Filial" })

export const Subject = Schema.Struct({ id: Id, name: Schema.String }).annotate({ identifier: "Subject" })

export const Program = Schema.Struct({ id: Id, name: Schema.String, subject_id: NullableId }).annotate({
  identifier: "Program"
})

export const Level = Schema.Struct({ id: Id, name: Schema.String, program_id: NullableId }).annotate({
  identifier: "Level"
})
