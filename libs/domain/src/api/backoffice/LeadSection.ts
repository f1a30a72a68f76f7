/**
 * The back office's lead section (docs/back-office.md "Leads, funnels and tasks"):
 * leads (creation with the public rules, the general list, the explicit
 * status move that runs the funnel automation) and funnels with their
 * statuses; and each employee's inbox: notifications and tasks. Endpoints
 * are added before `.middleware(...)`, which applies to those added before it.
 */
import * as Schema from "effect/Schema"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Errors from "../../BackOfficeErrors.ts"
import * as Leads from "../../Leads.ts"
import { Meta } from "../../Pagination.ts"
import { ANY_EMPLOYEE, FULL_ACCESS, LEAD_SECTION } from "../../Sessions.ts"
import {
  BackOfficeValidation,
  bodyRefusals,
  ok,
  okCreated,
  okList,
  okPage,
  pageQuery,
  RequiredAccess,
  RoleCheck,
  SessionAuthentication
} from "../BackOfficeMiddleware.ts"

/** GET /notifications: the list's meta adds the caller's unread count (for the panel's badge). */
export const NotificationsMeta = Schema.Struct({
  ...Meta.fields,
  unread: Schema.Int.annotate({ description: "How many of the caller's notifications are unread, on any page" })
}).annotate({ examples: [{ page: 1, per_page: 20, total: 1, unread: 1 }] })
export const NotificationsResponse = okPage(Leads.Notification, NotificationsMeta)

export class LeadsGroup extends HttpApiGroup.make("leads")
    .annotate(OpenApi.Description, "Leads, funnels and their statuses (docs/back-office.md \"Leads, funnels and tasks\").")
  .add(
    HttpApiEndpoint.post("create", "/leads", {
      payload: Leads.CrmCreateLeadRequest,
      success: okCreated(Leads.CrmLead),
      error: [Errors.Forbidden.envelope, Errors.ValidationFailed.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, LEAD_SECTION)
      .annotate(OpenApi.Summary, "Create a lead (emits lead.created; no funnel automation)")
      .annotate(OpenApi.Description, "Full access or manager. Creates a lead in the first status of its funnel and sends `lead.created`; creating a lead never runs a status's automatic task."),
    HttpApiEndpoint.get("list", "/leads", {
      query: pageQuery,
      success: okList(Leads.CrmLead),
      error: Errors.Forbidden.envelope
    }).annotate(RequiredAccess, LEAD_SECTION)
      .annotate(OpenApi.Summary, "The school's general lead list, API leads included, newest first")
      .annotate(OpenApi.Description, "Full access or manager. The school's leads, those created through the public API included, newest first (by descending id), paged."),
    HttpApiEndpoint.post("move", "/leads/:id/status", {
      params: { id: Leads.LeadIdFromPath },
      payload: Leads.MoveLeadRequest,
      success: ok(Leads.CrmLead),
      error: [Errors.Forbidden.envelope, Errors.NotFound.envelope, Errors.ValidationFailed.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, LEAD_SECTION)
      .annotate(
      OpenApi.Summary,
      "Move a lead to another status of its funnel: runs the status's automation (a task for the responsible and a notification to them)"
    )
      .annotate(OpenApi.Description, "Full access or manager. Moves the lead into another status of its funnel; a status with an automatic task creates the task for the lead's responsible employee and a notification to them. A lead that is not the school's is 404 `NOT_FOUND`; a status of another funnel is 422 `VALIDATION_FAILED`."),
    HttpApiEndpoint.get("funnels", "/funnels", {
      query: pageQuery,
      success: okList(Leads.Funnel),
      error: Errors.Forbidden.envelope
    }).annotate(RequiredAccess, LEAD_SECTION)
      .annotate(OpenApi.Summary, "The school's funnels with their statuses (by priority)")
      .annotate(OpenApi.Description, "Full access or manager. The school's funnels, each with its statuses in priority order."),
    HttpApiEndpoint.post("createFunnel", "/funnels", {
      payload: Leads.CreateFunnelRequest,
      success: okCreated(Leads.Funnel),
      error: [Errors.Forbidden.envelope, Errors.ValidationFailed.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "Create a funnel with its statuses (distinct priorities, optional auto_task_title)")
      .annotate(OpenApi.Description, "Owner or administrator only. Creates a funnel with its statuses; priorities must be distinct, and a status may carry an `auto_task_title` (the task an explicit move into it creates).")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}

export class InboxGroup extends HttpApiGroup.make("inbox")
    .annotate(OpenApi.Description, "The caller's notifications and tasks (docs/back-office.md \"Leads, funnels and tasks\").")
  .add(
    HttpApiEndpoint.get("notifications", "/notifications", {
      query: pageQuery,
      success: NotificationsResponse,
      error: Errors.Forbidden.envelope
    }).annotate(RequiredAccess, ANY_EMPLOYEE)
      .annotate(OpenApi.Summary, "The caller's notifications, newest first; meta.unread counts the unread ones")
      .annotate(OpenApi.Description, "Any signed-in employee. The caller's own notifications, newest first, paged; `meta.unread` counts the unread ones (for a badge)."),
    HttpApiEndpoint.post("read", "/notifications/:id/read", {
      params: { id: Leads.NotificationIdFromPath },
      success: ok(Leads.Notification),
      error: [Errors.Forbidden.envelope, Errors.NotFound.envelope]
    }).annotate(RequiredAccess, ANY_EMPLOYEE)
      .annotate(OpenApi.Summary, "Mark one of the caller's notifications read (the first read time stays)")
      .annotate(OpenApi.Description, "Any signed-in employee. Marks one of the caller's notifications read; marking it again keeps the first read time. Someone else's notification is 404 `NOT_FOUND`."),
    HttpApiEndpoint.get("tasks", "/tasks", {
      query: pageQuery,
      success: okList(Leads.Task),
      error: Errors.Forbidden.envelope
    }).annotate(RequiredAccess, ANY_EMPLOYEE)
      .annotate(
      OpenApi.Summary,
      "Tasks assigned to the caller; full access sees every task of the school, unassigned ones included"
    )
      .annotate(OpenApi.Description, "Any signed-in employee. The tasks assigned to the caller, by ascending id, paged; the owner and administrators see every task of the school, unassigned ones included. Each task carries `lead_name`: its lead's name, or the lead's phone when the lead has no name.")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
