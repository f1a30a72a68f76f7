/**
 * Each employee's inbox over a real socket against a real database
 * (docs/back-office.md "Leads, funnels and tasks"; docs/decisions.md
 * "Lead section and inbox"): only the caller's notifications, newest first, with
 * `meta.unread`; marking read keeps the first read time; someone else's or
 * another school's notification is 404 exactly like a missing one; tasks:
 * the caller's own, every task of the school for full access (unassigned
 * ones included), never another school's.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Leads } from "@school/domain"
import { Meta } from "@school/domain/Pagination"
import type { Role } from "@school/domain/Sessions"
import { NotificationsMeta } from "@school/domain/api/backoffice/LeadSection"
import * as BackOffice from "../support/BackOffice.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const strict = { onExcessProperty: "error" } as const

const NotificationsReply = Schema.Struct({
  success: Schema.Literal(true),
  data: Schema.Array(Leads.Notification),
  meta: NotificationsMeta
})
const TasksReply = Schema.Struct({ success: Schema.Literal(true), data: Schema.Array(Leads.Task), meta: Meta })

const decode = <A>(schema: Schema.Codec<A, unknown>, reply: { status: number; json: unknown; text: string }) => {
  assert.strictEqual(reply.status, 200, reply.text)
  return Schema.decodeUnknownSync(schema)(reply.json, strict)
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u

/**
 * Two schools. In A, three leads with responsibles (manager, manager,
 * teacher) and one without, each moved once into a status with a task: so
 * the manager has two tasks and two notifications, the teacher one each, and
 * one task is unassigned. In B, one lead of B's manager, moved likewise.
 */
