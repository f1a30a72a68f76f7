/**
 * The phone rule of POST /leads (docs/integrators.md "Writing", docs/decisions.md "Writes"):
 * required, non-empty after trimming, and 5 to 20 digits once `+ - ( )` and
 * spaces are removed; no other character is allowed. The value is kept as
 * the client wrote it, trimmed (docs/decisions.md "Requests and responses":
 * text fields are trimmed), so the lead, its response and its
 * `lead.created` event carry the same phone (docs/integrators.md "lead.created").
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { PHONE_MAX, Text } from "./Text.ts"

export const MIN_DIGITS = 5
export const MAX_DIGITS = 20

/** The characters a phone may carry besides digits. */
export const SEPARATORS = "+-() "

export const PHONE_MESSAGE =
  `Expected a phone number: ${MIN_DIGITS} to ${MAX_DIGITS} digits, optionally with + - ( ) and spaces`

const ALLOWED = /^[0-9+\-() ]*$/

/** The digits of a phone, separators removed. */
export const digitsOf = (phone: string): string => phone.replace(/[^0-9]/g, "")

/**
 * Validates and normalises (trims) a phone. `Result.succeed` carries the value
 * to store; `Result.fail` the message for `fields.phone`.
 */
export const validatePhone = (raw: string): Result.Result<string, string> => {
  const phone = raw.trim()
  if (phone === "") return Result.fail("Expected a non-empty phone number")
  if (!ALLOWED.test(phone)) return Result.fail(PHONE_MESSAGE)
  const digits = digitsOf(phone).length
  return digits >= MIN_DIGITS && digits <= MAX_DIGITS ? Result.succeed(phone) : Result.fail(PHONE_MESSAGE)
}

/** The request field: a trimmed string that passes `validatePhone`. */
export const Phone = Text(PHONE_MAX).check(
  Schema.makeFilter((phone: string) => Result.match(validatePhone(phone), { onSuccess: () => true, onFailure: (m) => m }))
).annotate({
  description: `Required. ${MIN_DIGITS} to ${MAX_DIGITS} digits, optionally with + - ( ) and spaces; stored trimmed, as written`,
  examples: ["+7 (999) 123-45-67"]
})
