/**
 * Leads of one school (docs/integrators.md "Writing"; docs/back-office.md
 * "Leads, funnels and tasks"): the ONE statement that
 * creates a lead, for the public POST /leads and the back office's alike:
 * the lead in the lowest-priority status of its funnel, its `lead.created`
 * event in the outbox, no funnel automation (only a move runs it), in one
 * statement
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
import * as SqlSchema from "effect/sql/SqlSchema"
import { Ids, Leads as LeadRules, Pagination } from "@school/domain"
import * as DomainErrors from "@school/domain/DomainErrors"
import { insertEvents } from "./Outbox.ts"
import { type PageResult, pageReader } from "./Paging.ts"
import { named } from "./Spans.ts"

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

/** A lead of a school. */
const LeadKey = Schema.Struct({ school_id: Ids.SchoolId, lead_id: Ids.LeadId })

/** A move's write: the target status, and the task and notification its automation makes (`LeadRules.MovePlan`). */
const MoveWrite = Schema.Struct({
  ...LeadKey.fields,
  target_id: Schema.Number,
  task: Schema.Option(Schema.Struct({ title: Schema.String, assigneeId: Schema.NullOr(Schema.Number) })),
  notification: Schema.Option(Schema.Struct({ employeeId: Schema.Number, message: Schema.String }))
})

