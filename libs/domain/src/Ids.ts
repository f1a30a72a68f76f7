/**
 * Ids: positive 32-bit integers (the columns are `integer`), branded per
 * entity so a student id cannot stand where a group id is expected. The one
 * definition of "an id" for path parameters, request bodies and rows; and
 * the one definition of an integer written in a path or a query string
 * (`DecimalIntFromString`): a plain decimal, nothing else (docs/decisions.md
 * "Requests and responses").
 */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

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

/** `0`, or an optional `-` and digits without a leading zero: the only spelling of an integer in a URL. */
const DECIMAL_INT = /^(?:0|-?[1-9][0-9]*)$/

export const DECIMAL_INT_MESSAGE = "Expected a plain decimal integer (digits only: no sign, exponent, fraction, spaces or leading zeros), e.g. 42"

/** The canonical decimal spelling of a safe integer: `String(Number(s)) === s`. */
export const isDecimalInt = (s: string): boolean => DECIMAL_INT.test(s) && Number.isSafeInteger(Number(s))

/** A path or query string that is a plain decimal integer. */
export const DecimalIntString = Schema.String.check(
  Schema.makeFilter(isDecimalInt, { message: DECIMAL_INT_MESSAGE, expected: "a plain decimal integer" })
)

/**
 * A path or query parameter holding an integer (docs/integrators.md "Reading"; docs/decisions.md
 * "Requests and responses"): the text must be the plain decimal of the
 * integer, so `1e3`, `+5`, `5.0`, `007`, ` 5`, `0x10` and the empty string
 * are validation_failed on the parameter, never a different number; the
 * number then meets `to`'s own rules (range, brand). Every integer path and
 * query parameter is one of these, so the rule lives here once.
 */
export const DecimalIntFromString = <To extends Schema.Constraint & { readonly Encoded: number }>(to: To) =>
  DecimalIntString.pipe(
    Schema.decodeTo(to, SchemaTransformation.transform<number, string>({ decode: Number, encode: String }))
  )

/** A student id in a path (`/students/{id}`, `/students/{id}/groups`). */
export const StudentIdFromPath = DecimalIntFromString(StudentId)
