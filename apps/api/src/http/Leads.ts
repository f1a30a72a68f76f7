/** POST /leads (spec 2.2, 4.2): defaults applied, one repository call. */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Leads as LeadRules } from "@school/domain"
import { CurrentKey, PublicApi } from "@school/domain/PublicApi"
import { Leads } from "@school/persistence/Leads"

export const LeadsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "leads",
  Effect.fnUntraced(function*(handlers) {
    const leads = yield* Leads
    return handlers.handle("create", Effect.fnUntraced(function*({ payload }) {
      const { schoolId } = yield* CurrentKey
      return { data: yield* leads.create(schoolId, LeadRules.toNewLead(payload)) }
    }))
  })
)

export const LeadsHandlers = LeadsHandlersNoDeps.pipe(Layer.provide(Leads.layer))
