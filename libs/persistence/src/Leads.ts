/**
 * Leads of one school (spec 2.2, 3, 4.3 rule 5): the ONE statement that
 * creates a lead, for the public POST /leads and the back office's alike:
 * the lead in the lowest-priority status of its funnel, its `lead.created`
 * event in the outbox, no funnel automation (spec part 3), in one statement
 * (one round trip, and one transaction with the idempotency record the
 * public caller writes). A lead created through the public API has no
 * responsible employee; the back office may name one.
 *
 * And the back office's lead section (docs/back-office.md): the school's
 * general lead list, and the explicit move of a lead to another status of
 * its funnel, which runs that status's automation (`Leads.automation` in
 * libs/domain) under the lead row's lock, so two concurrent moves to the
 * same status run it once.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { Errors, type Ids, Leads as LeadRules, Pagination } from "@school/domain"
import * as BackOfficeErrors from "@school/domain/BackOfficeErrors"
import { insertEvents } from "./Outbox.ts"
import { type PageResult, pageReader } from "./Paging.ts"

const decodeLead = Schema.decodeUnknownEffect(LeadRules.Lead)
const decodeCrmLead = Schema.decodeUnknownEffect(LeadRules.CrmLead)

/** What the creating statement found, beside the lead's columns (NULL when none was made). */
const CreateOutcome = Schema.Struct({
  funnel_found: Schema.Boolean,
  responsible_found: Schema.Boolean,
  id: Schema.NullOr(Schema.Int)
})
const decodeCreateOutcome = Schema.decodeUnknownEffect(CreateOutcome)

/** What a move reads under the lead's lock: the lead, and the target status when it is of the lead's funnel. */
const MoveRead = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  phone: Schema.String,
  pipeline_status_id: Schema.Int,
  responsible_id: Schema.NullOr(Schema.Int),
  target_id: Schema.NullOr(Schema.Int),
  auto_task_title: Schema.NullOr(Schema.String)
})
const decodeMoveRead = Schema.decodeUnknownEffect(MoveRead)

/** Why a creation was refused, when it was. */
interface Refusal {
  readonly funnel: boolean
  readonly responsible: boolean
}

const funnelMessage = (funnelId: number) =>
  funnelId === LeadRules.MAIN_FUNNEL
    ? "The school has no main funnel with statuses."
    : `Funnel ${funnelId} does not exist in this school.`

