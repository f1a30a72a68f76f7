/**
 * Where an error becomes a response outside HttpApi's codec: the same
 * envelope, status and headers the contract declares (each row of the error
 * table encodes itself), as one response. Used for what never reaches a
 * typed endpoint (unknown routes, 405, 413, 415, 500) and for the 4xx an
 * idempotent write stores; HttpApi encodes the rest with the same schemas.
 */
import { HttpServerResponse } from "effect/http"
import type { Errors } from "@school/domain"

/** Every JSON response carries the charset (docs/decisions.md "Requests and responses"). */
export const JSON_CONTENT_TYPE = "application/json; charset=utf-8"

export const errorResponse = (error: Errors.PublicError): HttpServerResponse.HttpServerResponse => {
  const { status, headers, body } = error.encode()
  return HttpServerResponse.jsonUnsafe(body, { status, headers, contentType: JSON_CONTENT_TYPE })
}
