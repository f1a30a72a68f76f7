/**
 * Leads of one school as POST /leads writes them (spec 2.2, 3, 4.3 rule 5):
 * the lead in the lowest-priority status of its funnel, with no responsible
 * employee and no funnel automation, and its `lead.created` event in the
 * outbox, in one statement (so one round trip, and one transaction with the
 * idempotency record the caller writes).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Errors, type Ids, Leads as LeadRules } from "@school/domain"
import { insertEvents } from "./Outbox.ts"

const decodeLead = Schema.decodeUnknownEffect(LeadRules.Lead)

export class Leads extends Context.Service<Leads, {
  /** funnel_not_found when a non-zero funnel is not the school's (or the school has no usable funnel). */
  create(schoolId: Ids.SchoolId, lead: LeadRules.NewLead): Effect.Effect<LeadRules.Lead, Errors.FunnelNotFound>
}>()("school/persistence/Leads") {
  static readonly layer = Layer.effect(
    Leads,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const create = Effect.fnUntraced(function*(schoolId: Ids.SchoolId, lead: LeadRules.NewLead) {
        const isMain = lead.funnelId === LeadRules.MAIN_FUNNEL
        // spec 2.2: 0 is the main funnel, stored as NULL (a placeholder, not a foreign key).
        const funnel = isMain ? sql`f.is_main` : sql`f.id = ${lead.funnelId}::int`
        const rows = yield* sql`
          WITH status AS (
            -- spec 2.2: the status with the lowest priority value (LeadRules.lowestPriorityStatus)
            SELECT ps.id
            FROM funnels f
            JOIN pipeline_statuses ps ON ps.school_id = f.school_id AND ps.funnel_id = f.id
            WHERE f.school_id = ${schoolId} AND ${funnel}
            ORDER BY ps.priority, ps.id
            LIMIT 1
          ), lead AS (
            INSERT INTO leads (school_id, name, phone, source, comment, funnel_id, pipeline_status_id)
            SELECT ${schoolId}, ${lead.name}::text, ${lead.phone}::text, ${lead.source}::text, ${lead.comment}::text,
                   ${isMain ? null : lead.funnelId}::int, status.id
            FROM status
            RETURNING id, name, phone, source, comment, coalesce(funnel_id, 0) AS funnel_id, pipeline_status_id,
                      api_ts(created_at) AS created_at
          ), event AS (
            ${
          insertEvents(sql, {
            schoolId,
            event: "lead.created",
            // spec 6.3, 4.3 rule 5: the same name, phone and source as the lead.
            payload: sql`json_build_object('lead_id', id, 'name', name, 'phone', phone, 'source', source)`,
            from: sql`lead`
          })
        }
          )
          SELECT * FROM lead`.pipe(Effect.orDie)
        if (rows[0] === undefined) {
          return yield* new Errors.FunnelNotFound({
            message: isMain
              ? "The school has no main funnel with statuses."
              : `Funnel ${lead.funnelId} does not exist in this school.`
          })
        }
        return yield* Effect.orDie(decodeLead(rows[0]))
      })

      return Leads.of({ create })
    })
  )
}
