/**
 * The idempotency middleware of every write (spec 4.1, 4.3 rules 1-2, 7.2;
 * docs/decisions.md "Idempotency"), between the scope check and validation:
 *
 * 1. The Idempotency-Key header: absent is 422 missing_idempotency_key,
 *    malformed is 422 validation_failed; nothing runs.
 * 2. The body is read (413 here stores nothing) before the key is claimed,
 *    so a slow upload holds neither a claim nor a database connection. A
 *    body no operation can read is answered here and stores nothing either,
 *    since nothing ran (docs/decisions.md "Idempotency"): a `Content-Encoding`
 *    other than identity (415, with `Accept-Encoding: identity`), a charset
 *    other than UTF-8 (415), bytes that are not UTF-8 (422 validation_failed).
 * 3. The (school, key, operation) is claimed, the operation being the
 *    method and the MATCHED ROUTE with its parameters (`Idempotency.operationOf`),
 *    never the path as sent; or its stored response is
 *    replayed (`Idempotent-Replayed: true`, byte-identical body), or, while
 *    the first attempt runs, the request waits up to IDEMPOTENCY_WAIT and
 *    then gets 409 idempotency_in_progress.
 * 4. The claim's owner runs validation and the operation in ONE transaction
 *    that also stores the response, so the business rows, their outbox event
 *    and the idempotency record commit together. A 4xx the operation or the
 *    validation produced is stored too (after the rollback, the operation
 *    having written nothing); a 5xx or a defect releases the claim, so a
 *    retry runs again.
 *
 * The first response is built from the very bytes that are stored, so a
 * replay is byte-identical to it.
 */
import { Cause, Data, Effect, Exit, Layer, Result } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { isUtf8 } from "node:buffer"
import { Errors, Idempotency } from "@school/domain"
import { CurrentKey, IdempotentWrite } from "@school/domain/api/Middleware"
import { IdempotencyStore, type KeyScope, type StoredResponse } from "@school/persistence/IdempotencyStore"
import { errorResponse, JSON_CONTENT_TYPE } from "./ErrorResponse.ts"

export const REPLAYED_HEADER = "idempotent-replayed"

/** The operation produced a response that is not ours to store (a plain-text 415, a 5xx): roll back, pass it on. */
class NotStored extends Data.TaggedError("NotStored")<{ readonly response: HttpServerResponse.HttpServerResponse }> {}
/** The claim was taken over while this attempt ran (it ran past the stale limit): roll back. */
class ClaimLost extends Data.TaggedError("ClaimLost")<{}> {}

/** The response to keep: JSON produced by the operation, below 500. */
const toStored = (response: HttpServerResponse.HttpServerResponse): StoredResponse | undefined =>
  response.status < 500 && response.body._tag === "Uint8Array" &&
    response.body.contentType.startsWith("application/json")
    ? { status: response.status, body: response.body.body }
    : undefined

const respond = (stored: StoredResponse, replayed: boolean) =>
  HttpServerResponse.uint8Array(stored.body, {
    status: stored.status,
    contentType: JSON_CONTENT_TYPE,
    ...(replayed ? { headers: { [REPLAYED_HEADER]: "true" } } : {})
  })

const inProgress = () =>
  new Errors.IdempotencyInProgress({
    message: "A request with this Idempotency-Key is still being processed. Repeat it a little later."
  })

/** The charset parameter of a Content-Type, lower-cased and unquoted; undefined without one. */
const charsetOf = (contentType: string | undefined): string | undefined => {
  if (contentType === undefined) return undefined
  for (const parameter of contentType.split(";").slice(1)) {
    const [name, ...value] = parameter.split("=")
    if (name?.trim().toLowerCase() === "charset") return value.join("=").trim().replace(/^"(.*)"$/, "$1").toLowerCase()
  }
  return undefined
}

/** Whether a charset label means UTF-8 (its WHATWG aliases included: `utf8`, `unicode-1-1-utf-8`…). */
const isUtf8Label = (label: string): boolean => {
  try {
    return new TextDecoder(label).encoding === "utf-8"
  } catch {
    return false
  }
}

