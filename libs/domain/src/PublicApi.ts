/**
 * The public API contract, `/api/public/v1` (spec part 4): endpoints, their
 * parameters, success shapes and every error each can return, in the public
 * envelope. The server (apps/api) implements it; tests and integrators derive
 * a typed client from it; OpenAPI is generated from it.
 */
import { Context, Predicate, Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "effect/http-api"
import * as DemoLessons from "./DemoLessons.ts"
import * as Enrollments from "./Enrollments.ts"
import { Envelopes } from "./Errors.ts"
import * as Idempotency from "./Idempotency.ts"
import * as Leads from "./Leads.ts"
import { IsoDate } from "./LessonWindow.ts"
import * as Models from "./Models.ts"
import { Meta, Page, PerPage } from "./Pagination.ts"
import { IsoInstant } from "./Timestamps.ts"

export const BASE_PATH = "/api/public/v1"

export const Scope = Schema.Literals(["read", "write"])
export type Scope = typeof Scope.Type

/** The authenticated caller, provided to every handler by `Authentication`. */
export class CurrentKey extends Context.Service<CurrentKey, {
  readonly keyId: number
  readonly schoolId: number
  readonly scope: Scope
  readonly plan: string | null
}>()("school/domain/PublicApi/CurrentKey") {}

/**
 * Bearer-key authentication (spec 5.1) and the per-key rate limit (spec 8):
 * 401 unauthorized with fields.reason, 429 rate_limit_exceeded.
 */
export class Authentication extends HttpApiMiddleware.Service<Authentication, {
  provides: CurrentKey
}>()("school/domain/PublicApi/Authentication", {
  security: { bearer: HttpApiSecurity.bearer },
  error: [Envelopes.Unauthorized, Envelopes.RateLimitExceeded]
}) {}

/** Write endpoints need a key with write scope: 403 insufficient_scope. */
export class RequireWriteScope extends HttpApiMiddleware.Service<RequireWriteScope, {
  requires: CurrentKey
}>()("school/domain/PublicApi/RequireWriteScope", {
  error: Envelopes.InsufficientScope
}) {}

/**
 * Every write (spec 4.1, 4.3 rules 1-2; DECISIONS "Idempotency"): the
 * Idempotency-Key header is required (422 missing_idempotency_key) and well
 * formed (422 validation_failed); a repeat replays the stored response or,
 * while the first is still running, waits and then answers 409
 * idempotency_in_progress.
 */
export class IdempotentWrite extends HttpApiMiddleware.Service<IdempotentWrite, {
  requires: CurrentKey
}>()("school/domain/PublicApi/IdempotentWrite", {
  error: [Envelopes.MissingIdempotencyKey, Envelopes.ValidationFailed, Envelopes.IdempotencyInProgress]
}) {}

/** Turns request decoding failures into 422 validation_failed with per-field messages. */
export class RequestValidation extends HttpApiMiddleware.Service<RequestValidation>()(
  "school/domain/PublicApi/RequestValidation",
  { error: Envelopes.ValidationFailed }
) {}

const list = <S extends Schema.Top>(item: S) => Schema.Struct({ data: Schema.Array(item), meta: Meta })
const single = <S extends Schema.Top>(item: S) => Schema.Struct({ data: item })

const pagination = {
  page: Schema.optional(Page).annotate({ description: "Page number, from 1 (default 1)" }),
  per_page: Schema.optional(PerPage).annotate({ description: "Items per page, 1..100 (default 20)" })
}

const updatedSince = Schema.optional(IsoInstant).annotate({
  description:
    "Only records whose last-modified time is at or after this ISO 8601 instant with offset. Percent-encode '+' in URLs."
})

const PathId = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2_147_483_647 }))

