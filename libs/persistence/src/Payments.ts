/** Payments of one school, as the public API reads them (spec 2.4). */
import { Context, Effect, Layer, Schema } from "effect"
import { type Ids, Models, Money, Pagination } from "@school/domain"
import { SqlClient } from "effect/sql"
import { countedTotal, pageReader, updatedSinceFilter } from "./Paging.ts"

const PaymentRow = Schema.Struct({
  ...Models.Payment.fields,
  amount_kopecks: Money.KopecksFromBigInt
})

export class Payments extends Context.Service<Payments, {
  list(schoolId: Ids.SchoolId, request: { readonly page: Pagination.PageRequest; readonly updatedSince?: string | undefined }): Effect.Effect<{
    readonly items: ReadonlyArray<Models.Payment>
    readonly total: number
  }>
}>()("school/persistence/Payments") {
  static readonly layer = Layer.effect(
    Payments,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const readPage = pageReader(sql, PaymentRow)
      return Payments.of({
        list: (schoolId, { page, updatedSince }) => {
          const { limit, offset } = Pagination.toWindow(page)
          const filter = updatedSinceFilter(sql, schoolId, updatedSince)
          return readPage(
            updatedSince === undefined
              ? countedTotal(sql, "payments", schoolId)
              : sql`SELECT count(*)::int AS total FROM payments WHERE ${filter}`,
            // Deferred join, as for students: the offset walks ids only.
            sql`SELECT p.id, p.student_id, p.amount_kopecks, p.payment_type, p.group_id, p.filial_id,
                       api_ts(p.paid_at) AS paid_at, api_ts(p.created_at) AS created_at,
                       api_ts(p.updated_at) AS updated_at
                FROM (SELECT id FROM payments WHERE ${filter} ORDER BY id LIMIT ${limit} OFFSET ${offset}) ids
                JOIN payments p ON p.school_id = ${schoolId} AND p.id = ids.id
                ORDER BY p.id`
          )
        }
      })
    })
  )
}
