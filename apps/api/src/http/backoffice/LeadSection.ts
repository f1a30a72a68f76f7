/**
 * Handlers of the back office's lead section and inbox
 * (libs/domain/src/api/backoffice/LeadSection.ts; docs/back-office.md):
 * the caller's role is checked before decoding (`RoleCheck`, from each
 * endpoint's `RequiredAccess`); each handler makes one repository call. `LeadSectionRepositories` names the persistence services
 * they need beyond those Server.ts already provides (Leads); Server.ts
 * provides them with the rest.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { CurrentEmployee } from "@school/domain/api/BackOfficeMiddleware"
import * as Errors from "@school/domain/BackOfficeErrors"
import * as LeadRules from "@school/domain/Leads"
import * as Pagination from "@school/domain/Pagination"
import * as SessionRules from "@school/domain/Sessions"
import { Funnels } from "@school/persistence/Funnels"
import { Inbox } from "@school/persistence/Inbox"
import { Leads } from "@school/persistence/Leads"
import { invalidBody, referencesNotFound } from "./Refusals.ts"

export const LeadSectionRepositories = Layer.mergeAll(Funnels.layer, Inbox.layer)

const LeadsHandlers = HttpApiBuilder.group(
  BackOfficeApi,
  "leads",
  Effect.fnUntraced(function*(handlers) {
    const leads = yield* Leads
    const funnels = yield* Funnels
    return handlers
      .handle("create", Effect.fn("BackOfficeApi.leads.create")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        // The public POST /leads's statement and rules (libs/persistence Leads.ts), plus the responsible.
        return yield* leads.create(schoolId, LeadRules.toCrmNewLead(payload))
      }, Effect.catchTag("ReferencesNotFound", referencesNotFound)))
      .handle("list", Effect.fn("BackOfficeApi.leads.list")(function*({ query }) {
        const { schoolId } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const { items, total } = yield* leads.list(schoolId, page)
        return { data: items, meta: Pagination.meta(page, total) }
      }))
      .handle("move", Effect.fn("BackOfficeApi.leads.move")(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        const statusId = LeadRules.PipelineStatusId.make(payload.status_id)
        return yield* leads.move(schoolId, params.id, statusId)
      }, Effect.catchTags({
        LeadNotFound: ({ leadId }) => Effect.fail(new Errors.NotFound({ message: `Lead ${leadId} does not exist.` })),
        StatusNotInFunnel: ({ leadId, statusId }) =>
          Effect.fail(invalidBody({ status_id: [`Status ${statusId} is not a status of lead ${leadId}'s funnel.`] }))
      })))
      .handle("funnels", Effect.fn("BackOfficeApi.leads.funnels")(function*({ query }) {
        const { schoolId } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const { items, total } = yield* funnels.list(schoolId, page)
        return { data: items, meta: Pagination.meta(page, total) }
      }))
      .handle("createFunnel", Effect.fn("BackOfficeApi.leads.createFunnel")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const funnel = yield* funnels.create(schoolId, {
          name: payload.name,
          statuses: payload.statuses.map(LeadRules.toStoredStatus)
        })
        return funnel
      }))
  })
)

const InboxHandlers = HttpApiBuilder.group(
  BackOfficeApi,
  "inbox",
  Effect.fnUntraced(function*(handlers) {
    const inbox = yield* Inbox
    return handlers
      .handle("notifications", Effect.fn("BackOfficeApi.inbox.notifications")(function*({ query }) {
        const { schoolId, employee } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const { items, total, unread } = yield* inbox.notifications(schoolId, employee.id, page)
        return { data: items, meta: { ...Pagination.meta(page, total), unread } }
      }))
      .handle("read", Effect.fn("BackOfficeApi.inbox.read")(function*({ params }) {
        const { schoolId, employee } = yield* CurrentEmployee
        return yield* inbox.markRead(schoolId, employee.id, params.id)
      }, Effect.catchTag("NotificationNotFound", ({ notificationId }) =>
        Effect.fail(new Errors.NotFound({ message: `Notification ${notificationId} does not exist.` })))))
      .handle("tasks", Effect.fn("BackOfficeApi.inbox.tasks")(function*({ query }) {
        const { schoolId, employee } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        // docs/back-office.md: full access sees every task of the school; the others their own.
        const scope = SessionRules.FULL_ACCESS.includes(employee.role)
          ? { _tag: "School" as const }
          : { _tag: "Assignee" as const, employeeId: employee.id }
        const { items, total } = yield* inbox.tasks(schoolId, scope, page)
        return { data: items, meta: Pagination.meta(page, total) }
      }))
  })
)

export const LeadSectionHandlersNoDeps = Layer.mergeAll(LeadsHandlers, InboxHandlers)
