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
import * as LeadRules from "@school/domain/Leads"
import * as Pagination from "@school/domain/Pagination"
import * as SessionRules from "@school/domain/Sessions"
import { Funnels } from "@school/persistence/Funnels"
import { Inbox } from "@school/persistence/Inbox"
import { Leads } from "@school/persistence/Leads"

export const LeadSectionRepositories = Layer.mergeAll(Funnels.layer, Inbox.layer)

const LeadsHandlers = HttpApiBuilder.group(
  BackOfficeApi,
  "leads",
  Effect.fnUntraced(function*(handlers) {
    const leads = yield* Leads
    const funnels = yield* Funnels
    return handlers
      .handle("create", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        // The public POST /leads's statement and rules (libs/persistence Leads.ts), plus the responsible.
        return { success: true as const, data: yield* leads.createInCrm(schoolId, LeadRules.toCrmNewLead(payload)) }
      }))
      .handle("list", Effect.fnUntraced(function*({ query }) {
        const { schoolId } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const { items, total } = yield* leads.list(schoolId, page)
        return { success: true as const, data: items, meta: Pagination.meta(page, total) }
      }))
      .handle("move", Effect.fnUntraced(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        const statusId = LeadRules.PipelineStatusId.make(payload.status_id)
        return { success: true as const, data: yield* leads.move(schoolId, params.id, statusId) }
      }))
      .handle("funnels", Effect.fnUntraced(function*({ query }) {
        const { schoolId } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const { items, total } = yield* funnels.list(schoolId, page)
        return { success: true as const, data: items, meta: Pagination.meta(page, total) }
      }))
      .handle("createFunnel", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const funnel = yield* funnels.create(schoolId, {
          name: payload.name,
          statuses: payload.statuses.map(LeadRules.toStoredStatus)
        })
        return { success: true as const, data: funnel }
      }))
  })
)

const InboxHandlers = HttpApiBuilder.group(
  BackOfficeApi,
  "inbox",
  Effect.fnUntraced(function*(handlers) {
    const inbox = yield* Inbox
    return handlers
      .handle("notifications", Effect.fnUntraced(function*({ query }) {
        const { schoolId, employee } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const { items, total, unread } = yield* inbox.notifications(schoolId, employee.id, page)
        return { success: true as const, data: items, meta: { ...Pagination.meta(page, total), unread } }
      }))
      .handle("read", Effect.fnUntraced(function*({ params }) {
        const { schoolId, employee } = yield* CurrentEmployee
        return { success: true as const, data: yield* inbox.markRead(schoolId, employee.id, params.id) }
      }))
      .handle("tasks", Effect.fnUntraced(function*({ query }) {
        const { schoolId, employee } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        // docs/back-office.md: full access sees every task of the school; the others their own.
        const scope = SessionRules.FULL_ACCESS.includes(employee.role)
          ? { _tag: "School" as const }
          : { _tag: "Assignee" as const, employeeId: employee.id }
        const { items, total } = yield* inbox.tasks(schoolId, scope, page)
        return { success: true as const, data: items, meta: Pagination.meta(page, total) }
      }))
  })
)

export const LeadSectionHandlersNoDeps = Layer.mergeAll(LeadsHandlers, InboxHandlers)