/**
 * The answer to a body no operation can read, or undefined when the body is
 * readable: it is given before the key is claimed, so it is never stored.
 */
const unreadableBody = (
  headers: Readonly<Record<string, string | undefined>>,
  body: ArrayBuffer
): HttpServerResponse.HttpServerResponse | Errors.ValidationFailed | undefined => {
  const encoding = headers["content-encoding"]?.trim().toLowerCase()
  if (encoding !== undefined && encoding !== "" && encoding !== "identity") {
    return HttpServerResponse.setHeader(
      errorResponse(new Errors.UnsupportedMediaType({
        message: "Content-Encoding is not supported: send the body uncompressed, as application/json in UTF-8."
      })),
      "accept-encoding",
      "identity"
    )
  }
  const charset = charsetOf(headers["content-type"])
  if (charset !== undefined && !isUtf8Label(charset)) {
    return errorResponse(new Errors.UnsupportedMediaType({ message: "Send the body as application/json in UTF-8." }))
  }
  return isUtf8(new Uint8Array(body))
    ? undefined
    : new Errors.ValidationFailed({ message: "The request body is not valid UTF-8." })
}

export const IdempotentWriteLive = Layer.effect(
  IdempotentWrite,
  Effect.gen(function*() {
    const store = yield* IdempotencyStore
    const sql = yield* SqlClient.SqlClient

    /** Runs the operation as the claim's owner and records its outcome. */
    const run = <E, R>(
      scope: KeyScope,
      token: string,
      httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
    ) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(sql.withTransaction(Effect.gen(function*() {
          const response = yield* httpEffect
          const stored = toStored(response)
          if (stored === undefined) return yield* new NotStored({ response })
          if (!(yield* store.complete(scope, token, stored))) return yield* new ClaimLost()
          return stored
        })))
        if (Exit.isSuccess(exit)) return respond(exit.value, false)
        const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        const error: unknown = failure === undefined ? undefined : failure.error
        if (error instanceof ClaimLost) return yield* inProgress()
        const rejected = Errors.isPublicError(error) ? toStored(errorResponse(error)) : undefined
        if (rejected !== undefined) {
          // The operation's own 4xx (validation_failed, group_full, …): stored like a success.
          return (yield* store.complete(scope, token, rejected)) ? respond(rejected, false) : yield* inProgress()
        }
        // Anything else is not the operation's answer: give the key up, so a retry runs again.
        yield* store.release(scope, token)
        if (error instanceof NotStored) return error.response
        // A defect, a failed BEGIN/COMMIT or an undeclared error: 500 (ErrorEnvelope logs it).
        return yield* Effect.die(failure === undefined ? Cause.squash(exit.cause) : error)
      })

    return IdempotentWrite.of((httpEffect) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const { params, route } = yield* HttpRouter.RouteContext
        const { schoolId } = yield* CurrentKey
        const key = Idempotency.validateKey(request.headers["idempotency-key"])
        if (Result.isFailure(key)) return yield* key.failure
        const unreadable = unreadableBody(request.headers, yield* Effect.orDie(request.arrayBuffer))
        if (unreadable instanceof Errors.ValidationFailed) return yield* unreadable
        if (unreadable !== undefined) return unreadable
        const scope: KeyScope = {
          schoolId,
          key: key.success,
          // The router has percent-decoded the parameters; a parameter that is not the canonical
          // spelling of its value (e.g. an id `007`) is refused by validation (422) under its own spelling.
          operation: Idempotency.operationOf(request.method, route.path, params)
        }
        // From the claim on, the outcome is recorded even if the client goes away.
        return yield* Effect.uninterruptible(Effect.gen(function*() {
          const acquired = yield* store.acquire(scope)
          switch (acquired._tag) {
            case "Replay":
              return respond(acquired.response, true)
            case "InProgress":
              return yield* inProgress()
            case "Claimed":
              return yield* run(scope, acquired.token, httpEffect)
          }
        }))
      })
    )
  })
).pipe(Layer.provide(IdempotencyStore.layer))
