/** POST /leads (docs/integrators.md "Writing"): defaults applied, one repository call. */
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Errors, Leads as LeadRules } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
import { Leads } from "@school/persistence/Leads"
import { funnelNotFound } from "./RefusalMessages.ts"

/** The public lead: the created one without its responsible (a lead made through the public API has none). */
const publicLead = ({ responsible_id: _, ...lead }: LeadRules.CrmLead): LeadRules.Lead => lead

export const LeadsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "leads",
  Effect.fnUntraced(function*(handlers) {
    const leads = yield* Leads
    return handlers.handle("create", Effect.fn("PublicApi.leads.create")(function*({ payload }) {
      const { schoolId } = yield* CurrentKey
      return { data: publicLead(yield* leads.create(schoolId, LeadRules.toNewLead(payload))) }
    }, Effect.catchTag("ReferencesNotFound", ({ references }) => {
      // The public API names no responsible: only the funnel can be missing (funnel_not_found).
      const funnel = references.find((reference) => reference.entity === "funnel")
      return funnel === undefined
        ? Effect.die(new Error("POST /leads: a missing reference other than the funnel"))
        : Effect.fail(new Errors.FunnelNotFound({ message: funnelNotFound(funnel.id) }))
    })))
  })
)
