/**
 * A school's lead funnels with their pipeline statuses (docs/back-office.md
 * "Leads, funnels and tasks"): the list, each funnel with its
 * statuses ordered by priority (then id, the order a new lead's status is
 * chosen in), and a new funnel with its statuses in one statement.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { Ids, Leads as LeadRules, Pagination } from "@school/domain"
import { type PageResult, pageReader } from "./Paging.ts"
import { named } from "./Spans.ts"

const NewFunnel = Schema.Struct({
  name: Schema.String,
  statuses: Schema.Array(Schema.Struct({
    name: Schema.String,
    priority: Schema.Number,
    autoTaskTitle: Schema.NullOr(Schema.String)
  }))
})
export type NewFunnel = typeof NewFunnel.Type

/** A creation's statement: the school's new funnel. */
const FunnelInsert = Schema.Struct({ school_id: Ids.SchoolId, funnel: NewFunnel })

export class Funnels extends Context.Service<Funnels, {
  /** The school's funnels by ascending id, each with its statuses by priority. */
  list(schoolId: Ids.SchoolId, page: Pagination.PageRequest): Effect.Effect<PageResult<LeadRules.Funnel>>
  /** A funnel (never the main one: the school has it from its creation) with its statuses. */
  create(schoolId: Ids.SchoolId, funnel: NewFunnel): Effect.Effect<LeadRules.Funnel>
}>()("school/persistence/Funnels") {
  static readonly layer = Layer.effect(
    Funnels,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /** The columns of a funnel `f` with its statuses as json, by (priority, id). */
      const funnelColumns = (schoolId: Ids.SchoolId) =>
        sql`f.id, f.name, f.is_main, (
          SELECT coalesce(json_agg(json_build_object(
                   'id', ps.id, 'name', ps.name, 'priority', ps.priority, 'auto_task_title', ps.auto_task_title
                 ) ORDER BY ps.priority, ps.id), '[]'::json)
          FROM pipeline_statuses ps WHERE ps.school_id = ${schoolId} AND ps.funnel_id = f.id
        ) AS statuses`

      const readFunnels = pageReader(sql, LeadRules.Funnel)
      const list = (schoolId: Ids.SchoolId, page: Pagination.PageRequest) => {
        const { limit, offset } = Pagination.toWindow(page)
        return readFunnels(
          sql`SELECT count(*)::int AS total FROM funnels WHERE school_id = ${schoolId}`,
          sql`SELECT ${funnelColumns(schoolId)} FROM funnels f WHERE f.school_id = ${schoolId}
              ORDER BY f.id LIMIT ${limit} OFFSET ${offset}`
        )
      }

      // A funnel row: its statuses come as one json array.
      const insert = SqlSchema.findOne({
        Request: FunnelInsert,
        Result: LeadRules.Funnel,
        execute: ({ funnel, school_id: schoolId }) => {
          const statuses = sql.join(", ", false)(
            funnel.statuses.map((status) =>
              sql`(${status.name}::text, ${status.priority}::int, ${status.autoTaskTitle}::text)`
            )
          )
          // The statuses' rows are not visible to the statement that inserts them: build the answer from RETURNING.
          return sql`
            WITH f AS (
              INSERT INTO funnels (school_id, name, is_main) VALUES (${schoolId}, ${funnel.name}::text, false)
              RETURNING id, name, is_main
            ), ps AS (
              INSERT INTO pipeline_statuses (school_id, funnel_id, name, priority, auto_task_title)
              SELECT ${schoolId}, f.id, s.name, s.priority, s.auto_task_title
              FROM f, (VALUES ${statuses}) AS s (name, priority, auto_task_title)
              RETURNING id, name, priority, auto_task_title
            )
            SELECT f.id, f.name, f.is_main,
                   (SELECT json_agg(json_build_object(
                             'id', ps.id, 'name', ps.name, 'priority', ps.priority, 'auto_task_title', ps.auto_task_title
                           ) ORDER BY ps.priority, ps.id)
                    FROM ps) AS statuses
            FROM f`
        }
      })
      const create = Effect.fn("Funnels.create")(function*(schoolId: Ids.SchoolId, funnel: NewFunnel) {
        return yield* Effect.orDie(insert({ school_id: schoolId, funnel }))
      })

      return Funnels.of({ list: named("Funnels.list", list), create })
    })
  )
}
