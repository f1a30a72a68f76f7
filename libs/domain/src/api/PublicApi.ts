/**
 * The public API contract, `/api/public/v1` (docs/integrators.md): endpoints, their
 * parameters, success shapes and every error each can return, in the public
 * envelope. The server (apps/api) implements it; tests and integrators derive
 * a typed client from it; OpenAPI is generated from it.
 */
import { flow } from "effect/Function"
import * as Schema from "effect/Schema"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as DemoLessons from "../DemoLessons.ts"
import * as Enrollments from "../Enrollments.ts"
import * as Errors from "../Errors.ts"
import * as Idempotency from "../Idempotency.ts"
import { StudentIdFromPath } from "../Ids.ts"
import * as Leads from "../Leads.ts"
import { IsoDate } from "../LessonWindow.ts"
import * as Models from "../Models.ts"
import { ListMeta, Page, pageWithCursorRule, PerPage, StartingAfter } from "../Pagination.ts"
import { IsoInstant } from "../Timestamps.ts"
import { Authentication, readStack, writeStack } from "./Middleware.ts"
import { allowUnknownBodyFields } from "./openapi/Bodies.ts"
import { adjustDocument, adjustOperation } from "./openapi/Document.ts"
import { documentUnauthorizedReasons, documentUnexpectedErrors } from "./openapi/Errors.ts"
import { documentExamples } from "./openapi/Examples.ts"
import { documentIdempotencyKey, documentRequestId } from "./openapi/Headers.ts"
import { documentParameters } from "./openapi/Parameters.ts"
import { lowerCaseHttpSchemes } from "./openapi/Security.ts"
import { SERVERS } from "./openapi/Servers.ts"
import { documentWebhooks } from "./openapi/Webhooks.ts"

export const BASE_PATH = "/api/public/v1"

const list = <S extends Schema.Top>(item: S) => Schema.Struct({ data: Schema.Array(item), meta: ListMeta })
const single = <S extends Schema.Top>(item: S) => Schema.Struct({ data: item })
const created = <S extends Schema.Top>(item: S) => single(item).pipe(HttpApiSchema.status(201))

const pagination = {
  page: Schema.optional(Page).annotate({ description: "Page number, from 1 (default 1). Not above 1 together with starting_after" }),
  per_page: Schema.optional(PerPage).annotate({ description: "Items per page, 1..100 (default 20)" }),
  starting_after: Schema.optional(StartingAfter).annotate({
    description:
      "Cursor mode: the items with an id above this one, in id order (0: from the first). The cost of a page does not grow with its position; meta then holds per_page, starting_after, has_more and next_starting_after (the next page's cursor, null on the last page), and no total"
  })
}

/** A list's query (its fields spread `pagination`), with the rule across the pagination parameters (`pageWithCursorRule`). */
const listQuery = <F extends Schema.Struct.Fields>(fields: F) => Schema.Struct(fields).check(pageWithCursorRule)

const updatedSince = Schema.optional(IsoInstant).annotate({
  description:
    "Only records whose last-modified time is at or after this ISO 8601 instant with offset. Percent-encode '+' in URLs."
})

/** The headers of every write: the Idempotency-Key (docs/integrators.md "Writing"). */
const writeHeaders = { "idempotency-key": Idempotency.IdempotencyKey }

export class StudentsGroup extends readStack(
  HttpApiGroup.make("students").add(
    HttpApiEndpoint.get("list", "/students", {
      query: listQuery({ ...pagination, updated_since: updatedSince }),
      success: list(Models.StudentListItem)
    }).annotate(OpenApi.Summary, "List students"),
    HttpApiEndpoint.get("get", "/students/:id", {
      params: { id: StudentIdFromPath },
      success: single(Models.StudentCard),
      error: Errors.NotFound.envelope
    }).annotate(OpenApi.Summary, "Get a student with their active groups")
  )
) {}

export class PaymentsGroup extends readStack(
  HttpApiGroup.make("payments").add(
    HttpApiEndpoint.get("list", "/payments", {
      query: listQuery({ ...pagination, updated_since: updatedSince }),
      success: list(Models.Payment)
    }).annotate(OpenApi.Summary, "List payments (amounts in whole kopecks)")
  )
) {}

export class GroupsGroup extends readStack(
  HttpApiGroup.make("groups").add(
    HttpApiEndpoint.get("list", "/groups", {
      query: listQuery(pagination),
      success: list(Models.Group)
    }).annotate(OpenApi.Summary, "List groups with capacity and free places")
  )
) {}

export class LessonsGroup extends readStack(
  HttpApiGroup.make("lessons").add(
    HttpApiEndpoint.get("list", "/lessons", {
      query: listQuery({
        from: IsoDate.annotate({ description: "First day (YYYY-MM-DD, inclusive, UTC)" }),
        to: IsoDate.annotate({ description: "Last day (YYYY-MM-DD, inclusive, UTC); at most 92 days after from" }),
        ...pagination
      }),
      success: list(Models.Lesson),
      error: [Errors.InvalidWindow.envelope, Errors.WindowTooLarge.envelope]
    }).annotate(OpenApi.Summary, "List lessons starting in a window of days")
  )
) {}

