/** POST /leads (spec 2.2, 4.2): defaults applied, one repository call. */
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Leads as LeadRules } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
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
