/**
 * Ids: positive 32-bit integers (the columns are `integer`), branded per
 * entity so a student id cannot stand where a group id is expected. The one
 * definition of "an id" for path parameters, request bodies and rows.
 */
import { Schema } from "effect"

/** The largest value an `integer` column holds. */
export const MAX_ID = 2_147_483_647

/** An integer from `min` to MAX_ID; `message` when it is out of range (request bodies name the field's rule). */
export const IntUpToMaxId = (min: number, message: string) =>
  Schema.Number.annotate({ message: "Expected an integer" }).check(
    Schema.isInt(),
    Schema.isBetween({ minimum: min, maximum: MAX_ID }, { message })
  )

/** A row id: 1 to 2147483647. */
export const PositiveInt32 = IntUpToMaxId(1, "Expected a positive integer id")

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
