/**
 * Whether a request body can be read as what every body of the API is:
 * JSON in UTF-8, uncompressed (docs/decisions.md "Requests and responses").
 * The one check every route that takes a body goes through: the idempotency
 * middleware runs it before the Idempotency-Key is claimed (so such a
 * request is never stored), and an endpoint that takes a body without an
 * Idempotency-Key runs `readableBody` before it decodes the body.
 *
 * Refused, in this order:
 * - a `Content-Encoding` other than identity: 415, with
 *   `Accept-Encoding: identity` (bodies are never decompressed);
 * - a body without a `Content-Type`, or a media type other than
 *   `application/json` (with a body or not): 415;
 * - a `charset` other than UTF-8 (or one of its labels): 415;
 * - bytes that are not UTF-8: 422 validation_failed. Nothing is ever
 *   replaced by U+FFFD.
 * A body over 256 KiB is a 413 while it is read (ErrorEnvelope).
 * The back office runs the same check in its validation middleware
 * (apps/api/src/BackOfficeAuth.ts), answered in its own envelope: one
 * check, two error tables (docs/back-office.md "Answers and errors").
 */
import * as Effect from "effect/Effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { isUtf8 } from "node:buffer"
import { Errors } from "@school/domain"
import { type EncodableError, errorResponse } from "./ErrorResponse.ts"

/** The media type every request body is sent as. */
export const JSON_MEDIA_TYPE = "application/json"

/** A Content-Type split into its media type (lower-cased) and its parameters (names lower-cased, values unquoted). */
export const parseContentType = (contentType: string) => {
  const [type = "", ...parameters] = contentType.split(";")
  const params = new Map<string, string>()
  for (const parameter of parameters) {
    const at = parameter.indexOf("=")
    if (at < 0) continue
    const name = parameter.slice(0, at).trim().toLowerCase()
    const value = parameter.slice(at + 1).trim().replace(/^"(.*)"$/, "$1")
    if (!params.has(name)) params.set(name, value)
  }
  return { mediaType: type.trim().toLowerCase(), params }
}

/** Whether a charset label means UTF-8 (its WHATWG aliases included: `utf8`, `unicode-1-1-utf-8`…). */
export const isUtf8Label = (label: string): boolean => {
  try {
    return new TextDecoder(label).encoding === "utf-8"
  } catch {
    return false
  }
}

/** The rows of an error table an unreadable body is answered with: the public API's (the default) or the back office's. */
export interface BodyRefusalRows {
  readonly UnsupportedMediaType: new(body: { readonly message: string }) => EncodableError
  readonly ValidationFailed: new(body: { readonly message: string }) => EncodableError
}

/**
 * The answer to a body no operation can read, or undefined when it is
 * readable, from the request's headers and the body's bytes, in the
 * envelope of `rows`' API.
 */
export const bodyProblem = (
  headers: Readonly<Record<string, string | undefined>>,
  body: Uint8Array,
  rows: BodyRefusalRows = Errors
): HttpServerResponse.HttpServerResponse | undefined => {
  const unsupported = (message: string) => errorResponse(new rows.UnsupportedMediaType({ message }))
  const encoding = headers["content-encoding"]?.trim().toLowerCase()
  if (encoding !== undefined && encoding !== "" && encoding !== "identity") {
    return HttpServerResponse.setHeader(
      unsupported("Content-Encoding is not supported: send the body uncompressed, as application/json in UTF-8."),
      "accept-encoding",
      "identity"
    )
  }
  const contentType = headers["content-type"]
  if (contentType === undefined) {
    return body.length === 0 ? undefined : unsupported("A body needs Content-Type: application/json.")
  }
  const { mediaType, params } = parseContentType(contentType)
  if (mediaType !== JSON_MEDIA_TYPE) return unsupported("Send the body as application/json.")
  const charset = params.get("charset")
  if (charset !== undefined && !isUtf8Label(charset)) return unsupported("Send the body as application/json in UTF-8.")
  return isUtf8(body)
    ? undefined
    : errorResponse(new rows.ValidationFailed({ message: "The request body is not valid UTF-8." }))
}

/**
 * Reads the request's body (a 413 past the limit) and returns the answer to
 * it when no operation can read it, in the envelope of `rows`' API;
 * undefined when it is readable. The body stays cached on the request for
 * the endpoint's decoding.
 */
export const readableBodyIn = (rows: BodyRefusalRows): Effect.Effect<
  HttpServerResponse.HttpServerResponse | undefined,
  never,
  HttpServerRequest.HttpServerRequest
> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* Effect.orDie(request.arrayBuffer)
    return bodyProblem(request.headers, new Uint8Array(body), rows)
  })

/** `readableBodyIn` with the public API's envelope. */
export const readableBody = readableBodyIn(Errors)
