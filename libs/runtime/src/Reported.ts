/**
 * Owns what makes an error "its own report" (docs/development.md "Runtime"):
 * an error that sets `[Runtime.errorReported] = false` (so Effect prints no
 * cause for it) and whose message says everything. `runMain` prints it as one
 * line on stderr, `error: <message>`, or the error's `[reportLine]` when it
 * has one (a malformed setting is reported as `invalid setting …`,
 * docs/operations.md "Settings"). Which errors qualify is a property of each
 * error, never a list kept somewhere.
 */
import * as Predicate from "effect/Predicate"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"

/** The line an error that is its own report prints instead of `error: <message>`. */
export const reportLine: unique symbol = Symbol.for("@school/runtime/Reported/reportLine")

/** An error that is the whole report of a failed start: one line, no cause, no stack. */
export interface Reported {
  readonly [Runtime.errorReported]: false
  readonly message: string
  readonly [reportLine]?: string
}

export const isReported = (error: unknown): error is Reported =>
  Predicate.hasProperty(error, Runtime.errorReported) && error[Runtime.errorReported] === false &&
  Predicate.hasProperty(error, "message") && typeof error.message === "string"

/** The one line printed for an error that is its own report. */
export const lineOf = (error: Reported): string => error[reportLine] ?? `error: ${error.message}`

/**
 * A failure the program has already written as one log line, in the
 * configured LOG_FORMAT on stderr (a port already in use, the embedded
 * PostgreSQL gone): `runMain` adds nothing and the process exits 1.
 */
export class AlreadyLogged extends Schema.TaggedError<AlreadyLogged>()("AlreadyLogged", {
  message: Schema.String
}) {
  override readonly [Runtime.errorReported] = false
  get [reportLine](): string {
    return ""
  }
}
