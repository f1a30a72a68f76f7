/**
 * What both faces of the client fail with when the service answers with an
 * error (docs/integrators.md "Responses and errors"): the Promise face
 * rejects with it, the Effect face fails with it. One class,
 * `ApiError`, a real `Error` whose instance carries the envelope and the
 * answer's status:
 *
 * - `code`: the documented code (`"rate_limit_exceeded"`, …), a union of
 *   the public error table's codes (libs/domain PublicErrors.ts);
 * - `message` and `fields` (only for errors that belong to a request field);
 * - `status`: the HTTP status; `headers`: the response headers the error
 *   declares (a 429's and a 503's `retry-after`), and `retryAfterSeconds`
 *   read from it;
 * - `_tag`: the error's name in the table (`"RateLimitExceeded"`), so the
 *   Effect face's `Effect.catchTag("RateLimitExceeded", …)` narrows to
 *   `ApiError<"RateLimitExceeded">`.
 *
 * Every error envelope is decoded, also one the endpoint does not declare
 * (a 500 internal_error, a 405), so a caller never meets an "undeclared
 * status code" for an answer the guide documents.
 */
import * as Errors from "@school/domain/Errors"
import * as PublicErrors from "@school/domain/PublicErrors"

type Rows = typeof PublicErrors

/** The name of an error in the public error table, e.g. `"RateLimitExceeded"`. */
export type ErrorTag = keyof Rows
/** A documented error code, e.g. `"rate_limit_exceeded"`. */
export type ErrorCode = Rows[ErrorTag]["code"]
/** `fields` of an error: messages per request field (docs/integrators.md "Responses and errors"). */
export type ErrorFields = Errors.ErrorFields

const isTag = (name: string): name is ErrorTag => Object.hasOwn(PublicErrors, name)
const byCode: ReadonlyMap<string, ErrorTag> = new Map(
  Object.keys(PublicErrors).filter(isTag).map((tag) => [PublicErrors[tag].code, tag])
)

export class ApiError<Tag extends ErrorTag = ErrorTag> extends Error {
  override readonly name = "ApiError"
  readonly _tag: Tag
  readonly code: Rows[Tag]["code"]
  readonly status: number
  readonly fields: ErrorFields | undefined
  readonly headers: Readonly<Record<string, string>>
  /** A 429's or a 503's `Retry-After`, in seconds. */
  readonly retryAfterSeconds: number | undefined
  constructor(tag: Tag, body: {
    readonly message: string
    readonly fields?: ErrorFields | undefined
    readonly headers?: Readonly<Record<string, string>> | undefined
  }) {
    super(body.message)
    const row = PublicErrors[tag]
    this._tag = tag
    this.code = row.code
    this.status = row.status
    this.fields = body.fields
    this.headers = body.headers ?? {}
    const retryAfter = this.headers["retry-after"]
    this.retryAfterSeconds = retryAfter === undefined ? undefined : Number(retryAfter)
  }

  /** The error of a code the table knows, e.g. `ApiError.fromCode("not_found", { message })`; undefined for an unknown code. */
  static fromCode(code: string, body: { readonly message: string; readonly fields?: ErrorFields | undefined; readonly headers?: Readonly<Record<string, string>> }): ApiError | undefined {
    const tag = byCode.get(code)
    return tag === undefined ? undefined : new ApiError(tag, body)
  }

  /** An error of the table's classes (`@school/domain` `Errors`, what the derived client decodes) as an `ApiError`. */
  static fromPublicError(error: Errors.PublicError): ApiError {
    const headers: Record<string, string> = {}
    if ("headers" in error) for (const [name, value] of Object.entries(error.headers)) headers[name] = String(value)
    return new ApiError(error._tag, { message: error.message, fields: error.fields, headers })
  }
}

/** Whether `u` is an `ApiError`, optionally of one code: `isApiError(e, "rate_limit_exceeded")`. */
export const isApiError = <C extends ErrorCode>(u: unknown, code?: C): u is ApiError & { readonly code: C } =>
  u instanceof ApiError && (code === undefined || u.code === code)
