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
import { documentListFields, documentUnauthorizedReasons, documentUnexpectedErrors } from "./openapi/Errors.ts"
import { documentExamples } from "./openapi/Examples.ts"
import { documentIdempotencyKey, documentRequestId } from "./openapi/Headers.ts"
import { documentContact, LICENSE } from "./openapi/Info.ts"
import { documentLimits, PUBLIC_LIMITS } from "./openapi/Limits.ts"
import { nameComponents } from "./openapi/Names.ts"
import { documentParameters } from "./openapi/Parameters.ts"
import { lowerCaseHttpSchemes } from "./openapi/Security.ts"
import { SERVERS } from "./openapi/Servers.ts"
import { mergeTags } from "./openapi/Tags.ts"
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
  HttpApiGroup.make("students")
    .annotate(OpenApi.Description, "Students: the list and the card with active groups (docs/integrators.md \"Reading\").").add(
    HttpApiEndpoint.get("list", "/students", {
      query: listQuery({ ...pagination, updated_since: updatedSince }),
      success: list(Models.StudentListItem)
    }).annotate(OpenApi.Summary, "List students")
      .annotate(OpenApi.Description, "The school's students by ascending id, paged (docs/integrators.md \"Lists and pagination\"). List items have `active_groups: null`; `updated_since` keeps the students modified at or after an instant, for an incremental sync. A bad parameter is 422 `validation_failed`."),
    HttpApiEndpoint.get("get", "/students/:id", {
      params: { id: StudentIdFromPath },
      success: single(Models.StudentCard),
      error: Errors.NotFound.envelope
    }).annotate(OpenApi.Summary, "Get a student with their active groups")
      .annotate(OpenApi.Description, "The student's card with `active_groups`: the student's active enrollments (`[]` if none). Another school's student, or an id that is no student, is 404 `not_found`; an id outside 1..2147483647 is 422 `validation_failed`.")
  )
) {}

export class PaymentsGroup extends readStack(
  HttpApiGroup.make("payments")
    .annotate(OpenApi.Description, "Payments, in whole kopecks (docs/integrators.md \"Reading\").").add(
    HttpApiEndpoint.get("list", "/payments", {
      query: listQuery({ ...pagination, updated_since: updatedSince }),
      success: list(Models.Payment)
    }).annotate(OpenApi.Summary, "List payments (amounts in whole kopecks)")
      .annotate(OpenApi.Description, "The school's payments by ascending id, paged. `amount_kopecks` is money in whole kopecks; `payment_type` is one of `cash`, `card`, `transfer`, `online`; a payment without a group has `group_id: null`. `updated_since` keeps the payments modified at or after an instant.")
  )
) {}

export class GroupsGroup extends readStack(
  HttpApiGroup.make("groups")
    .annotate(OpenApi.Description, "Groups with capacity and free places (docs/integrators.md \"Reading\").").add(
    HttpApiEndpoint.get("list", "/groups", {
      query: listQuery(pagination),
      success: list(Models.Group)
    }).annotate(OpenApi.Summary, "List groups with capacity and free places")
      .annotate(OpenApi.Description, "The school's groups by ascending id, paged, each with `capacity`, `enrolled_count` and `free_places`.")
  )
) {}

export class LessonsGroup extends readStack(
  HttpApiGroup.make("lessons")
    .annotate(OpenApi.Description, "Lessons in a window of at most 92 days (docs/integrators.md \"Reading\").").add(
    HttpApiEndpoint.get("list", "/lessons", {
      query: listQuery({
        from: IsoDate.annotate({ description: "First day (YYYY-MM-DD, inclusive, UTC)" }),
        to: IsoDate.annotate({ description: "Last day (YYYY-MM-DD, inclusive, UTC); at most 92 days after from" }),
        ...pagination
      }),
      success: list(Models.Lesson),
      error: [Errors.InvalidWindow.envelope, Errors.WindowTooLarge.envelope]
    }).annotate(OpenApi.Summary, "List lessons starting in a window of days")
      .annotate(OpenApi.Description, "The lessons whose start falls between `from` and `to` (both required, inclusive, compared on the lesson's start in UTC), paged. `to` before `from` is 422 `invalid_window`; more than 92 days apart is 422 `window_too_large`.")
  )
) {}

export class ReferenceGroup extends readStack(
  HttpApiGroup.make("reference")
    .annotate(OpenApi.Description, "Reference data: filials, subjects, programs, levels (docs/integrators.md \"Reading\").").add(
    HttpApiEndpoint.get("filials", "/filials", { query: listQuery(pagination), success: list(Models.Filial) })
      .annotate(OpenApi.Summary, "List filials (branches)")
      .annotate(OpenApi.Description, "Reference data: the school's filials (branches) by ascending id, paged."),
    HttpApiEndpoint.get("subjects", "/subjects", { query: listQuery(pagination), success: list(Models.Subject) })
      .annotate(OpenApi.Summary, "List subjects")
      .annotate(OpenApi.Description, "Reference data: the school's subjects by ascending id, paged."),
    HttpApiEndpoint.get("programs", "/programs", { query: listQuery(pagination), success: list(Models.Program) })
      .annotate(OpenApi.Summary, "List programs")
      .annotate(OpenApi.Description, "Reference data: the school's programs by ascending id, paged."),
    HttpApiEndpoint.get("levels", "/levels", { query: listQuery(pagination), success: list(Models.Level) })
      .annotate(OpenApi.Summary, "List levels")
      .annotate(OpenApi.Description, "Reference data: the school's levels by ascending id, paged.")
  )
) {}

