/**
 * The public API's errors: the rows of its table (PublicErrors.ts), the
 * union of them and the guard, both derived from the table, and the reasons
 * of a 401 (docs/integrators.md "Authentication", docs/decisions.md
 * "Authentication and scopes").
 */
import * as Schema from "effect/Schema"
import * as ErrorTable from "./ErrorTable.ts"
import * as PublicErrors from "./PublicErrors.ts"
import { Unauthorized } from "./PublicErrors.ts"

export * from "./PublicErrors.ts"
export { ErrorFields } from "./ErrorTable.ts"

/** Every error of the public API. */
export type PublicError = ErrorTable.ErrorOf<typeof PublicErrors>

/** Whether a failure of unknown type (a middleware sees `unhandled`) is one of the public API's errors. */
export const isPublicError = ErrorTable.guard(PublicErrors)

export const UnauthorizedReason = Schema.Literals([
  "missing_or_malformed_key",
  "unknown_key",
  "revoked_key",
  "expired_key"
])
export type UnauthorizedReason = typeof UnauthorizedReason.Type

const unauthorizedMessages: Record<UnauthorizedReason, string> = {
  missing_or_malformed_key: "Send the header 'Authorization: Bearer svc_<prefix>_<secret>'.",
  unknown_key: "The API key is not known.",
  revoked_key: "The API key has been revoked.",
  expired_key: "The API key has expired."
}

/** 401 unauthorized with `fields.reason` (docs/integrators.md "Authentication"). */
export const unauthorized = (reason: UnauthorizedReason): Unauthorized =>
  new Unauthorized({ message: unauthorizedMessages[reason], fields: { reason } })
