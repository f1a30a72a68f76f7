/**
 * The request id of an HTTP process (docs/operations.md "Process endpoints",
 * "Request ids"): every response carries
 * `X-Request-Id`, the request's own value when it sent a sane one (1 to 128
 * visible ASCII characters, so a log line cannot be split or coloured by it),
 * else a new one; the log lines of that request carry it as `request_id`.
 */
import { randomBytes } from "node:crypto"

export const HEADER = "x-request-id"

/** The log annotation that carries it. */
export const ANNOTATION = "request_id"

export const MAX_LENGTH = 128

/** 1 to 128 characters, each visible ASCII (0x21 to 0x7E). */
const SANE = /^[\x21-\x7e]{1,128}$/

/** How the OpenAPI documents describe the header. */
export const DESCRIPTION = "The request's id: the request's own X-Request-Id when it sent 1 to 128 visible ASCII " +
  "characters, else a new one. Quote it when you ask about a call: the service's log lines of the request carry it."

/** Its JSON schema in the OpenAPI documents. */
export const SCHEMA = { type: "string", minLength: 1, maxLength: MAX_LENGTH, pattern: "^[\\x21-\\x7E]+$" } as const

/** The value a client sent, when it is sane. */
export const sane = (value: string | undefined): string | undefined =>
  value !== undefined && SANE.test(value) ? value : undefined

/** Random bytes drawn 4 KiB at a time: a request takes 16 of them, not a call into the CSPRNG of its own. */
const POOL_BYTES = 4096
let pool = Buffer.alloc(0)
let taken = POOL_BYTES

/** A new id: 16 random bytes, base64url (22 characters). */
export const generate = (): string => {
  if (taken + 16 > pool.length) {
    pool = randomBytes(POOL_BYTES)
    taken = 0
  }
  const id = pool.toString("base64url", taken, taken + 16)
  taken += 16
  return id
}

/** The id of a request with this header value (Node joins repeated headers with ", "). */
export const of = (header: string | undefined): string => sane(header) ?? generate()