export class StudentsGroup extends HttpApiGroup.make("students")
  .add(
    HttpApiEndpoint.get("list", "/students", {
      query: { ...pagination, updated_since: updatedSince },
      success: list(Models.StudentListItem)
    }).annotate(OpenApi.Summary, "List students"),
    HttpApiEndpoint.get("get", "/students/:id", {
      params: { id: PathId },
      success: single(Models.StudentCard),
      error: Envelopes.NotFound
    }).annotate(OpenApi.Summary, "Get a student with their active groups")
  )
{}

export class PaymentsGroup extends HttpApiGroup.make("payments").add(
  HttpApiEndpoint.get("list", "/payments", {
    query: { ...pagination, updated_since: updatedSince },
    success: list(Models.Payment)
  }).annotate(OpenApi.Summary, "List payments (amounts in whole kopecks)")
) {}

export class GroupsGroup extends HttpApiGroup.make("groups").add(
  HttpApiEndpoint.get("list", "/groups", {
    query: pagination,
    success: list(Models.Group)
  }).annotate(OpenApi.Summary, "List groups with capacity and free places")
) {}

export class LessonsGroup extends HttpApiGroup.make("lessons").add(
  HttpApiEndpoint.get("list", "/lessons", {
    query: {
      from: IsoDate.annotate({ description: "First day (YYYY-MM-DD, inclusive, UTC)" }),
      to: IsoDate.annotate({ description: "Last day (YYYY-MM-DD, inclusive, UTC); at most 92 days after from" }),
      ...pagination
    },
    success: list(Models.Lesson),
    error: [Envelopes.InvalidWindow, Envelopes.WindowTooLarge]
  }).annotate(OpenApi.Summary, "List lessons starting in a window of days")
) {}

export class ReferenceGroup extends HttpApiGroup.make("reference").add(
  HttpApiEndpoint.get("filials", "/filials", { query: pagination, success: list(Models.Filial) }),
  HttpApiEndpoint.get("subjects", "/subjects", { query: pagination, success: list(Models.Subject) }),
  HttpApiEndpoint.get("programs", "/programs", { query: pagination, success: list(Models.Program) }),
  HttpApiEndpoint.get("levels", "/levels", { query: pagination, success: list(Models.Level) })
) {}

/** The headers of every write: the Idempotency-Key (spec 4.1). */
const writeHeaders = { "idempotency-key": Idempotency.IdempotencyKey }

/** OpenAPI shows the header as the specification spells it, with its rule. */
const documentIdempotencyKey = (operation: Record<string, unknown>): Record<string, unknown> => ({
  ...operation,
  parameters: (Array.isArray(operation["parameters"]) ? operation["parameters"] : []).map((parameter: unknown) =>
    Predicate.isObject(parameter) && parameter["in"] === "header" && parameter["name"] === "idempotency-key"
      ? {
        ...parameter,
        name: Idempotency.HEADER,
        description: Idempotency.KEY_DESCRIPTION,
        schema: { type: "string", minLength: 1, maxLength: Idempotency.MAX_KEY_LENGTH, pattern: "^[\\x20-\\x7E]+$" }
      }
      : parameter
  )
})
const created = <S extends Schema.Top>(item: S) => single(item).pipe(HttpApiSchema.status(201))

/*
 * A write group's middleware is listed innermost first, so a request meets it
 * in the order ARCHITECTURE gives: authenticate and rate limit (from the API)
 * → scope → idempotency → validate → the operation.
 */

export class LeadsGroup extends HttpApiGroup.make("leads")
  .add(
    HttpApiEndpoint.post("create", "/leads", {
      headers: writeHeaders,
      payload: Leads.CreateLeadRequest,
      success: created(Leads.Lead),
      error: Envelopes.FunnelNotFound
    }).annotate(OpenApi.Summary, "Create a lead (emits lead.created)")
      .annotate(OpenApi.Transform, documentIdempotencyKey)
  )
  .middleware(RequestValidation)
  .middleware(IdempotentWrite)
  .middleware(RequireWriteScope)
{}

