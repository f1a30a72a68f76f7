/** Payments of one school, as the public API reads them (docs/integrators.md "Reading"). */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { type Ids, Models, Money, type Pagination } from "@school/domain"
import * as SqlClient from "effect/sql/SqlClient"
import { type SyncedListRequest, syncedListReader } from "./Paging.ts"
import { named } from "./Spans.ts"

const PaymentRow = Schema.Struct({
  ...Models.Payment.fields,
  amount_kopecks: Money.KopecksFromBigInt
})

export class Payments extends Context.Service<Payments, {
  list(schoolId: Ids.SchoolId, request: SyncedListRequest): Effect.Effect<Pagination.ListResult<Models.Payment>>
}>()("school/persistence/Payments") {
  static readonly layer = Layer.effect(
    Payments,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return Payments.of({
        list: named(
          "Payments.list",
          syncedListReader(
            sql,
            PaymentRow,
            "payments",
            sql`t.id, t.student_id, t.amount_kopecks, t.payment_type, t.group_id, t.filial_id,
                api_ts(t.paid_at) AS paid_at, api_ts(t.created_at) AS created_at, api_ts(t.updated_at) AS updated_at`
          )
        )
      })
    })
  )
}
