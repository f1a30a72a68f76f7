/**
 * Text fields of request bodies (docs/decisions.md "Requests and
 * responses"): trimmed, bounded in length, and storable: no NUL character and
 * no unpaired UTF-16 surrogate, which PostgreSQL would reject or silently
 * rewrite (a `validation_failed` beats a 500 or a changed value).
 */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

/** True when PostgreSQL stores `s` unchanged: no NUL, no lone surrogate. */
export const isStorable = (s: string): boolean => s.isWellFormed() && !s.includes("\u0000")

const storable = Schema.makeFilter(isStorable, {
  message: "Expected text without NUL characters or unpaired surrogates"
})

/** A trimmed string of at most `max` UTF-16 code units, storable in PostgreSQL. */
export const Text = (max: number) =>
  Schema.String.annotate({ message: "Expected a string" }).pipe(
    Schema.decodeTo(Schema.Trimmed, SchemaTransformation.trim())
  ).check(
    Schema.isMaxLength(max, { message: `Expected at most ${max} characters` }),
    storable
  )

export const NAME_MAX = 255

/** A name that must be given: trimmed, 1 to NAME_MAX characters (an employee's, an API key's). */
export const NonEmptyName = Text(NAME_MAX).check(Schema.isMinLength(1, { message: "Expected a non-empty name" }))

export const PHONE_MAX = 255
export const COMMENT_MAX = 4000
export const SOURCE_MAX = 64
