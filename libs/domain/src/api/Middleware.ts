/**
 * The public API's middleware as the contract declares it: what each one
 * provides, requires and can answer, and the two stacks every group uses.
 * apps/api implements them; a client derives their errors from here.
 *
 * A request meets them in this order (docs/development.md "The request
 * path"): authenticate and rate limit (401, 429) → scope (403) →
 * idempotency (422 missing_idempotency_key, replay, 409) → request
 * validation (422 validation_failed) → the operation.
 */
import * as Context from "effect/Context"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import type { Scope } from "../ApiKey.ts"
import * as Errors from "../Errors.ts"
import type { ApiKeyId, SchoolId } from "../Ids.ts"
import type { Plan } from "../Plans.ts"

/** The authenticated caller, provided to every handler by `Authentication`. */
export class CurrentKey extends Context.Service<CurrentKey, {
  readonly keyId: ApiKeyId
  readonly schoolId: SchoolId
  readonly scope: Scope
  readonly plan: Plan | null
}>()("school/domain/api/CurrentKey") {}

/**
 * Bearer-key authentication (docs/integrators.md "Authentication") and the
 * per-key rate limit (docs/integrators.md "Limits"),
 * in one round trip: 401 unauthorized with fields.reason, 429
 * rate_limit_exceeded with `Retry-After`. Every operation passes here and
 * needs the database, so this is also where every operation declares 503
 * service_unavailable with `Retry-After` (docs/decisions.md "Requests and
 * responses": the database is away or over its bounds).
 */
export class Authentication extends HttpApiMiddleware.Service<Authentication, {
  provides: CurrentKey
}>()("school/domain/api/Authentication", {
  security: { bearer: HttpApiSecurity.bearer },
  error: [Errors.Unauthorized.envelope, Errors.RateLimitExceeded.envelope, Errors.ServiceUnavailable.envelope]
}) {}

/** Write endpoints need a key with write scope: 403 insufficient_scope. */
export class RequireWriteScope extends HttpApiMiddleware.Service<RequireWriteScope, {
  requires: CurrentKey
}>()("school/domain/api/RequireWriteScope", {
  error: Errors.InsufficientScope.envelope
}) {}

/**
 * Every write (docs/integrators.md "Writing"; docs/decisions.md "Idempotency"):
 * the Idempotency-Key header is required (422 missing_idempotency_key) and
 * well formed (422 validation_failed); a repeat replays the stored response
 * or, while the first is still running, waits and then answers 409
 * idempotency_in_progress. Before the key is claimed, the body is read and
 * checked (docs/decisions.md "Requests and responses"): 413
 * payload_too_large, 415 unsupported_media_type (not JSON in UTF-8,
 * compressed), 422 validation_failed (bytes that are not UTF-8).
 */
export class IdempotentWrite extends HttpApiMiddleware.Service<IdempotentWrite, {
  requires: CurrentKey
}>()("school/domain/api/IdempotentWrite", {
  error: [
    Errors.MissingIdempotencyKey.envelope,
    Errors.ValidationFailed.envelope,
    Errors.IdempotencyInProgress.envelope,
    Errors.PayloadTooLarge.envelope,
    Errors.UnsupportedMediaType.envelope
  ]
}) {}

/** Turns request decoding failures into 422 validation_failed with per-field messages (docs/integrators.md "Responses and errors"). */
export class RequestValidation extends HttpApiMiddleware.Service<RequestValidation>()(
  "school/domain/api/RequestValidation",
  { error: Errors.ValidationFailed.envelope }
) {}

/*
 * The stacks. A group's middleware is listed innermost first, and the API
 * adds `Authentication` outside every group.
 */

/**
 * Every group: request validation, innermost, so that on a write its 422 is
 * the operation's answer (stored for the Idempotency-Key like any other).
 */
export const readStack = <Id extends string, Endpoints extends HttpApiEndpoint.Constraint>(
  group: HttpApiGroup.HttpApiGroup<Id, Endpoints>
) => group.middleware(RequestValidation)

/** Every write group: scope, then idempotency, then request validation. */
export const writeStack = <Id extends string, Endpoints extends HttpApiEndpoint.Constraint>(
  group: HttpApiGroup.HttpApiGroup<Id, Endpoints>
) => readStack(group).middleware(IdempotentWrite).middleware(RequireWriteScope)
