/**
 * Requests the HTTP layer refuses before any route runs, answered in the
 * public envelope (docs/decisions.md "Requests and responses"):
 *
 * - what Node's parser cannot read (`clientError`, written straight to the
 *   socket, then the connection is closed): header fields and URL over
 *   Node's 16 KiB or too many of them (431 request_header_fields_too_large),
 *   a request line, header or framing it cannot parse, among them the
 *   smuggling shapes (Content-Length with Transfer-Encoding, two
 *   Content-Lengths) (400 bad_request), chunk extensions too large (413),
 *   a request not received in time (408 request_timeout);
 * - what the parser lets through but HTTP/1.1 forbids (`refusedRequest`, in
 *   the app's outermost middleware): no Host or more than one (RFC 9112
 *   3.2), a Transfer-Encoding other than `chunked` (RFC 9112 6.1; the rest
 *   of the connection cannot be framed, so it is closed). Node's own Host
 *   check answers with an empty body, so the server turns it off
 *   (`requireHostHeader: false`) and this check replaces it.
 *
 * Such a request never reaches a route.
 */
import * as Predicate from "effect/Predicate"
import type { HttpServerRequest } from "effect/http"
import { IncomingMessage } from "node:http"
import type { Duplex } from "node:stream"
import { Errors } from "@school/domain"
import { errorMessage } from "./ErrorResponse.ts"

const codeOf = (error: Error): string | undefined =>
  Predicate.hasProperty(error, "code") && typeof error.code === "string" ? error.code : undefined

/** The error for a request Node's parser refused, by the parser's code. */
export const parserError = (code: string | undefined): Errors.PublicError => {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return new Errors.RequestHeaderFieldsTooLarge({
        message: "The request's header fields and URL are too large: 16 KiB in all."
      })
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new Errors.PayloadTooLarge({ message: "The request's chunk extensions are too large." })
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new Errors.RequestTimeout({ message: "The request was not received in time." })
    default:
      return new Errors.BadRequest({ message: "The request is not valid HTTP/1.1." })
  }
}

/** Whether a response on this connection has already started (then nothing more may be written). */
const responseStarted = (socket: Duplex): boolean => {
  const inFlight = Predicate.hasProperty(socket, "_httpMessage") ? socket._httpMessage : undefined
  return Predicate.hasProperty(inFlight, "headersSent") && inFlight.headersSent === true
}

/**
 * How long a refused connection is kept open after the answer, still read
 * and discarded: closing a socket with unread bytes sends a reset, which can
 * make the client drop the answer before it reads it.
 */
const CLOSE_GRACE_MS = 1_000

/**
 * The server's `clientError` listener: like Node's default, but the answer
 * is the envelope. Nothing is written when the peer is gone or a response
 * has started. The parser reports every later chunk of a refused
 * connection again: the first answer stands.
 */
export const onClientError = (error: Error, socket: Duplex): void => {
  if (socket.writableEnded) return
  const code = codeOf(error)
  if (code === "ECONNRESET" || !socket.writable || responseStarted(socket)) {
    socket.destroy()
    return
  }
  socket.end(errorMessage(parserError(code)))
  setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref()
}

/** Whether the request is HTTP/1.1 or later over HTTP/1 (where Host is required). */
const isHttp11 = (source: object): source is IncomingMessage =>
  source instanceof IncomingMessage && source.httpVersionMajor === 1 && source.httpVersionMinor >= 1

/**
 * The answer to a request the parser let through but HTTP/1.1 refuses, or
 * undefined; given before routing.
 */
export const refusedRequest = (request: HttpServerRequest.HttpServerRequest): Errors.BadRequest | undefined => {
  if (isHttp11(request.source)) {
    const hosts = request.source.headersDistinct["host"] ?? []
    if (hosts.length !== 1) {
      return new Errors.BadRequest({ message: "An HTTP/1.1 request needs exactly one Host header." })
    }
  }
  const transferEncoding = request.headers["transfer-encoding"]
  if (transferEncoding !== undefined && transferEncoding.trim().toLowerCase() !== "chunked") {
    return new Errors.BadRequest({ message: "Transfer-Encoding other than chunked is not supported." })
  }
  return undefined
}
