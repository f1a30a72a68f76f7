/**
 * The public API's error table (docs/integrators.md "Responses and errors", docs/decisions.md "Requests and
 * responses"): one row per documented code, with its HTTP status and its
 * message shape (libs/domain/src/ErrorTable.ts says what a row carries).
 * Every export of this module is a row, and everything else about errors
 * (`Errors.PublicError`, `Errors.isPublicError`, each row's envelope, the
 * responses apps/api writes) derives from it: adding an error is adding one
 * row here, its class and its type.
 */
import { row, rowWithHeaders } from "./ErrorTable.ts"
import { RetryAfter } from "./RateLimit.ts"

// Every fields.reason of a 401 is an `Errors.UnauthorizedReason` (docs/integrators.md "Authentication").
export const Unauthorized = row("Unauthorized", 401, "unauthorized")
export type Unauthorized = InstanceType<typeof Unauthorized>
export const InsufficientScope = row("InsufficientScope", 403, "insufficient_scope")
export type InsufficientScope = InstanceType<typeof InsufficientScope>
// A 429 carries `Retry-After`, whole seconds (docs/integrators.md "Limits").
export const RateLimitExceeded = rowWithHeaders("RateLimitExceeded", 429, "rate_limit_exceeded", {
  "retry-after": RetryAfter
})
export type RateLimitExceeded = InstanceType<typeof RateLimitExceeded>
export const ValidationFailed = row("ValidationFailed", 422, "validation_failed")
export type ValidationFailed = InstanceType<typeof ValidationFailed>
export const NotFound = row("NotFound", 404, "not_found")
export type NotFound = InstanceType<typeof NotFound>
export const InvalidWindow = row("InvalidWindow", 422, "invalid_window")
export type InvalidWindow = InstanceType<typeof InvalidWindow>
export const WindowTooLarge = row("WindowTooLarge", 422, "window_too_large")
export type WindowTooLarge = InstanceType<typeof WindowTooLarge>
export const StudentNotFound = row("StudentNotFound", 422, "student_not_found")
export type StudentNotFound = InstanceType<typeof StudentNotFound>
export const GroupNotFound = row("GroupNotFound", 422, "group_not_found")
export type GroupNotFound = InstanceType<typeof GroupNotFound>
export const GroupFull = row("GroupFull", 409, "group_full")
export type GroupFull = InstanceType<typeof GroupFull>
export const AlreadyEnrolled = row("AlreadyEnrolled", 422, "already_enrolled")
export type AlreadyEnrolled = InstanceType<typeof AlreadyEnrolled>
export const FunnelNotFound = row("FunnelNotFound", 422, "funnel_not_found")
export type FunnelNotFound = InstanceType<typeof FunnelNotFound>
export const MissingIdempotencyKey = row("MissingIdempotencyKey", 422, "missing_idempotency_key")
export type MissingIdempotencyKey = InstanceType<typeof MissingIdempotencyKey>
export const IdempotencyInProgress = row("IdempotencyInProgress", 409, "idempotency_in_progress")
export type IdempotencyInProgress = InstanceType<typeof IdempotencyInProgress>
export const MethodNotAllowed = row("MethodNotAllowed", 405, "method_not_allowed")
export type MethodNotAllowed = InstanceType<typeof MethodNotAllowed>
export const PayloadTooLarge = row("PayloadTooLarge", 413, "payload_too_large")
export type PayloadTooLarge = InstanceType<typeof PayloadTooLarge>
export const UnsupportedMediaType = row("UnsupportedMediaType", 415, "unsupported_media_type")
export type UnsupportedMediaType = InstanceType<typeof UnsupportedMediaType>
// docs/decisions.md "Requests and responses": what the HTTP parser refuses
// before any route runs (a request line, header or framing it cannot read,
// a request without Host, a Transfer-Encoding other than chunked; headers
// and URL over Node's 16 KiB; a request not received in time).
export const BadRequest = row("BadRequest", 400, "bad_request")
export type BadRequest = InstanceType<typeof BadRequest>
export const RequestTimeout = row("RequestTimeout", 408, "request_timeout")
export type RequestTimeout = InstanceType<typeof RequestTimeout>
export const RequestHeaderFieldsTooLarge = row("RequestHeaderFieldsTooLarge", 431, "request_header_fields_too_large")
export type RequestHeaderFieldsTooLarge = InstanceType<typeof RequestHeaderFieldsTooLarge>
export const InternalError = row("InternalError", 500, "internal_error")
export type InternalError = InstanceType<typeof InternalError>
// docs/decisions.md "Requests and responses": the database is away or over
// its bounds (docs/operations.md "Settings": DATABASE_ACQUIRE_TIMEOUT,
// DATABASE_STATEMENT_TIMEOUT); `Retry-After` says when to try again.
export const ServiceUnavailable = rowWithHeaders("ServiceUnavailable", 503, "service_unavailable", {
  "retry-after": RetryAfter
})
export type ServiceUnavailable = InstanceType<typeof ServiceUnavailable>
