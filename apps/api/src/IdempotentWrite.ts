/**
 * The idempotency middleware of every write (docs/integrators.md "Writing";
 * docs/decisions.md "Idempotency"), between the scope check and validation:
 *
 * 1. The Idempotency-Key header: absent is 422 missing_idempotency_key,
 *    malformed is 422 validation_failed; nothing runs.
 * 2. The body is read (413 here stores nothing) before the key is claimed,
 *    so a slow upload holds neither a claim nor a database connection. A
 *    body no operation can read (`RequestBody.readableBody`: a
 *    `Content-Encoding`, a missing or non-JSON Content-Type, a charset other
 *    than UTF-8: 415; bytes that are not UTF-8: 422 validation_failed) is
 *    answered here and stores nothing either, since nothing ran
 *    (docs/decisions.md "Idempotency").
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
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Errors, Idempotency } from "@school/domain"
import { CurrentKey, IdempotentWrite } from "@school/domain/api/Middleware"
import { type Attempt, IdempotencyStore, type KeyScope, type StoredResponse } from "@school/persistence/IdempotencyStore"
import * as SettingKinds from "@school/runtime/SettingKinds"
import { errorResponse, JSON_CONTENT_TYPE } from "./ErrorResponse.ts"
import * as Metrics from "./Metrics.ts"
import { readableBody } from "./RequestBody.ts"

export const REPLAYED_HEADER = Idempotency.REPLAYED_HEADER.toLowerCase()

/**
 * `IDEMPOTENCY_WAIT` (docs/operations.md "Settings"): how long a repeated
 * write waits for the first one with its key before 409 idempotency_in_progress.
 */
export const IDEMPOTENCY_WAIT = SettingKinds.make("IDEMPOTENCY_WAIT", SettingKinds.duration, Idempotency.DEFAULT_WAIT)

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

/** 409 idempotency_in_progress, counted in /metrics (docs/operations.md "Metrics"). */
const inProgress = () =>
  Effect.andThen(
    Metrics.idempotencyInProgress,
    Effect.fail(
      new Errors.IdempotencyInProgress({
        message: "A request with this Idempotency-Key is still being processed. Repeat it a little later."
      })
    )
  )

export const IdempotentWriteLive = Layer.effect(
  IdempotentWrite,
  Effect.gen(function*() {
    const store = yield* IdempotencyStore
    const wait = yield* IDEMPOTENCY_WAIT

    /** Runs the operation as the claim's owner and records its outcome. */
    const run = <E, R>(attempt: Attempt, httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(attempt.transaction(Effect.gen(function*() {
          const response = yield* httpEffect
          const stored = toStored(response)
          if (stored === undefined) return yield* new NotStored({ response })
          if (!(yield* attempt.complete(stored))) return yield* new ClaimLost()
          return stored
        })))
        if (Exit.isSuccess(exit)) return respond(exit.value, false)
        const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        const error: unknown = failure === undefined ? undefined : failure.error
        if (error instanceof ClaimLost) return yield* inProgress()
        const rejected = Errors.isPublicError(error) ? toStored(errorResponse(error)) : undefined
        if (rejected !== undefined) {
          // The operation's own 4xx (validation_failed, group_full, …): stored like a success.
          return (yield* attempt.complete(rejected)) ? respond(rejected, false) : yield* inProgress()
        }
        // Anything else is not the operation's answer: give the key up, so a retry runs again.
        // (Should the database be away, the release cannot reach it either; the key is still
        // free at once, because the attempt's session, whose lock marks the claim live, is gone.)
        yield* attempt.release
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
        const unreadable = yield* readableBody
        if (unreadable !== undefined) return unreadable
        const scope: KeyScope = {
          schoolId,
          key: key.success,
          // The router has percent-decoded the parameters; a parameter that is not the canonical
          // spelling of its value (e.g. an id `007`) is refused by validation (422) under its own spelling.
          operation: Idempotency.operationOf(request.method, route.path, params)
        }
        // From the claim on, the outcome is recorded even if the client goes away. The scope
        // holds the attempt's database connection, whose session is the claim's owner.
        return yield* Effect.uninterruptible(Effect.scoped(Effect.gen(function*() {
          const acquired = yield* store.acquire(scope, wait)
          switch (acquired._tag) {
            case "Replay":
              yield* Metrics.idempotentReplayed
              return respond(acquired.response, true)
            case "InProgress":
              return yield* inProgress()
            case "Claimed":
              return yield* run(acquired.attempt, httpEffect)
          }
        })))
      })
    )
  })
).pipe(Layer.provide(IdempotencyStore.layer))