export class Leads extends Context.Service<Leads, {
  /**
   * POST /leads of the public API: funnel_not_found when a non-zero funnel is
   * not the school's (or the school has no usable funnel). No responsible.
   */
  create(schoolId: Ids.SchoolId, lead: LeadRules.NewLead): Effect.Effect<LeadRules.Lead, Errors.FunnelNotFound>
  /**
   * POST /leads of the back office: the same statement and rules, with the
   * responsible employee; a funnel or a responsible that is not the
   * school's is 422 VALIDATION_FAILED on that field (both at once when both).
   */
  createInCrm(
    schoolId: Ids.SchoolId,
    lead: LeadRules.NewLead
  ): Effect.Effect<LeadRules.CrmLead, BackOfficeErrors.ValidationFailed>
  /** The school's general lead list (spec 2.2): every lead, API leads included, by ascending id. */
  list(schoolId: Ids.SchoolId, page: Pagination.PageRequest): Effect.Effect<PageResult<LeadRules.CrmLead>>
  /**
   * POST /leads/{id}/status: NOT_FOUND when the lead is not the school's;
   * VALIDATION_FAILED (status_id) when the status is not of the lead's
   * funnel. Runs the target status's automation once (spec part 3).
   */
  move(
    schoolId: Ids.SchoolId,
    leadId: Ids.LeadId,
    statusId: LeadRules.PipelineStatusId
  ): Effect.Effect<LeadRules.CrmLead, BackOfficeErrors.NotFound | BackOfficeErrors.ValidationFailed>
}>()("school/persistence/Leads") {
  static readonly layer = Layer.effect(
    Leads,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /** The lead columns every answer carries (over the alias or table `l`). */
      const leadColumns = sql`l.id, l.name, l.phone, l.source, l.comment, coalesce(l.funnel_id, 0) AS funnel_id,
        l.pipeline_status_id, l.responsible_id, api_ts(l.created_at) AS created_at`

      /**
       * The one creating statement: the lead and its event, or nothing when
       * the funnel (or the named responsible) is not the school's; then why.
       */
      const insert = Effect.fnUntraced(function*(schoolId: Ids.SchoolId, lead: LeadRules.NewLead) {
        const isMain = lead.funnelId === LeadRules.MAIN_FUNNEL
        const responsibleId = lead.responsibleId ?? null
        // spec 2.2: 0 is the main funnel, stored as NULL (a placeholder, not a foreign key).
        const funnel = isMain ? sql`f.is_main` : sql`f.id = ${lead.funnelId}::int`
        const responsible = responsibleId === null
          ? sql`true`
          : sql`EXISTS (SELECT 1 FROM employees WHERE school_id = ${schoolId} AND id = ${responsibleId}::int)`
        const rows = yield* sql`
          WITH status AS (
            -- spec 2.2: the status with the lowest priority value (LeadRules.lowestPriorityStatus)
            SELECT ps.id
            FROM funnels f
            JOIN pipeline_statuses ps ON ps.school_id = f.school_id AND ps.funnel_id = f.id
            WHERE f.school_id = ${schoolId} AND ${funnel}
            ORDER BY ps.priority, ps.id
            LIMIT 1
          ), checks AS (
            SELECT EXISTS (SELECT 1 FROM status) AS funnel_found, ${responsible} AS responsible_found
          ), l AS (
            INSERT INTO leads (school_id, name, phone, source, comment, funnel_id, pipeline_status_id, responsible_id)
            SELECT ${schoolId}, ${lead.name}::text, ${lead.phone}::text, ${lead.source}::text, ${lead.comment}::text,
                   ${isMain ? null : lead.funnelId}::int, status.id, ${responsibleId}::int
            FROM status, checks
            WHERE checks.responsible_found
            RETURNING *
          ), event AS (
            ${
          insertEvents(sql, {
            schoolId,
            event: "lead.created",
            // spec 6.3, 4.3 rule 5: the same name, phone and source as the lead.
            payload: sql`json_build_object('lead_id', id, 'name', name, 'phone', phone, 'source', source)`,
            from: sql`l`
          })
        }
          )
          SELECT checks.funnel_found, checks.responsible_found, ${leadColumns}
          FROM checks LEFT JOIN l ON true`.pipe(Effect.orDie)
        // One row: `checks` has exactly one.
        const outcome = yield* Effect.orDie(decodeCreateOutcome(rows[0]))
        if (outcome.id === null) {
          const refusal: Refusal = { funnel: !outcome.funnel_found, responsible: !outcome.responsible_found }
          return { _tag: "Refused", refusal } as const
        }
        return { _tag: "Created", row: rows[0] } as const
      })

      const create = Effect.fnUntraced(function*(schoolId: Ids.SchoolId, lead: LeadRules.NewLead) {
        // The public API never names a responsible (spec 2.2).
        const result = yield* insert(schoolId, { ...lead, responsibleId: null })
        if (result._tag === "Refused") {
          return yield* new Errors.FunnelNotFound({ message: funnelMessage(lead.funnelId) })
        }
        return yield* Effect.orDie(decodeLead(result.row))
      })

      const createInCrm = Effect.fnUntraced(function*(schoolId: Ids.SchoolId, lead: LeadRules.NewLead) {
        const result = yield* insert(schoolId, lead)
        if (result._tag === "Refused") {
          const fields: Record<string, Array<string>> = {}
          if (result.refusal.funnel) fields["funnel_id"] = [funnelMessage(lead.funnelId)]
          if (result.refusal.responsible) {
            fields["responsible_id"] = [`Employee ${lead.responsibleId} does not exist in this school.`]
          }
          return yield* new BackOfficeErrors.ValidationFailed({
            message: `Invalid request body: ${Object.keys(fields).join(", ")}`,
            fields
          })
        }
        return yield* Effect.orDie(decodeCrmLead(result.row))
      })

      const readLeads = pageReader(sql, LeadRules.CrmLead)
      const list = (schoolId: Ids.SchoolId, page: Pagination.PageRequest) => {
        const { limit, offset } = Pagination.toWindow(page)
        return readLeads(
          sql`SELECT count(*)::int AS total FROM leads WHERE school_id = ${schoolId}`,
          sql`SELECT ${leadColumns} FROM leads l WHERE l.school_id = ${schoolId}
              ORDER BY l.id LIMIT ${limit} OFFSET ${offset}`
        )
      }

      const move = (schoolId: Ids.SchoolId, leadId: Ids.LeadId, statusId: LeadRules.PipelineStatusId) =>
        Effect.gen(function*() {
          // The lead's row lock orders concurrent moves: a second move waits, then reads the first one's status.
          const read = yield* sql`
            SELECT l.id, l.name, l.phone, l.pipeline_status_id, l.responsible_id,
                   ps.id AS target_id, ps.auto_task_title
            FROM leads l
            LEFT JOIN pipeline_statuses ps
              ON ps.school_id = l.school_id AND ps.id = ${statusId}::int
             AND ps.funnel_id = coalesce(
                   l.funnel_id,
                   (SELECT f.id FROM funnels f WHERE f.school_id = ${schoolId} AND f.is_main))
            WHERE l.school_id = ${schoolId} AND l.id = ${leadId}::int
            FOR UPDATE OF l`.pipe(Effect.orDie)
          if (read[0] === undefined) {
            return yield* new BackOfficeErrors.NotFound({ message: `Lead ${leadId} does not exist.` })
          }
          const lead = yield* Effect.orDie(decodeMoveRead(read[0]))
          if (lead.target_id === null) {
            return yield* new BackOfficeErrors.ValidationFailed({
              message: "Invalid request body: status_id",
              fields: { status_id: [`Status ${statusId} is not a status of lead ${leadId}'s funnel.`] }
            })
          }
          const plan = LeadRules.automation(lead, { id: lead.target_id, auto_task_title: lead.auto_task_title })
          if (!plan.moved) {
            // spec part 3: the status it is already in: nothing runs.
            const rows = yield* sql`SELECT ${leadColumns} FROM leads l WHERE l.school_id = ${schoolId} AND l.id = ${leadId}::int`
              .pipe(Effect.orDie)
            return yield* Effect.orDie(decodeCrmLead(rows[0]))
          }
          const task = Option.match(plan.task, {
            onNone: () => sql``,
            onSome: (task) =>
              sql`, task AS (
                INSERT INTO tasks (school_id, title, lead_id, assignee_id)
                SELECT ${schoolId}, ${task.title}::text, l.id, ${task.assigneeId}::int FROM l
                RETURNING id
              )`
          })
          const notification = Option.isSome(plan.task)
            ? Option.match(plan.notification, {
              onNone: () => sql``,
              onSome: (notification) =>
                sql`, notified AS (
                  INSERT INTO notifications (school_id, employee_id, kind, message, task_id)
                  SELECT ${schoolId}, ${notification.employeeId}::int, 'task_assigned', ${notification.message}::text, task.id
                  FROM task
                )`
            })
            : sql``
          const rows = yield* sql`
            WITH l AS (
              UPDATE leads SET pipeline_status_id = ${lead.target_id}::int, updated_at = clock_timestamp()
              WHERE school_id = ${schoolId} AND id = ${leadId}::int
              RETURNING *
            )${task}${notification}
            SELECT ${leadColumns} FROM l`.pipe(Effect.orDie)
          return yield* Effect.orDie(decodeCrmLead(rows[0]))
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

      return Leads.of({ create, createInCrm, list, move })
    })
  )
}
