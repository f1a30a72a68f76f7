/**
 * Each employee's inbox in the back office (docs/back-office.md
 * "Leads, funnels and tasks"): their notifications, newest first, with the
 * count still unread; marking one read (the first read time stays); and the
 * tasks the funnel automation made: an employee's own, or every task of the school for
 * full access, unassigned ones included. Rows are written elsewhere: tasks
 * and `task_assigned` notifications by a lead's move (Leads.ts), the
 * dispatcher's `subscription_problematic` notifications by the dispatcher.
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
import { type PageResult, pageReader } from "./Paging.ts"
import { named } from "./Spans.ts"

/** The head every row of the notifications' page carries: both counts, and the row's id (NULL: empty page). */
const NotificationsHead = Schema.Struct({ total: Schema.Int, unread: Schema.Int, id: Schema.NullOr(Schema.Int) })
const decodeNotificationsHead = Schema.decodeUnknownEffect(NotificationsHead)
const decodeNotifications = Schema.decodeUnknownEffect(Schema.Array(LeadRules.Notification))

export interface NotificationsPage extends PageResult<LeadRules.Notification> {
  /** How many of the employee's notifications are unread, on any page. */
  readonly unread: number
}

/** Whose tasks a list shows: one employee's, or the whole school's. */
export type TaskScope =
  | { readonly _tag: "Assignee"; readonly employeeId: number }
  | { readonly _tag: "School" }

export class Inbox extends Context.Service<Inbox, {
  /** The employee's notifications, newest first, and their unread count. */
  notifications(schoolId: Ids.SchoolId, employeeId: number, page: Pagination.PageRequest): Effect.Effect<NotificationsPage>
  /** Marks the employee's own notification read; `NotificationNotFound` for anyone else's or a missing one. */
  markRead(
    schoolId: Ids.SchoolId,
    employeeId: number,
    id: LeadRules.NotificationId
  ): Effect.Effect<LeadRules.Notification, DomainErrors.NotificationNotFound>
  /** Tasks by ascending id, each with its lead's name (`LeadRules.taskLeadName`). */
  tasks(schoolId: Ids.SchoolId, scope: TaskScope, page: Pagination.PageRequest): Effect.Effect<PageResult<LeadRules.Task>>
}>()("school/persistence/Inbox") {
  static readonly layer = Layer.effect(
    Inbox,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const notificationColumns = sql`id, kind, message, subscription_id, api_ts(created_at) AS created_at,
        api_ts(read_at) AS read_at`

      const notifications = (schoolId: Ids.SchoolId, employeeId: number, page: Pagination.PageRequest) =>
        Effect.gen(function*() {
          const { limit, offset } = Pagination.toWindow(page)
          const mine = sql`school_id = ${schoolId} AND employee_id = ${employeeId}::int`
          // One round trip: both counts joined laterally with the page (Paging.ts), index notifications_employee.
          const rows = yield* sql`
            SELECT t.total, t.unread, p.*
            FROM (SELECT count(*)::int AS total, (count(*) FILTER (WHERE read_at IS NULL))::int AS unread
                  FROM notifications WHERE ${mine}) t
            LEFT JOIN LATERAL (
              SELECT ${notificationColumns} FROM notifications WHERE ${mine}
              ORDER BY id DESC LIMIT ${limit} OFFSET ${offset}
            ) p ON true`
          const head = yield* decodeNotificationsHead(rows[0])
          const items = head.id === null ? [] : yield* decodeNotifications(rows)
          return { items, total: head.total, unread: head.unread }
        }).pipe(Effect.orDie)

      const markOneRead = SqlSchema.findOneOption({
        Request: Schema.Struct({ school_id: Ids.SchoolId, employee_id: Schema.Number, id: LeadRules.NotificationId }),
        Result: LeadRules.Notification,
        execute: ({ employee_id, id, school_id }) =>
          sql`
            UPDATE notifications SET read_at = coalesce(read_at, clock_timestamp())
            WHERE school_id = ${school_id} AND employee_id = ${employee_id}::int AND id = ${id}::int
            RETURNING ${notificationColumns}`
      })
      const markRead = Effect.fn("Inbox.markRead")(function*(
        schoolId: Ids.SchoolId,
        employeeId: number,
        id: LeadRules.NotificationId
      ) {
        const marked = yield* Effect.orDie(markOneRead({ school_id: schoolId, employee_id: employeeId, id }))
        if (Option.isNone(marked)) return yield* new DomainErrors.NotificationNotFound({ notificationId: id })
        return marked.value
      })

      const readTasks = pageReader(sql, LeadRules.Task)
      const tasks = (schoolId: Ids.SchoolId, scope: TaskScope, page: Pagination.PageRequest) => {
        const { limit, offset } = Pagination.toWindow(page)
        const filter = scope._tag === "School"
          ? sql`task.school_id = ${schoolId}`
          : sql`task.school_id = ${schoolId} AND task.assignee_id = ${scope.employeeId}::int`
        // lead_name: LeadRules.taskLeadName in SQL (the name, else the phone); the lead by its primary key.
        return readTasks(
          sql`SELECT count(*)::int AS total FROM tasks task WHERE ${filter}`,
          sql`SELECT task.id, task.title, task.lead_id, task.assignee_id, api_ts(task.created_at) AS created_at,
                     CASE WHEN l.name = '' THEN l.phone ELSE l.name END AS lead_name
              FROM tasks task JOIN leads l ON l.school_id = task.school_id AND l.id = task.lead_id
              WHERE ${filter} ORDER BY task.id LIMIT ${limit} OFFSET ${offset}`
        )
      }

      return Inbox.of({
        notifications: named("Inbox.notifications", notifications),
        markRead,
        tasks: named("Inbox.tasks", tasks)
      })
    })
  )
}