class World extends Context.Service<World, {
  readonly a: BackOffice.StaffSchool
  readonly b: BackOffice.StaffSchool
  /** A's task ids by assignee ("none": unassigned). */
  readonly tasksA: Readonly<Record<"manager" | "teacher" | "none", ReadonlyArray<number>>>
  readonly tasksB: ReadonlyArray<number>
}>()("test/backoffice/inbox/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const a = yield* BackOffice.staffSchool()
      const b = yield* BackOffice.staffSchool()
      const taskStatus = (funnelId: number) =>
        Effect.map(
          sql<{ id: number }>`UPDATE pipeline_statuses SET auto_task_title = 'Call back'
                              WHERE funnel_id = ${funnelId} AND name = 'In progress' RETURNING id`,
          (rows) => rows[0]!.id
        )
      const statusA = yield* taskStatus(a.mainFunnelId)
      const statusB = yield* taskStatus(b.mainFunnelId)
      const ownerA = yield* BackOffice.crm(a.emails.owner)
      const ownerB = yield* BackOffice.crm(b.emails.owner)
      /** A lead with `responsible` (or none), moved into the status with a task; the task's id. */
      const moved = (owner: BackOffice.Crm, schoolId: number, statusId: number, responsible: number | null) =>
        Effect.gen(function*() {
          const lead = BackOffice.dataOf(
            Leads.CrmLead,
            yield* owner.post("/leads", { phone: "12345", name: `Lead of ${responsible}`, responsible_id: responsible }),
            201
          )
          BackOffice.dataOf(Leads.CrmLead, yield* owner.post(`/leads/${lead.id}/status`, { status_id: statusId }))
          const rows = yield* sql<{ id: number }>`SELECT id FROM tasks WHERE school_id = ${schoolId} AND lead_id = ${lead.id}`
          return rows[0]!.id
        })
      const m1 = yield* moved(ownerA, a.schoolId, statusA, a.ids.manager)
      const t1 = yield* moved(ownerA, a.schoolId, statusA, a.ids.teacher)
      const none = yield* moved(ownerA, a.schoolId, statusA, null)
      const m2 = yield* moved(ownerA, a.schoolId, statusA, a.ids.manager)
      const b1 = yield* moved(ownerB, b.schoolId, statusB, b.ids.manager)
      return World.of({ a, b, tasksA: { manager: [m1, m2], teacher: [t1], none: [none] }, tasksB: [b1] })
    }).pipe(Effect.orDie)
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true })("back-office inbox", (it) => {
  describe("GET /notifications", () => {
    it.effect("only the caller's, newest first, with meta.unread; subscription_id null; paginated", () =>
      Effect.gen(function*() {
        const { a, tasksA } = yield* World
        const manager = yield* BackOffice.crm(a.emails.manager)
        const reply = decode(NotificationsReply, yield* manager.get("/notifications"))
        assert.deepStrictEqual(reply.meta, { page: 1, per_page: 20, total: 2, unread: 2 })
        assert.deepStrictEqual(reply.data.map((n) => n.kind), ["task_assigned", "task_assigned"])
        const ids = reply.data.map((n) => n.id)
        assert.isAbove(ids[0]!, ids[1]!)
        // Newest first: the second task's notification comes first.
        assert.match(reply.data[0]!.message, /"Call back" for lead #\d+ \(Lead of \d+, 12345\)/u)
        for (const n of reply.data) {
          assert.strictEqual(n.subscription_id, null)
          assert.strictEqual(n.read_at, null)
          assert.match(n.created_at, TIMESTAMP)
        }
        assert.strictEqual(tasksA.manager.length, 2)

        const page2 = decode(NotificationsReply, yield* manager.get("/notifications?page=2&per_page=1"))
        assert.deepStrictEqual(page2.meta, { page: 2, per_page: 1, total: 2, unread: 2 })
        assert.deepStrictEqual(page2.data, [reply.data[1]!])

        // The teacher (any employee may call) has one; the owner and the administrator, who created nothing for themselves, none.
        const teacher = yield* BackOffice.crm(a.emails.teacher)
        const teachers = decode(NotificationsReply, yield* teacher.get("/notifications"))
        assert.strictEqual(teachers.data.length, 1)
        assert.notInclude(ids, teachers.data[0]!.id)
        for (const role of ["owner", "administrator"] as const) {
          const session = yield* BackOffice.crm(a.emails[role])
          assert.deepStrictEqual(
            decode(NotificationsReply, yield* session.get("/notifications")).meta,
            { page: 1, per_page: 20, total: 0, unread: 0 }
          )
        }
        BackOffice.expectError(yield* manager.get("/notifications?per_page=101"), 422, "VALIDATION_FAILED")
      }))
  })

  describe("POST /notifications/{id}/read", () => {
    it.effect("marks the caller's notification read; the first read time stays; the unread count drops", () =>
      Effect.gen(function*() {
        const { b } = yield* World
        const manager = yield* BackOffice.crm(b.emails.manager)
        const [notification] = decode(NotificationsReply, yield* manager.get("/notifications")).data
        const read = BackOffice.dataOf(Leads.Notification, yield* manager.post(`/notifications/${notification!.id}/read`))
        assert.deepStrictEqual(read, { ...notification!, read_at: read.read_at })
        assert.match(read.read_at ?? "", TIMESTAMP)
        const again = BackOffice.dataOf(Leads.Notification, yield* manager.post(`/notifications/${notification!.id}/read`))
        assert.deepStrictEqual(again, read)
        const list = decode(NotificationsReply, yield* manager.get("/notifications"))
        assert.deepStrictEqual(list.meta, { page: 1, per_page: 20, total: 1, unread: 0 })
        assert.deepStrictEqual(list.data, [read])
      }))

    it.effect("someone else's, another school's and a missing notification are the same 404; a bad id is 422", () =>
      Effect.gen(function*() {
        const { a, b } = yield* World
        const sql = yield* SqlClient.SqlClient
        const managerA = yield* BackOffice.crm(a.emails.manager)
        const [mine] = decode(NotificationsReply, yield* managerA.get("/notifications")).data
        const [ofB] = yield* sql<{ id: number }>`SELECT id FROM notifications WHERE school_id = ${b.schoolId}`
        const unread = () =>
          Effect.map(
            sql<{ n: number }>`SELECT count(*)::int AS n FROM notifications WHERE read_at IS NULL AND school_id = ${a.schoolId}`,
            (rows) => rows[0]!.n
          )
        const before = yield* unread()
        const readAtOfB = () =>
          Effect.map(
            sql<{ read_at: string | null }>`SELECT api_ts(read_at) AS read_at FROM notifications WHERE id = ${ofB!.id}`,
            (rows) => rows[0]!.read_at
          )
        const beforeB = yield* readAtOfB()
        const messages: Array<string> = []
        for (const role of ["owner", "administrator", "teacher"] as const satisfies ReadonlyArray<Role>) {
          const session = yield* BackOffice.crm(a.emails[role])
          const error = BackOffice.expectError(yield* session.post(`/notifications/${mine!.id}/read`), 404, "NOT_FOUND")
          messages.push(error.message.replace(String(mine!.id), "N"))
        }
        const foreign = BackOffice.expectError(yield* managerA.post(`/notifications/${ofB!.id}/read`), 404, "NOT_FOUND")
        messages.push(foreign.message.replace(String(ofB!.id), "N"))
        const missing = BackOffice.expectError(yield* managerA.post(`/notifications/2147483000/read`), 404, "NOT_FOUND")
        messages.push(missing.message.replace("2147483000", "N"))
        assert.strictEqual(new Set(messages).size, 1)
        assert.strictEqual(yield* unread(), before)
        assert.strictEqual(yield* readAtOfB(), beforeB)
        for (const id of ["abc", "0", "-1", "1.0"]) {
          const error = BackOffice.expectError(yield* managerA.post(`/notifications/${id}/read`), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["id"])
        }
      }))
  })

  describe("GET /tasks", () => {
    it.effect("a manager or a teacher sees their own; full access sees every task of the school, unassigned included", () =>
      Effect.gen(function*() {
        const { a, tasksA, tasksB } = yield* World
        const all = [...tasksA.manager, ...tasksA.teacher, ...tasksA.none].sort((x, y) => x - y)
        for (const role of ["owner", "administrator"] as const) {
          const session = yield* BackOffice.crm(a.emails[role])
          const reply = decode(TasksReply, yield* session.get("/tasks"))
          assert.deepStrictEqual(reply.data.map((task) => task.id), all)
          assert.deepStrictEqual(reply.meta, { page: 1, per_page: 20, total: 4 })
          const unassigned = reply.data.find((task) => task.id === tasksA.none[0]!)
          assert.strictEqual(unassigned?.assignee_id, null)
          assert.strictEqual(unassigned?.title, "Call back")
          assert.match(unassigned?.created_at ?? "", TIMESTAMP)
          for (const id of tasksB) assert.notInclude(reply.data.map((task) => task.id), id)
        }
        const manager = yield* BackOffice.crm(a.emails.manager)
        const own = decode(TasksReply, yield* manager.get("/tasks"))
        assert.deepStrictEqual(own.data.map((task) => task.id), [...tasksA.manager])
        assert.isTrue(own.data.every((task) => task.assignee_id === a.ids.manager))
        assert.strictEqual(own.meta.total, 2)
        const teacher = yield* BackOffice.crm(a.emails.teacher)
        assert.deepStrictEqual(decode(TasksReply, yield* teacher.get("/tasks")).data.map((task) => task.id), [...tasksA.teacher])

        const page = decode(TasksReply, yield* manager.get("/tasks?page=2&per_page=1"))
        assert.deepStrictEqual(page.data.map((task) => task.id), [tasksA.manager[1]!])
        assert.deepStrictEqual(page.meta, { page: 2, per_page: 1, total: 2 })
        BackOffice.expectError(yield* manager.get("/tasks?page=0"), 422, "VALIDATION_FAILED")
      }))
  })
})
