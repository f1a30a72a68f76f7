/**
 * One tagged error per documented public API code (spec 7.2, DECISIONS
 * "Requests and responses"), each with its HTTP status and an encoded form that
 * is the public envelope `{ error: { code, message, fields? } }`.
 *
 * Every class carries `message` and optional `fields`; `envelope(Class, code)`
 * turns it into the schema that endpoints declare, so the status survives,
 * OpenAPI shows the real envelope and `HttpApiClient` decodes it back.
 */
import { Schema, SchemaTransformation } from "effect"

/** `fields` values: a string, or a list of strings for validation messages (spec 7.1). */
export const ErrorFields = Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Array(Schema.String)]))
export type ErrorFields = typeof ErrorFields.Type

const body = {
  message: Schema.String,
  fields: Schema.optionalKey(ErrorFields)
}

export interface ErrorBody {
  readonly message: string
  readonly fields?: ErrorFields
}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", body, { httpApiStatus: 401 }) {}
export class InsufficientScope
  extends Schema.TaggedError<InsufficientScope>()("InsufficientScope", body, { httpApiStatus: 403 })
{}
export class RateLimitExceeded
  extends Schema.TaggedError<RateLimitExceeded>()("RateLimitExceeded", body, { httpApiStatus: 429 })
{}
export class ValidationFailed
  extends Schema.TaggedError<ValidationFailed>()("ValidationFailed", body, { httpApiStatus: 422 })
{}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", body, { httpApiStatus: 404 }) {}
export class InvalidWindow extends Schema.TaggedError<InvalidWindow>()("InvalidWindow", body, { httpApiStatus: 422 }) {}
export class WindowTooLarge
  extends Schema.TaggedError<WindowTooLarge>()("WindowTooLarge", body, { httpApiStatus: 422 })
{}
export class StudentNotFound
  extends Schema.TaggedError<StudentNotFound>()("StudentNotFound", body, { httpApiStatus: 422 })
{}
export class GroupNotFound extends Schema.TaggedError<GroupNotFound>()("GroupNotFound", body, { httpApiStatus: 422 }) {}
export class GroupFull extends Schema.TaggedError<GroupFull>()("GroupFull", body, { httpApiStatus: 409 }) {}
export class AlreadyEnrolled
  extends Schema.TaggedError<AlreadyEnrolled>()("AlreadyEnrolled", body, { httpApiStatus: 422 })
{}
export class FunnelNotFound
  extends Schema.TaggedError<FunnelNotFound>()("FunnelNotFound", body, { httpApiStatus: 422 })
{}
export class MissingIdempotencyKey
  extends Schema.TaggedError<MissingIdempotencyKey>()("MissingIdempotencyKey", body, { httpApiStatus: 422 })
{}
export class IdempotencyInProgress
  extends Schema.TaggedError<IdempotencyInProgress>()("IdempotencyInProgress", body, { httpApiStatus: 409 })
{}
export class MethodNotAllowed
  extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", body, { httpApiStatus: 405 })
{}
export class PayloadTooLarge
  extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", body, { httpApiStatus: 413 })
{}
export class UnsupportedMediaType
  extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", body, { httpApiStatus: 415 })
{}
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", body, { httpApiStatus: 500 }) {}

/** The wire code of each error (spec 7.2 plus DECISIONS). */
export const codes = {
  Unauthorized: "unauthorized",
  InsufficientScope: "insufficient_scope",
  RateLimitExceeded: "rate_limit_exceeded",
  ValidationFailed: "validation_failed",
  NotFound: "not_found",
  InvalidWindow: "invalid_window",
  WindowTooLarge: "window_too_large",
  StudentNotFound: "student_not_found",
  GroupNotFound: "group_not_found",
  GroupFull: "group_full",
  AlreadyEnrolled: "already_enrolled",
  FunnelNotFound: "funnel_not_found",
  MissingIdempotencyKey: "missing_idempotency_key",
  IdempotencyInProgress: "idempotency_in_progress",
  MethodNotAllowed: "method_not_allowed",
  PayloadTooLarge: "payload_too_large",
  UnsupportedMediaType: "unsupported_media_type",
  InternalError: "internal_error"
} as const

export type PublicError =
  | Unauthorized
  | InsufficientScope
  | RateLimitExceeded
  | ValidationFailed
  | NotFound
  | InvalidWindow
  | WindowTooLarge
  | StudentNotFound
  | GroupNotFound
  | GroupFull
  | AlreadyEnrolled
  | FunnelNotFound
  | MissingIdempotencyKey
  | IdempotencyInProgress
  | MethodNotAllowed
  | PayloadTooLarge
  | UnsupportedMediaType
  | InternalError

