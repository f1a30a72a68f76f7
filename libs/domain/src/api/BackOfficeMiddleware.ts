/**
 * What every back-office group shares (docs/back-office.md): the signed-in
 * employee, the session middleware, the 422 transform, the success envelope
 * (`{ success: true, data }`, lists with `meta`) and the access sets of the
 * roles. Groups live in `./backoffice/`; `BackOfficeApi.ts` assembles them.
 */
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as Errors from "../BackOfficeErrors.ts"
import type { SchoolId } from "../Ids.ts"
import { Meta, Page, PerPage } from "../Pagination.ts"
import type { Access } from "../Sessions.ts"
import type { Employee } from "../Staff.ts"

/** The authenticated employee, provided to every handler behind `SessionAuthentication`. */
export class CurrentEmployee extends Context.Service<CurrentEmployee, {
  readonly schoolId: SchoolId
  readonly employee: Employee
  readonly sessionId: number
  readonly expiresAt: string
}>()("school/domain/api/CurrentEmployee") {}

/**
 * The session (docs/decisions.md "Back-office sessions"): the `crm_session`
 * cookie or `Authorization: Session <token>`; an API key never
 * authenticates here (401 UNAUTHENTICATED). A state-changing call
 * authenticated by the cookie must pass the cross-site request forgery check
 * (403 FORBIDDEN). Every call behind it looks the session up, so this is
 * also where they declare 503 SERVICE_UNAVAILABLE with `Retry-After`
 * (docs/decisions.md "Requests and responses": the database is away or over
 * its bounds), as the public API's `Authentication` does.
 */
export class SessionAuthentication extends HttpApiMiddleware.Service<SessionAuthentication, {
  provides: CurrentEmployee
}>()("school/domain/api/SessionAuthentication", {
  error: [Errors.Unauthenticated.envelope, Errors.Forbidden.envelope, Errors.ServiceUnavailable.envelope]
}) {}

/**
 * Request decoding failures become 422 VALIDATION_FAILED with per-field
 * messages. Before an endpoint with a body decodes it, the body passes the
 * public API's check (docs/back-office.md "Answers and errors"): 415 for a
 * body that is not JSON in UTF-8 uncompressed (`bodyRefusals`), 422 for
 * bytes that are not UTF-8 (apps/api/src/BackOfficeAuth.ts).
 */
export class BackOfficeValidation extends HttpApiMiddleware.Service<BackOfficeValidation>()(
  "school/domain/api/BackOfficeValidation",
  { error: Errors.ValidationFailed.envelope }
) {}

/**
 * The roles an endpoint admits (docs/back-office.md "Roles"), as an endpoint
 * annotation: `.annotate(RequiredAccess, FULL_ACCESS)`. An endpoint without
 * one admits nobody.
 */
export const RequiredAccess = Context.Reference<Access>("school/domain/api/RequiredAccess", {
  defaultValue: () => []
})

/**
 * Checks the caller's role against the endpoint's `RequiredAccess` before
 * anything of the request is decoded or done: a refused role gets 403
 * FORBIDDEN whatever it sent, and nothing runs. Every group of the back
 * office but sign-in uses it (after `SessionAuthentication`, which provides
 * the caller).
 */
export class RoleCheck extends HttpApiMiddleware.Service<RoleCheck, {
  requires: CurrentEmployee
}>()("school/domain/api/RoleCheck", {
  error: Errors.Forbidden.envelope
}) {}

/**
 * What an endpoint with a request body can answer before its body is decoded
 * (docs/decisions.md "Requests and responses"): 413 PAYLOAD_TOO_LARGE over
 * the body limit (the server's error envelope, apps/api/src/ErrorEnvelope.ts),
 * 415 UNSUPPORTED_MEDIA_TYPE for a body that is not JSON in UTF-8 or comes
 * compressed (`BackOfficeValidation`'s body check); every endpoint with a
 * `payload` lists them among its errors.
 */
export const bodyRefusals = [Errors.PayloadTooLarge.envelope, Errors.UnsupportedMediaType.envelope] as const

/**
 * The success envelope (docs/back-office.md "Answers and errors"), as the
 * error table's is (libs/domain/src/ErrorTable.ts): a schema transformation.
 * A handler returns the value; its endpoint's success schema encodes it as
 * `{ "success": true, "data": <value> }`, so OpenAPI shows the envelope and
 * `HttpApiClient` decodes it back to the value.
 *
 * The type side is the value's own schema without its `identifier` and
 * `description`: OpenAPI would take them for the response's description
 * and name the envelope after the value (`FilialEncoded`).
 */
const valueOf = <A, I, RD, RE>(schema: Schema.Codec<A, I, RD, RE>) =>
  Schema.toType(schema).annotate({ identifier: undefined, description: undefined })

/** `{ success: true, data }` on the wire; the value `data` in the handler and the client. */
export const ok = <A, I, RD, RE>(data: Schema.Codec<A, I, RD, RE>) =>
  Schema.Struct({ success: Schema.Literal(true), data }).pipe(
    Schema.decodeTo(
      valueOf(data),
      SchemaTransformation.transform({
        decode: (envelope) => envelope.data,
        encode: (value) => ({ success: true as const, data: value })
      })
    )
  )

/**
 * `{ success: true, data: [...], meta }` on the wire; the page `{ data, meta }`
 * in the handler and the client (the public API's list shape). `meta` is a
 * list's `Meta` or says more (the inbox's `unread`).
 */
export const okPage = <A, I, RD, RE, M, MI>(item: Schema.Codec<A, I, RD, RE>, meta: Schema.Codec<M, MI>) => {
  const data = Schema.Array(item)
  return Schema.Struct({ success: Schema.Literal(true), data, meta }).pipe(
    Schema.decodeTo(
      valueOf(Schema.Struct({ data, meta })),
      SchemaTransformation.transform({
        decode: (envelope) => ({ data: envelope.data, meta: envelope.meta }),
        encode: (value) => ({ success: true as const, data: value.data, meta: value.meta })
      })
    )
  )
}

/** `{ success: true, data: [...], meta: { page, per_page, total } }`: a list. */
export const okList = <A, I, RD, RE>(item: Schema.Codec<A, I, RD, RE>) => okPage(item, Meta)

/** 201 `{ success: true, data }`: a POST that created something. */
export const okCreated = <A, I, RD, RE>(data: Schema.Codec<A, I, RD, RE>) => ok(data).pipe(HttpApiSchema.status(201))

/** 202 `{ success: true, data }`: an action that only queued work. */
export const okQueued = <A, I, RD, RE>(data: Schema.Codec<A, I, RD, RE>) => ok(data).pipe(HttpApiSchema.status(202))

/** The query of every list: `page` from 1 (default 1), `per_page` 1..100 (default 20). */
export const pageQuery = {
  page: Schema.optional(Page).annotate({ description: "Page number, from 1 (default 1)" }),
  per_page: Schema.optional(PerPage).annotate({ description: "Items per page, 1..100 (default 20)" })
}