export class Leads extends Context.Service<Leads, {
  /**
   * POST /leads of both APIs: the lead as the back office shows it (with its
   * responsible; the public API shows the `LeadRules.Lead` part of it), or
   * `ReferencesNotFound` naming what is not the school's: the funnel
   * (`funnel_id`; 0 when the school has no main funnel with statuses), the
   * responsible employee (`responsible_id`), or both. The public API names
   * no responsible.
   */
  create(schoolId: Ids.SchoolId, lead: LeadRules.NewLead): Effect.Effect<LeadRules.CrmLead, DomainErrors.ReferencesNotFound>
  /**
   * The school's general lead list: every lead, API leads included, newest first (by descending
   * id; docs/back-office.md "Leads, funnels and tasks"), read backwards along the primary key.
   */
  list(schoolId: Ids.SchoolId, page: Pagination.PageRequest): Effect.Effect<PageResult<LeadRules.CrmLead>>
  /**
   * POST /leads/{id}/status: `LeadNotFound` when the lead is not the
   * school's; `StatusNotInFunnel` when the status is not of the lead's
   * funnel. Runs the target status's automation once (docs/back-office.md
   * "Leads, funnels and tasks").
   */
  move(
    schoolId: Ids.SchoolId,
    leadId: Ids.LeadId,
    statusId: LeadRules.PipelineStatusId
  ): Effect.Effect<LeadRules.CrmLead, DomainErrors.LeadNotFound | DomainErrors.StatusNotInFunnel>
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
      const create = Effect.fn("Leads.create")(function*(schoolId: Ids.SchoolId, lead: LeadRules.NewLead) {
        const isMain = lead.funnelId === LeadRules.MAIN_FUNNEL
        const responsibleId = lead.responsibleId ?? null
        // funnel_id 0 is the main funnel (docs/integrators.md "Writing"), stored as NULL (a placeholder, not a foreign key).
        const funnel = isMain ? sql`f.is_main` : sql`f.id = ${lead.funnelId}::int`
        const responsible = responsibleId === null
          ? sql`true`
          : sql`EXISTS (SELECT 1 FROM employees WHERE school_id = ${schoolId} AND id = ${responsibleId}::int)`
        const rows = yield* sql`
          WITH status AS (
            -- the status with the lowest priority value (LeadRules.lowestPriorityStatus)
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
            // docs/integrators.md "lead.created": the same name, phone and source as the lead.
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
          const missing: Array<DomainErrors.MissingReference> = []
          if (!outcome.funnel_found) missing.push({ field: "funnel_id", entity: "funnel", id: lead.funnelId })
          if (!outcome.responsible_found && responsibleId !== null) {
            missing.push({ field: "responsible_id", entity: "employee", id: responsibleId })
          }
          const [first, ...rest] = missing
          // No lead was made only when the funnel or the responsible is missing.
          if (first === undefined) return yield* Effect.die(new Error("Leads.create: no lead made and nothing missing"))
          return yield* new DomainErrors.ReferencesNotFound({ references: [first, ...rest] })
        }
        return yield* Effect.orDie(decodeCrmLead(rows[0]))
      })

      const readLeads = pageReader(sql, LeadRules.CrmLead)
      const list = (schoolId: Ids.SchoolId, page: Pagination.PageRequest) => {
        const { limit, offset } = Pagination.toWindow(page)
        return readLeads(
          sql`SELECT count(*)::int AS total FROM leads WHERE school_id = ${schoolId}`,
          sql`SELECT ${leadColumns} FROM leads l WHERE l.school_id = ${schoolId}
              ORDER BY l.id DESC LIMIT ${limit} OFFSET ${offset}`
        )
      }

      // The lead's row lock orders concurrent moves: a second move waits, then reads the first one's status.
      const readForMove = SqlSchema.findOneOption({
        Request: Schema.Struct({ ...LeadKey.fields, status_id: LeadRules.PipelineStatusId }),
        Result: MoveRead,
        execute: ({ lead_id, school_id, status_id }) =>
          sql`
            SELECT l.id, l.name, l.phone, l.pipeline_status_id, l.responsible_id,
                   ps.id AS target_id, ps.auto_task_title
            FROM leads l
            LEFT JOIN pipeline_statuses ps
              ON ps.school_id = l.school_id AND ps.id = ${status_id}::int
             AND ps.funnel_id = coalesce(
                   l.funnel_id,
                   (SELECT f.id FROM funnels f WHERE f.school_id = ${school_id} AND f.is_main))
            WHERE l.school_id = ${school_id} AND l.id = ${lead_id}::int
            FOR UPDATE OF l`
      })
      const readLead = SqlSchema.findOne({
        Request: LeadKey,
        Result: LeadRules.CrmLead,
        execute: ({ lead_id, school_id }) =>
          sql`SELECT ${leadColumns} FROM leads l WHERE l.school_id = ${school_id} AND l.id = ${lead_id}::int`
      })
      const moveLead = SqlSchema.findOne({
        Request: MoveWrite,
        Result: LeadRules.CrmLead,
        execute: ({ lead_id, notification, school_id, target_id, task }) => {
          const taskRow = Option.match(task, {
            onNone: () => sql``,
            onSome: (task) =>
              sql`, task AS (
                INSERT INTO tasks (school_id, title, lead_id, assignee_id)
                SELECT ${school_id}, ${task.title}::text, l.id, ${task.assigneeId}::int FROM l
                RETURNING id
              )`
          })
          const notified = Option.isSome(task)
            ? Option.match(notification, {
              onNone: () => sql``,
              onSome: (notification) =>
                sql`, notified AS (
                  INSERT INTO notifications (school_id, employee_id, kind, message, task_id)
                  SELECT ${school_id}, ${notification.employeeId}::int, 'task_assigned', ${notification.message}::text, task.id
                  FROM task
                )`
            })
            : sql``
          return sql`
            WITH l AS (
              UPDATE leads SET pipeline_status_id = ${target_id}::int, updated_at = clock_timestamp()
              WHERE school_id = ${school_id} AND id = ${lead_id}::int
              RETURNING *
            )${taskRow}${notified}
            SELECT ${leadColumns} FROM l`
        }
      })

      const move = (schoolId: Ids.SchoolId, leadId: Ids.LeadId, statusId: LeadRules.PipelineStatusId) =>
        Effect.gen(function*() {
          const key = { school_id: schoolId, lead_id: leadId }
          const read = yield* Effect.orDie(readForMove({ ...key, status_id: statusId }))
          if (Option.isNone(read)) return yield* new DomainErrors.LeadNotFound({ leadId })
          const lead = read.value
          if (lead.target_id === null) return yield* new DomainErrors.StatusNotInFunnel({ leadId, statusId })
          const plan = LeadRules.automation(lead, { id: lead.target_id, auto_task_title: lead.auto_task_title })
          // The status it is already in: nothing runs (only a move runs the automation).
          if (!plan.moved) return yield* Effect.orDie(readLead(key))
          return yield* Effect.orDie(
            moveLead({ ...key, target_id: lead.target_id, task: plan.task, notification: plan.notification })
          )
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

      return Leads.of({ create, list: named("Leads.list", list), move: named("Leads.move", move) })
    })
  )
}
