/** Payments of one school, as the public API reads them (spec 2.4). */
import { Context, Effect, Layer, Schema } from "effect"
import { Models, Money, Pagination } from "@school/domain"
import { SqlClient } from "effect/sql"
import { listPage } from "./Paging.ts"

const PaymentRow = Schema.Struct({
  ...Models.Payment.fields,
  amount_kopecks: Money.KopecksFromBigInt
})

export class Payments extends Context.Service<Payments, {
  list(schoolId: number, request: { readonly page: Pagination.PageRequest; readonly updatedSince?: string | undefined }): Effect.Effect<{
    readonly items: ReadonlyArray<Models.Payment>
    readonly total: number
  }>
}>()("school/persistence/Payments") {
  static readonly layer = Layer.effect(
    Payments,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return Payments.of({
        list: (schoolId, { page, updatedSince }) => {
          const { limit, offset } = Pagination.toWindow(page)
          const filter = updatedSince === undefined
            ? sql`school_id = ${schoolId}`
            : sql`school_id = ${schoolId} AND updated_at >= ${updatedSince}::timestamptz`
          return listPage(
            PaymentRow,
            sql`SELECT count(*)::int AS total FROM payments WHERE ${filter}`,
            sql`SELECT id, student_id, amount_kopecks, payment_type, group_id, filial_id,
                       api_ts(paid_at) AS paid_at, api_ts(created_at) AS created_at,
                       api_ts(updated_at) AS updated_at
                FROM payments WHERE ${filter}
                ORDER BY id LIMIT ${limit} OFFSET ${offset}`
          ).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        }
      })
    })
  )
}