export class ReferenceGroup extends readStack(
  HttpApiGroup.make("reference").add(
    HttpApiEndpoint.get("filials", "/filials", { query: listQuery(pagination), success: list(Models.Filial) })
      .annotate(OpenApi.Summary, "List filials (branches)"),
    HttpApiEndpoint.get("subjects", "/subjects", { query: listQuery(pagination), success: list(Models.Subject) })
      .annotate(OpenApi.Summary, "List subjects"),
    HttpApiEndpoint.get("programs", "/programs", { query: listQuery(pagination), success: list(Models.Program) })
      .annotate(OpenApi.Summary, "List programs"),
    HttpApiEndpoint.get("levels", "/levels", { query: listQuery(pagination), success: list(Models.Level) })
      .annotate(OpenApi.Summary, "List levels")
  )
) {}

export class LeadsGroup extends writeStack(
  HttpApiGroup.make("leads").add(
    HttpApiEndpoint.post("create", "/leads", {
      headers: writeHeaders,
      payload: Leads.CreateLeadRequest,
      success: created(Leads.Lead),
      error: Errors.FunnelNotFound.envelope
    }).annotate(OpenApi.Summary, "Create a lead (emits lead.created)")
      .annotate(OpenApi.Transform, adjustOperation(documentIdempotencyKey))
  )
) {}

export class DemoLessonsGroup extends writeStack(
  HttpApiGroup.make("demoLessons").add(
    HttpApiEndpoint.post("create", "/demo-lessons", {
      headers: writeHeaders,
      payload: DemoLessons.CreateDemoLessonRequest,
      success: created(DemoLessons.DemoLesson),
      error: [Errors.GroupNotFound.envelope, Errors.GroupFull.envelope]
    }).annotate(OpenApi.Summary, "Book a demo (trial) lesson for a student or a lead")
      .annotate(OpenApi.Transform, adjustOperation(documentIdempotencyKey))
  )
) {}

export class EnrollmentsGroup extends writeStack(
  HttpApiGroup.make("enrollments").add(
    HttpApiEndpoint.post("create", "/students/:id/groups", {
      params: { id: StudentIdFromPath },
      headers: writeHeaders,
      payload: Enrollments.CreateEnrollmentRequest,
      success: created(Enrollments.Enrollment),
      error: [
        Errors.StudentNotFound.envelope,
        Errors.GroupNotFound.envelope,
        Errors.GroupFull.envelope,
        Errors.AlreadyEnrolled.envelope
      ]
    }).annotate(OpenApi.Summary, "Enroll a student into a group (emits group.enrolled)")
      .annotate(OpenApi.Transform, adjustOperation(documentIdempotencyKey))
  )
) {}

/**
 * The school's active enrollments in one list (docs/decisions.md "Enrollments
 * in bulk"): a sync reads who is in which group 100 at a time, not one card
 * per student. A group of its own, as the write beside it needs write scope.
 */
export class EnrollmentListGroup extends readStack(
  HttpApiGroup.make("enrollmentList").add(
    HttpApiEndpoint.get("list", "/enrollments", {
      query: listQuery(pagination),
      success: list(Enrollments.Enrollment)
    }).annotate(OpenApi.Summary, "List the school's active enrollments (who is in which group)")
  )
) {}

/** The contract's routes, read by the document's `documentParameters`. */
const routes = HttpApi.make("public-v1")
  .add(StudentsGroup)
  .add(PaymentsGroup)
  .add(GroupsGroup)
  .add(LessonsGroup)
  .add(ReferenceGroup)
  .add(EnrollmentListGroup)
  .add(LeadsGroup)
  .add(DemoLessonsGroup)
  .add(EnrollmentsGroup)
  .middleware(Authentication)
  .prefix(BASE_PATH)

export class PublicApi extends routes
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotateMerge(OpenApi.annotations({
    title: "School Management Service: Public API",
    version: "1",
    description:
      "Read and write a school's data. Every request carries `Authorization: Bearer svc_<prefix>_<secret>`. " +
      "Errors use the envelope `{ error: { code, message, fields? } }`.",
    servers: SERVERS,
    // What the document says beyond what HttpApi derives, in the order applied (./openapi/).
    transform: adjustDocument(flow(
      allowUnknownBodyFields,
      lowerCaseHttpSchemes,
      documentParameters(routes),
      documentUnauthorizedReasons,
      documentUnexpectedErrors({ internalError: Errors.InternalError, methodNotAllowed: Errors.MethodNotAllowed }),
      documentRequestId,
      documentExamples,
      documentWebhooks
    ))
  }))
{}
