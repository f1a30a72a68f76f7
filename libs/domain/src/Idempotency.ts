/**
 * The idempotency rules of the write endpoints (docs/integrators.md
 * "Writing"; docs/decisions.md "Idempotency"), as pure functions: what a
 * well-formed key is, which operation a key names, and what a repeat does
 * when it finds a record for its key. The store
 * (libs/persistence/src/IdempotencyStore.ts) and the middleware
 * (apps/api/src/IdempotentWrite.ts) only carry these out.
 */
import * as Duration from "effect/Duration"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { MissingIdempotencyKey, ValidationFailed } from "./Errors.ts"

/** The header, as the docs and `fields` spell it (docs/integrators.md "Writing"). */
export const HEADER = "Idempotency-Key"
export const MAX_KEY_LENGTH = 255
/** The header on a replayed response (docs/decisions.md "Idempotency"). */
export const REPLAYED_HEADER = "Idempotent-Replayed"
export const REPLAYED_DESCRIPTION =
  "`true` when this is the stored response of an earlier request with the same Idempotency-Key (same status, " +
  "byte-identical body); absent on a first execution."

/** How long a repeat waits for a running first attempt before 409 (IDEMPOTENCY_WAIT's default; docs/decisions.md "Idempotency"). */
export const DEFAULT_WAIT: Duration.Duration = Duration.seconds(2)

const KEY_PATTERN = /^[\x20-\x7E]{1,255}$/

export const KEY_MESSAGE = `Expected 1 to ${MAX_KEY_LENGTH} printable ASCII characters, for example a UUID`

/** docs/decisions.md "Idempotency": 1 to 255 printable ASCII characters (0x20-0x7E). */
export const isWellFormedKey = (key: string): boolean => KEY_PATTERN.test(key)

export const KEY_DESCRIPTION =
  "Required on every write. A fresh unique string per operation (a UUID, say): 1 to 255 printable ASCII characters. " +
  "A repeat with the same key on the same method and path within 24 hours returns the stored result of the first " +
  "execution, with the header `Idempotent-Replayed: true`, and does not run the operation again; while the first is " +
  "still running, a repeat waits briefly, then gets 409 idempotency_in_progress. Keys are shared by every API key " +
  "of the school."

export const IdempotencyKey = Schema.String.check(Schema.makeFilter(isWellFormedKey, { message: KEY_MESSAGE }))

/**
 * The header's value checked (docs/integrators.md "Writing"): absent is 422 missing_idempotency_key,
 * malformed is 422 validation_failed; both name the header in `fields`.
 */
export const validateKey = (
  header: string | undefined
): Result.Result<string, MissingIdempotencyKey | ValidationFailed> => {
  if (header === undefined) {
    return Result.fail(
      new MissingIdempotencyKey({
        message: `Every write needs the header '${HEADER}' with a fresh unique value (a UUID, say).`,
        fields: { [HEADER]: ["Missing header"] }
      })
    )
  }
  return isWellFormedKey(header)
    ? Result.succeed(header)
    : Result.fail(new ValidationFailed({ message: `Invalid header: ${HEADER}`, fields: { [HEADER]: [KEY_MESSAGE] } }))
}

/**
 * The operation a key is scoped to, besides the school (docs/decisions.md
 * "Idempotency"): the method and the MATCHED ROUTE with its parameters put
 * in, not the path as sent. `POST /api/public/v1/students/:id/groups` with
 * id 10 is `POST /api/public/v1/students/10/groups`, however the request
 * spelled it, so one key on `/students/5/groups` and on `/students/6/groups`
 * names two operations and one spelling cannot make a second operation of
 * the same one. A canonical request's operation is its path, as it was
 * before routes were used, so records stored then still replay. A `:name`
 * without a value in `params` stays as written.
 */
/** A parameter value escaped so no value can stand for another or for the route's own `/`: per UTF-16 unit, never throwing. */
const escapeParam = (value: string): string =>
  value.replace(/[^A-Za-z0-9._~-]/g, (unit) => `%u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`)

export const operationOf = (
  method: string,
  route: string,
  params: Readonly<Record<string, string | undefined>> = {}
): string =>
  `${method.toUpperCase()} ${
    route.replace(/:([A-Za-z0-9_]+)/g, (placeholder, name: string) => {
      const value = params[name]
      return value === undefined ? placeholder : escapeParam(value)
    })
  }`

export interface Policy {
  /**
   * A claim whose first attempt has not finished after this long is taken
   * over, even while its attempt still runs (or is not known to have ended).
   */
  readonly staleAfterMs: number
  /** A record older than this is ignored (and purged): the key runs again. */
  readonly retentionMs: number
}

export const DEFAULT_POLICY: Policy = { staleAfterMs: 60_000, retentionMs: 24 * 60 * 60 * 1000 }

/**
 * Whether the attempt that claimed a key still runs, as the database knows
 * it (docs/decisions.md "Idempotency"): the attempt's own database session
 * holds a lock for as long as the attempt runs.
 * - `running`: a session holds it;
 * - `gone`: no session holds it: the session ended (PostgreSQL stopped or
 *   restarted, the connection was cut, the API process died) and with it
 *   the attempt's transaction, so nothing of that attempt can still commit;
 * - `unknown`: the claim names no lock (it was written without one), so
 *   only its age can tell.
 */
export type Owner = "running" | "gone" | "unknown"

/** What a request finds stored for its (school, key, operation). */
export interface Found {
  readonly completed: boolean
  /** Milliseconds since the record's attempt claimed the key. */
  readonly ageMs: number
  /** Whether its attempt still runs; only asked of a record that is not completed. Absent: `unknown`. */
  readonly owner?: Owner | undefined
}

/**
 * What a request does with the record it found: replay the stored response
 * (docs/integrators.md "Writing"), wait for the running first attempt, or take the
 * key over because the record is expired or its attempt has ended without a
 * response (a 5xx is not stored: the key runs again) or is presumed dead.
 */
export type Decision = "replay" | "wait" | "take-over"

export const decide = (found: Found, policy: Policy = DEFAULT_POLICY): Decision => {
  if (found.ageMs > policy.retentionMs) return "take-over"
  if (found.completed) return "replay"
  // The attempt ended with its session and could not give the key up: nothing to wait for.
  if (found.owner === "gone") return "take-over"
  return found.ageMs > policy.staleAfterMs ? "take-over" : "wait"
}

/** The pause before the n-th re-read (from 0) while waiting: 5, 10, 20, 40, then every 50 ms. */
export const pollDelayMs = (attempt: number): number => Math.min(50, 5 * 2 ** Math.min(attempt, 4))