export class DemoLessonsGroup extends HttpApiGroup.make("demoLessons")
  .add(
    HttpApiEndpoint.post("create", "/demo-lessons", {
      headers: writeHeaders,
      payload: DemoLessons.CreateDemoLessonRequest,
      success: created(DemoLessons.DemoLesson),
      error: [Envelopes.GroupNotFound, Envelopes.GroupFull]
    }).annotate(OpenApi.Summary, "Book a demo (trial) lesson for a student or a lead")
      .annotate(OpenApi.Transform, documentIdempotencyKey)
  )
  .middleware(RequestValidation)
  .middleware(IdempotentWrite)
  .middleware(RequireWriteScope)
{}

export class EnrollmentsGroup extends HttpApiGroup.make("enrollments")
  .add(
    HttpApiEndpoint.post("create", "/students/:id/groups", {
      params: { id: PathId },
      headers: writeHeaders,
      payload: Enrollments.CreateEnrollmentRequest,
      success: created(Enrollments.Enrollment),
      error: [Envelopes.StudentNotFound, Envelopes.GroupNotFound, Envelopes.GroupFull, Envelopes.AlreadyEnrolled]
    }).annotate(OpenApi.Summary, "Enroll a student into a group (emits group.enrolled)")
      .annotate(OpenApi.Transform, documentIdempotencyKey)
  )
  .middleware(RequestValidation)
  .middleware(IdempotentWrite)
  .middleware(RequireWriteScope)
{}

/**
 * Unknown fields in a request body are ignored (DECISIONS "Requests and
 * responses"), so request-body schemas must not claim
 * `additionalProperties: false` in the OpenAPI document.
 */
const allowUnknownBodyFields = (spec: Record<string, any>): Record<string, any> => {
  const open = (schema: Record<string, any> | undefined) => {
    if (schema === undefined) return
    const ref: unknown = schema["$ref"]
    const target = typeof ref === "string" ? spec["components"]?.["schemas"]?.[ref.split("/").pop() ?? ""] : schema
    if (target !== undefined && target["additionalProperties"] === false) delete target["additionalProperties"]
  }
  for (const operations of Object.values<Record<string, any>>(spec["paths"] ?? {})) {
    for (const operation of Object.values<Record<string, any>>(operations)) {
      for (const media of Object.values<Record<string, any>>(operation?.["requestBody"]?.["content"] ?? {})) {
        open(media["schema"])
      }
    }
  }
  return spec
}

/** spec 8: every 429 carries `Retry-After`, whole seconds to wait before repeating the same request. */
const documentRetryAfter = (spec: Record<string, any>): Record<string, any> => {
  for (const operations of Object.values<Record<string, any>>(spec["paths"] ?? {})) {
    for (const operation of Object.values<Record<string, any>>(operations)) {
      const tooMany = operation?.["responses"]?.["429"]
      if (tooMany !== undefined) {
        tooMany["headers"] = {
          "Retry-After": {
            description: "Whole seconds (at least 1) to wait before repeating the same request.",
            required: true,
            schema: { type: "integer", minimum: 1 }
          }
        }
      }
    }
  }
  return spec
}

export class PublicApi extends HttpApi.make("public-v1")
  .add(StudentsGroup)
  .add(PaymentsGroup)
  .add(GroupsGroup)
  .add(LessonsGroup)
  .add(ReferenceGroup)
  .add(LeadsGroup)
  .add(DemoLessonsGroup)
  .add(EnrollmentsGroup)
  .middleware(RequestValidation)
  .middleware(Authentication)
  .prefix(BASE_PATH)
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotateMerge(OpenApi.annotations({
    title: "School Management Service: Public API",
    version: "1",
    description:
      "Read and write a school's data. Every request carries `Authorization: Bearer svc_<prefix>_<secret>`. " +
      "Errors use the envelope `{ error: { code, message, fields? } }`.",
    transform: (spec) => documentRetryAfter(allowUnknownBodyFields(spec))
  }))
{}