export class LeadsGroup extends writeStack(
  HttpApiGroup.make("leads")
    .annotate(OpenApi.Description, "Leads: create one, placed in its funnel's first status (docs/integrators.md \"Writing\").").add(
    HttpApiEndpoint.post("create", "/leads", {
      headers: writeHeaders,
      payload: Leads.CreateLeadRequest,
      success: created(Leads.Lead),
      error: Errors.FunnelNotFound.envelope
    }).annotate(OpenApi.Summary, "Create a lead (emits lead.created)")
      .annotate(OpenApi.Description, "Creates a lead in its funnel's first status (`funnel_id` omitted or 0: the main funnel) and sends `lead.created` to the school's webhooks. `phone` is required (5 to 20 digits, with `+ - ( )` and spaces allowed); `name` at most 255 characters, `comment` at most 4000, `source` at most 64 (default `api`), counted after trimming. Needs a `write` key (403 `insufficient_scope`) and an `Idempotency-Key` (422 `missing_idempotency_key` without one): a repeat with the same key within 24 hours replays the first answer with `Idempotent-Replayed: true`. A funnel that is not the school's is 422 `funnel_not_found`.")
      .annotate(OpenApi.Transform, adjustOperation(documentIdempotencyKey))
  )
) {}

export class DemoLessonsGroup extends writeStack(
  HttpApiGroup.make("demoLessons")
    .annotate(OpenApi.Description, "Demo (trial) lessons for a student or a lead (docs/integrators.md \"Writing\").").add(
    HttpApiEndpoint.post("create", "/demo-lessons", {
      headers: writeHeaders,
      payload: DemoLessons.CreateDemoLessonRequest,
      success: created(DemoLessons.DemoLesson),
      error: [Errors.GroupNotFound.envelope, Errors.GroupFull.envelope]
    }).annotate(OpenApi.Summary, "Book a demo (trial) lesson for a student or a lead")
      .annotate(OpenApi.Description, "Books a trial lesson in a group for exactly one of `user_id` (a student) or `lead_id` (a lead); neither or both is 422 `validation_failed`, as is an id that is not a student or lead of the school. The group needs a free place (409 `group_full`) but the demo does not take it; a group that is not the school's is 422 `group_not_found`. `comment` at most 4000 characters. Needs a `write` key and an `Idempotency-Key`; a repeat with the same key replays the first answer.")
      .annotate(OpenApi.Transform, adjustOperation(documentIdempotencyKey))
  )
) {}

export class EnrollmentsGroup extends writeStack(
  HttpApiGroup.make("enrollments")
    .annotate(OpenApi.Description, "Enrollments: who is in which group, and enrolling a student (docs/integrators.md \"Writing\", \"Keeping a copy in sync\").").add(
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
      .annotate(OpenApi.Description, "Enrolls the student into the group, taking a free place, and sends `group.enrolled` to the school's webhooks; the answer's `id` is the enrollment. Refusals: 422 `student_not_found` or `group_not_found` (not the school's), 409 `group_full` or `already_enrolled`. Needs a `write` key and an `Idempotency-Key`; a repeat with the same key replays the first answer.")
      .annotate(OpenApi.Transform, adjustOperation(documentIdempotencyKey))
  )
) {}

/**
 * The school's active enrollments in one list (docs/decisions.md "Enrollments
 * in bulk"): a sync reads who is in which group 100 at a time, not one card
 * per student. A group of its own, as the write beside it needs write scope.
 */
export class EnrollmentListGroup extends readStack(
  HttpApiGroup.make("enrollmentList")
    // One tag per resource: the enrollments' (./openapi/Tags.ts).
    .annotate(OpenApi.Title, "enrollments").add(
    HttpApiEndpoint.get("list", "/enrollments", {
      query: listQuery(pagination),
      success: list(Enrollments.Enrollment)
    }).annotate(OpenApi.Summary, "List the school's active enrollments (who is in which group)")
      .annotate(OpenApi.Description, "The school's active enrollments `{ id, student_id, group_id, enrolled_at }`, by ascending id, up to 100 a request: who is in which group, for a sync (docs/integrators.md \"Keeping a copy in sync\"). Needs a read key like every read.")
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
      "Errors use the envelope `{ error: { code, message, fields? } }`.\n\n" +
      "The guide, with every rule, its examples and the webhooks: `docs/integrators.md` in the service's repository; " +
      "the rules' reasons: `docs/decisions.md`.",
    license: LICENSE,
    servers: SERVERS,
    // What the document says beyond what HttpApi derives, in the order applied (./openapi/).
    transform: adjustDocument(flow(
      flow(documentContact({ name: "The school that issued your API key (its owner or an administrator)" }), mergeTags),
      allowUnknownBodyFields,
      lowerCaseHttpSchemes,
      documentParameters(routes),
      documentUnauthorizedReasons,
      documentUnexpectedErrors({ internalError: Errors.InternalError, methodNotAllowed: Errors.MethodNotAllowed }),
      documentRequestId,
      documentExamples,
      flow(
        documentWebhooks,
        documentLimits(PUBLIC_LIMITS),
        documentListFields(["ValidationFailedEncoded", "MissingIdempotencyKeyEncoded"]),
        nameComponents
      )
    ))
  }))
{}
