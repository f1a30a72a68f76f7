/**
 * The back office's error table (docs/back-office.md): one row per code,
 * with its HTTP status, in the back office's envelope
 * `{ success: false, code, message, fields? }` (libs/domain/src/ErrorTable.ts
 * says what a row carries). Every export of this module is a row; the union
 * and the guard derive from it (BackOfficeError, isBackOfficeError in
 * BackOfficeErrorGuard.ts).
 */
import { BackOfficeEnvelope, rowsWith } from "./ErrorTable.ts"
import { RetryAfter } from "./RateLimit.ts"

const { row, rowWithHeaders } = rowsWith(BackOfficeEnvelope)

export const Unauthenticated = row("BackOfficeUnauthenticated", 401, "UNAUTHENTICATED")
export type Unauthenticated = InstanceType<typeof Unauthenticated>
export const Forbidden = row("BackOfficeForbidden", 403, "FORBIDDEN")
export type Forbidden = InstanceType<typeof Forbidden>
// Key issuance on a plan below Extended; exactly { success, code, message } (docs/back-office.md "API keys").
export const TariffTooLow = row("BackOfficeTariffTooLow", 403, "TARIFF_TOO_LOW")
export type TariffTooLow = InstanceType<typeof TariffTooLow>
export const NotFound = row("BackOfficeNotFound", 404, "NOT_FOUND")
export type NotFound = InstanceType<typeof NotFound>
export const MethodNotAllowed = row("BackOfficeMethodNotAllowed", 405, "METHOD_NOT_ALLOWED")
export type MethodNotAllowed = InstanceType<typeof MethodNotAllowed>
export const Conflict = row("BackOfficeConflict", 409, "CONFLICT")
export type Conflict = InstanceType<typeof Conflict>
// The public enrollment's rules (docs/decisions.md "Writes"), with the back office's codes.
export const GroupFull = row("BackOfficeGroupFull", 409, "GROUP_FULL")
export type GroupFull = InstanceType<typeof GroupFull>
export const AlreadyEnrolled = row("BackOfficeAlreadyEnrolled", 409, "ALREADY_ENROLLED")
export type AlreadyEnrolled = InstanceType<typeof AlreadyEnrolled>
export const PayloadTooLarge = row("BackOfficePayloadTooLarge", 413, "PAYLOAD_TOO_LARGE")
export type PayloadTooLarge = InstanceType<typeof PayloadTooLarge>
export const UnsupportedMediaType = row("BackOfficeUnsupportedMediaType", 415, "UNSUPPORTED_MEDIA_TYPE")
export type UnsupportedMediaType = InstanceType<typeof UnsupportedMediaType>
export const ValidationFailed = row("BackOfficeValidationFailed", 422, "VALIDATION_FAILED")
export type ValidationFailed = InstanceType<typeof ValidationFailed>
// docs/decisions.md "Back-office sessions": repeated failed logins for one e-mail.
export const TooManyAttempts = rowWithHeaders("BackOfficeTooManyAttempts", 429, "TOO_MANY_ATTEMPTS", {
  "retry-after": RetryAfter
})
export type TooManyAttempts = InstanceType<typeof TooManyAttempts>
// docs/decisions.md "Requests and responses": the database away or over its bounds.
export const ServiceUnavailable = rowWithHeaders("BackOfficeServiceUnavailable", 503, "SERVICE_UNAVAILABLE", {
  "retry-after": RetryAfter
})
export type ServiceUnavailable = InstanceType<typeof ServiceUnavailable>
// A request that is not valid HTTP (apps/api/src/ParserErrors.ts).
export const BadRequest = row("BackOfficeBadRequest", 400, "BAD_REQUEST")
export type BadRequest = InstanceType<typeof BadRequest>
export const InternalError = row("BackOfficeInternalError", 500, "INTERNAL_ERROR")
export type InternalError = InstanceType<typeof InternalError>
