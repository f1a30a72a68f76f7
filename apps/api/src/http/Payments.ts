/** GET /payments (docs/integrators.md "Reading"): amounts in whole kopecks. */
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Models, Pagination } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
import { Payments } from "@school/persistence/Payments"
import { listResponse } from "./ListResponse.ts"

const paymentsList = listResponse(Models.Payment)

export const PaymentsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "payments",
  Effect.fnUntraced(function*(handlers) {
    const payments = yield* Payments
    return handlers.handle("list", Effect.fn("PublicApi.payments.list")(function*({ query }) {
      const { schoolId } = yield* CurrentKey
      const page = Pagination.listRequest(query)
      return paymentsList(yield* payments.list(schoolId, { page, updatedSince: query.updated_since }))
    }))
  })
)
