/**
 * Where an error becomes a response outside HttpApi's codec: the same
 * envelope, status and headers the contract declares (each row of the error
 * table encodes itself), as one response. Used for what never reaches a
 * typed endpoint (unknown routes, 405, 413, 415, 500), for the 4xx an
 * idempotent write stores, and, written straight to the socket, for what
 * Node's HTTP parser refuses before there is a request (400, 408, 413, 431);
 * HttpApi encodes the rest with the same schemas.
 */
import type { Encoded } from "@school/domain/ErrorTable"
import * as RequestId from "@school/domain/RequestId"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { STATUS_CODES } from "node:http"

/** Every JSON response carries the charset (docs/decisions.md "Requests and responses"). */
export const JSON_CONTENT_TYPE = "application/json; charset=utf-8"

/** Any row of an error table (the public API's or the back office's) encodes itself. */
export interface EncodableError {
  encode(): Encoded
}

export const errorResponse = (error: EncodableError): HttpServerResponse.HttpServerResponse => {
  const { status, headers, body } = error.encode()
  return HttpServerResponse.jsonUnsafe(body, { status, headers, contentType: JSON_CONTENT_TYPE })
}

/**
 * The same response as a whole HTTP/1.1 message, for a socket that has no
 * request to answer (Node's `clientError`): the envelope, its content type
 * and length, and `Connection: close`, since the connection cannot be read
 * any further.
 */
export const errorMessage = (error: EncodableError): Uint8Array => {
  const { status, headers, body } = error.encode()
  const bytes = new TextEncoder().encode(JSON.stringify(body))
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}`,
    `Content-Type: ${JSON_CONTENT_TYPE}`,
    `Content-Length: ${bytes.length}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    // No request was read, so no id of its own to echo: a new one (libs/domain/src/RequestId.ts).
    `X-Request-Id: ${RequestId.generate()}`,
    "Connection: close",
    "",
    ""
  ]
  return new Uint8Array([...new TextEncoder().encode(lines.join("\r\n")), ...bytes])
}
