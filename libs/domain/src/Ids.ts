/**
 * Ids: positive 32-bit integers (the columns are `integer`), branded per
 * entity so a student id cannot stand where a group id is expected.
 */
import { Schema } from "effect"

const PositiveInt32 = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2_147_483_647 }))

export const SchoolId = PositiveInt32.pipe(Schema.brand("SchoolId"))
export type SchoolId = typeof SchoolId.Type
export const StudentId = PositiveInt32.pipe(Schema.brand("StudentId"))
export type StudentId = typeof StudentId.Type
export const GroupId = PositiveInt32.pipe(Schema.brand("GroupId"))
export type GroupId = typeof GroupId.Type
export const FilialId = PositiveInt32.pipe(Schema.brand("FilialId"))
export type FilialId = typeof FilialId.Type
export const ApiKeyId = PositiveInt32.pipe(Schema.brand("ApiKeyId"))
export type ApiKeyId = typeof ApiKeyId.Type
export const LeadId = PositiveInt32.pipe(Schema.brand("LeadId"))
export type LeadId = typeof LeadId.Type