/** The HTTP status of each error, as its class declares it (for responses written outside HttpApi). */
export const statuses: Record<PublicError["_tag"], number> = {
  Unauthorized: 401,
  InsufficientScope: 403,
  RateLimitExceeded: 429,
  ValidationFailed: 422,
  NotFound: 404,
  InvalidWindow: 422,
  WindowTooLarge: 422,
  StudentNotFound: 422,
  GroupNotFound: 422,
  GroupFull: 409,
  AlreadyEnrolled: 422,
  FunnelNotFound: 422,
  MissingIdempotencyKey: 422,
  IdempotencyInProgress: 409,
  MethodNotAllowed: 405,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
  InternalError: 500
}

const publicErrorClasses = [
  Unauthorized,
  InsufficientScope,
  RateLimitExceeded,
  ValidationFailed,
  NotFound,
  InvalidWindow,
  WindowTooLarge,
  StudentNotFound,
  GroupNotFound,
  GroupFull,
  AlreadyEnrolled,
  FunnelNotFound,
  MissingIdempotencyKey,
  IdempotencyInProgress,
  MethodNotAllowed,
  PayloadTooLarge,
  UnsupportedMediaType,
  InternalError
] as const

/** Whether a failure of unknown type (a middleware sees `unhandled`) is one of ours. */
export const isPublicError = (u: unknown): u is PublicError => publicErrorClasses.some((C) => u instanceof C)

/** The envelope as plain JSON, for responses written outside HttpApi. */
export const toEnvelope = (error: PublicError) => wire(codes[error._tag], error)

/** The envelope of one error body under its code; `fields` only when there are any (spec 7.1). */
const wire = <C extends string>(code: C, { message, fields }: ErrorBody) => ({
  error: { code, message, ...(fields === undefined ? {} : { fields }) }
})

/**
 * The schema an endpoint declares for an error: encodes the class as the
 * public envelope with its code, decodes an envelope with that code back.
 */
export const envelope = <S extends Schema.Constraint & (new(props: ErrorBody) => S["Type"])>(
  self: S,
  code: string
) =>
  Schema.Struct({
    error: Schema.Struct({
      code: Schema.Literal(code),
      message: Schema.String,
      fields: Schema.optionalKey(ErrorFields)
    })
  }).pipe(
    Schema.decodeTo(
      Schema.toType(self),
      SchemaTransformation.transform({
        decode: ({ error }) => new self(error.fields === undefined ? { message: error.message } : error),
        encode: (e: S["Type"]) => wire(code, e as ErrorBody)
      })
    )
  )

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

export const unauthorized = (reason: UnauthorizedReason) =>
  new Unauthorized({ message: unauthorizedMessages[reason], fields: { reason } })

/** The envelope schemas, one per code, as endpoints and middleware declare them. */
export const Envelopes = {
  Unauthorized: envelope(Unauthorized, "unauthorized"),
  InsufficientScope: envelope(InsufficientScope, "insufficient_scope"),
  RateLimitExceeded: envelope(RateLimitExceeded, "rate_limit_exceeded"),
  ValidationFailed: envelope(ValidationFailed, "validation_failed"),
  NotFound: envelope(NotFound, "not_found"),
  InvalidWindow: envelope(InvalidWindow, "invalid_window"),
  WindowTooLarge: envelope(WindowTooLarge, "window_too_large"),
  StudentNotFound: envelope(StudentNotFound, "student_not_found"),
  GroupNotFound: envelope(GroupNotFound, "group_not_found"),
  GroupFull: envelope(GroupFull, "group_full"),
  AlreadyEnrolled: envelope(AlreadyEnrolled, "already_enrolled"),
  FunnelNotFound: envelope(FunnelNotFound, "funnel_not_found"),
  MissingIdempotencyKey: envelope(MissingIdempotencyKey, "missing_idempotency_key"),
  IdempotencyInProgress: envelope(IdempotencyInProgress, "idempotency_in_progress"),
  MethodNotAllowed: envelope(MethodNotAllowed, "method_not_allowed"),
  PayloadTooLarge: envelope(PayloadTooLarge, "payload_too_large"),
  UnsupportedMediaType: envelope(UnsupportedMediaType, "unsupported_media_type"),
  InternalError: envelope(InternalError, "internal_error")
} as const
