/**
 * The back office's lead section over a real socket against a real database
 * (docs/back-office.md "Leads, funnels and tasks"): POST /leads with the public
 * rules plus the responsible employee (lead.created, no automation), the
 * general lead list, POST /leads/{id}/status and its automation (once, also
 * under concurrent moves), GET and POST /funnels; the role of every call,
 * another school's ids as 404 (or 422 for a body reference), 422 with fields.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Events, Leads } from "@school/domain"
import { Meta } from "@school/domain/Pagination"
import * as BackOffice from "../support/BackOffice.ts"
import { V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const strict = { onExcessProperty: "error" } as const

const listOf = <S extends Schema.Top>(item: S) =>
  Schema.Struct({ success: Schema.Literal(true), data: Schema.Array(item), meta: Meta })

const pageOf = <A>(item: Schema.Codec<A, unknown>, reply: { status: number; json: unknown; text: string }) => {
  assert.strictEqual(reply.status, 200, reply.text)
  return Schema.decodeUnknownSync(listOf(item))(reply.json, strict)
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u

/** Two schools with staff; the main funnel's statuses of A (Incoming 10, In progress 20, Won 30, Lost 40). */
class World extends Context.Service<World, {
  readonly a: BackOffice.StaffSchool
  readonly b: BackOffice.StaffSchool
  /** A's main funnel statuses by name. */
  readonly mainA: Readonly<Record<string, number>>
  readonly mainB: Readonly<Record<string, number>>
  readonly keyA: string
}>()("test/backoffice/leads/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const a = yield* BackOffice.staffSchool()
      const b = yield* BackOffice.staffSchool()
      const statuses = (funnelId: number) =>
        Effect.map(
          sql<{ id: number; name: string }>`SELECT id, name FROM pipeline_statuses WHERE funnel_id = ${funnelId}`,
          (rows) => Object.fromEntries(rows.map((row) => [row.name, row.id]))
        )
      const mainA = yield* statuses(a.mainFunnelId)
      // "In progress" of A's main funnel makes a task; the others do not.
      yield* sql`UPDATE pipeline_statuses SET auto_task_title = 'Call the client back' WHERE id = ${mainA["In progress"]!}`
      return World.of({
        a,
        b,
        mainA,
        mainB: yield* statuses(b.mainFunnelId),
        keyA: yield* Fixtures.key(a.schoolId, { scope: "write" })
      })
    }).pipe(Effect.orDie)
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

interface TaskRow {
  readonly id: number
  readonly title: string
  readonly lead_id: number
  readonly assignee_id: number | null
}
interface NotificationRow {
  readonly employee_id: number
  readonly kind: string
  readonly message: string
  readonly task_id: number | null
}

const tasksOf = (schoolId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<TaskRow>`SELECT id, title, lead_id, assignee_id FROM tasks WHERE school_id = ${schoolId} ORDER BY id`
  }).pipe(Effect.orDie)
const notificationsOf = (schoolId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<NotificationRow>`
      SELECT employee_id, kind, message, task_id FROM notifications WHERE school_id = ${schoolId} ORDER BY id`
  }).pipe(Effect.orDie)
const leadRow = (schoolId: number, id: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ pipeline_status_id: number; responsible_id: number | null }>`
      SELECT pipeline_status_id, responsible_id FROM leads WHERE school_id = ${schoolId} AND id = ${id}`
    return rows[0]
  }).pipe(Effect.orDie)

/** Creates a lead in the back office as `email` (201 asserted). */
const crmLead = (email: string, body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const session = yield* BackOffice.crm(email)
    return BackOffice.dataOf(Leads.CrmLead, yield* session.post("/leads", body), 201)
  })

/** Creates a lead through the public API (no responsible). */
const apiLead = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    const reply = yield* server.raw.post(`${V1}/leads`, {
      key: world.keyA,
      idempotencyKey: `crm-test-${Math.random().toString(36).slice(2)}`,
      body
    })
    assert.strictEqual(reply.status, 201, reply.text)
    return Schema.decodeUnknownSync(Schema.Struct({ data: Leads.Lead }))(reply.json).data
  })

layer(Env, { excludeTestServices: true })("back-office lead section", (it) => {
  describe("POST /leads", () => {
    it.effect("201 with the lead in the lowest-priority status; one lead.created with the exact payload; no automation", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { a } = world
        const eventsBefore = yield* Fixtures.outbox(a.schoolId)
        const lead = yield* crmLead(a.emails.manager, {
          phone: " +7 (999) 123-45-67 ",
          name: "  Ivan Petrov ",
          comment: "wants a trial",
          source: "phone call",
          responsible_id: a.ids.manager
        })
        assert.deepStrictEqual(lead, {
          id: lead.id,
          name: "Ivan Petrov",
          phone: "+7 (999) 123-45-67",
          source: "phone call",
          comment: "wants a trial",
          funnel_id: 0,
          pipeline_status_id: world.mainA["Incoming"]!,
          responsible_id: a.ids.manager,
          created_at: lead.created_at
        })
        assert.match(lead.created_at, TIMESTAMP)
        // Nothing runs on creation, even though the funnel has automation.
        assert.deepStrictEqual(yield* tasksOf(a.schoolId), [])
        assert.deepStrictEqual(yield* notificationsOf(a.schoolId), [])
        const events = (yield* Fixtures.outbox(a.schoolId)).slice(eventsBefore.length)
        assert.strictEqual(events.length, 1)
        assert.strictEqual(events[0]!.event, "lead.created")
        const payload: unknown = JSON.parse(events[0]!.payload)
        assert.deepStrictEqual(Schema.decodeUnknownSync(Events.LeadCreated)(payload, Events.strict), {
          lead_id: lead.id,
          name: "Ivan Petrov",
          phone: "+7 (999) 123-45-67",
          source: "phone call"
        })
      }))

    it.effect("the public defaults but source crm: name \"\", the main funnel, no responsible; funnel_id picks a funnel of the school", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const owner = yield* BackOffice.crm(a.emails.owner)
        const funnel = yield* Fixtures.funnel(a.schoolId, "Courses", false, [["B", 5], ["A", -3]])
        const plain = BackOffice.dataOf(Leads.CrmLead, yield* owner.post("/leads", { phone: "12345" }), 201)
        assert.strictEqual(plain.source, "crm")
        assert.strictEqual(plain.name, "")
        assert.strictEqual(plain.comment, "")
        assert.strictEqual(plain.funnel_id, 0)
        assert.strictEqual(plain.responsible_id, null)
        const inFunnel = BackOffice.dataOf(
          Leads.CrmLead,
          yield* owner.post("/leads", { phone: "12345", funnel_id: funnel.funnelId, responsible_id: a.ids.teacher }),
          201
        )
        assert.strictEqual(inFunnel.funnel_id, funnel.funnelId)
        assert.strictEqual(inFunnel.pipeline_status_id, funnel.statusIds[1]!)
        assert.strictEqual(inFunnel.responsible_id, a.ids.teacher)
      }))

    it.effect("422 with fields: a funnel or a responsible of another school (or missing), bad phone and types; nothing written", () =>
      Effect.gen(function*() {
        const { a, b } = yield* World
        const admin = yield* BackOffice.crm(a.emails.administrator)
        const funnelOfB = yield* Fixtures.funnel(b.schoolId, "B's", false, [["X", 1]])
        const leadsBefore = yield* Fixtures.count("leads", a.schoolId)
        const eventsBefore = yield* Fixtures.count("outbox_events", a.schoolId)
        const cases: ReadonlyArray<readonly [body: unknown, fields: ReadonlyArray<string>]> = [
          [{ phone: "12345", funnel_id: funnelOfB.funnelId }, ["funnel_id"]],
          [{ phone: "12345", funnel_id: 2147483000 }, ["funnel_id"]],
          [{ phone: "12345", responsible_id: b.ids.owner }, ["responsible_id"]],
          [{ phone: "12345", responsible_id: 2147483000 }, ["responsible_id"]],
          [{ phone: "12345", funnel_id: funnelOfB.funnelId, responsible_id: b.ids.manager }, ["funnel_id", "responsible_id"]],
          [{}, ["phone"]],
          [{ phone: "12" }, ["phone"]],
          [{ phone: "12345", responsible_id: 0 }, ["responsible_id"]],
          [{ phone: "12345", responsible_id: "1" }, ["responsible_id"]],
          [{ phone: "12345", funnel_id: -1 }, ["funnel_id"]],
          [{ phone: "12345", name: "x".repeat(256), comment: 5 }, ["comment", "name"]]
        ]
        for (const [body, fields] of cases) {
          const error = BackOffice.expectError(yield* admin.post("/leads", body), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), [...fields], JSON.stringify(body))
        }
        assert.strictEqual(yield* Fixtures.count("leads", a.schoolId), leadsBefore)
        assert.strictEqual(yield* Fixtures.count("outbox_events", a.schoolId), eventsBefore)
      }))

    it.effect("a teacher gets 403 FORBIDDEN and nothing is written", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const teacher = yield* BackOffice.crm(a.emails.teacher)
        const leadsBefore = yield* Fixtures.count("leads", a.schoolId)
        const eventsBefore = yield* Fixtures.count("outbox_events", a.schoolId)
        BackOffice.expectError(yield* teacher.post("/leads", { phone: "12345" }), 403, "FORBIDDEN")
        assert.strictEqual(yield* Fixtures.count("leads", a.schoolId), leadsBefore)
        assert.strictEqual(yield* Fixtures.count("outbox_events", a.schoolId), eventsBefore)
      }))
  })

  describe("GET /leads", () => {
    it.effect("the school's general list newest first, API leads included, paginated; never another school's", () =>
      Effect.gen(function*() {
        const { a, b } = yield* World
        const api = yield* apiLead({ phone: "55555", name: "From the site" })
        const mine = yield* crmLead(a.emails.owner, { phone: "66666", responsible_id: a.ids.administrator })
        const other = yield* crmLead(b.emails.owner, { phone: "77777" })
        const manager = yield* BackOffice.crm(a.emails.manager)
        const all = pageOf(Leads.CrmLead, yield* manager.get("/leads?per_page=100"))
        const ids = all.data.map((lead) => lead.id)
        assert.deepStrictEqual(ids, [...ids].sort((x, y) => y - x))
        assert.strictEqual(all.meta.total, yield* Fixtures.count("leads", a.schoolId))
        assert.notInclude(ids, other.id)
        const seen = all.data.find((lead) => lead.id === api.id)
        assert.deepStrictEqual(seen, { ...api, responsible_id: null })
        assert.deepStrictEqual(all.data.find((lead) => lead.id === mine.id), mine)

        const page2 = pageOf(Leads.CrmLead, yield* manager.get("/leads?page=2&per_page=1"))
        assert.deepStrictEqual(page2.meta, { page: 2, per_page: 1, total: all.meta.total })
        assert.deepStrictEqual(page2.data, [all.data[1]!])
        const past = pageOf(Leads.CrmLead, yield* manager.get("/leads?page=1000"))
        assert.deepStrictEqual(past.data, [])
        assert.strictEqual(past.meta.total, all.meta.total)

        for (const query of ["per_page=101", "per_page=0", "page=0", "page=1.0"]) {
          const error = BackOffice.expectError(yield* manager.get(`/leads?${query}`), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), [query.split("=")[0]!])
        }
        const teacher = yield* BackOffice.crm(a.emails.teacher)
        BackOffice.expectError(yield* teacher.get("/leads"), 403, "FORBIDDEN")
      }))
  })

  describe("POST /leads/{id}/status", () => {
    it.effect("runs the target's automation once: a task for the responsible and a notification to them; the outbox untouched", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { a } = world
        const lead = yield* crmLead(a.emails.owner, { phone: "+7 900 111-22-33", name: "Anna", responsible_id: a.ids.manager })
        const manager = yield* BackOffice.crm(a.emails.manager)
        const tasksBefore = (yield* tasksOf(a.schoolId)).length
        const notificationsBefore = (yield* notificationsOf(a.schoolId)).length
        const eventsBefore = yield* Fixtures.count("outbox_events", a.schoolId)

        const moved = BackOffice.dataOf(
          Leads.CrmLead,
          yield* manager.post(`/leads/${lead.id}/status`, { status_id: world.mainA["In progress"]! })
        )
        assert.deepStrictEqual(moved, { ...lead, pipeline_status_id: world.mainA["In progress"]! })
        const tasks = (yield* tasksOf(a.schoolId)).slice(tasksBefore)
        assert.deepStrictEqual(tasks.map(({ id: _, ...task }) => task), [
          { title: "Call the client back", lead_id: lead.id, assignee_id: a.ids.manager }
        ])
        const notifications = (yield* notificationsOf(a.schoolId)).slice(notificationsBefore)
        assert.deepStrictEqual(notifications, [{
          employee_id: a.ids.manager,
          kind: "task_assigned",
          message: `New task "Call the client back" for lead #${lead.id} (Anna, +7 900 111-22-33)`,
          task_id: tasks[0]!.id
        }])
        assert.strictEqual(yield* Fixtures.count("outbox_events", a.schoolId), eventsBefore)

        // The status it is already in: 200, nothing runs.
        const again = BackOffice.dataOf(
          Leads.CrmLead,
          yield* manager.post(`/leads/${lead.id}/status`, { status_id: world.mainA["In progress"]! })
        )
        assert.deepStrictEqual(again, moved)
        // A status without a task title: moved, nothing runs.
        const won = BackOffice.dataOf(
          Leads.CrmLead,
          yield* manager.post(`/leads/${lead.id}/status`, { status_id: world.mainA["Won"]! })
        )
        assert.strictEqual(won.pipeline_status_id, world.mainA["Won"]!)
        assert.strictEqual((yield* tasksOf(a.schoolId)).length, tasksBefore + 1)
        assert.strictEqual((yield* notificationsOf(a.schoolId)).length, notificationsBefore + 1)
        // Back into the status with automation: it runs again (a new explicit move).
        yield* manager.post(`/leads/${lead.id}/status`, { status_id: world.mainA["In progress"]! })
        assert.strictEqual((yield* tasksOf(a.schoolId)).length, tasksBefore + 2)
        assert.strictEqual((yield* notificationsOf(a.schoolId)).length, notificationsBefore + 2)
        assert.strictEqual(yield* Fixtures.count("outbox_events", a.schoolId), eventsBefore)
      }))

    it.effect("an API lead (no responsible): an unassigned task and no notification", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { a } = world
        const lead = yield* apiLead({ phone: "12345", name: "Site visitor" })
        const admin = yield* BackOffice.crm(a.emails.administrator)
        const tasksBefore = (yield* tasksOf(a.schoolId)).length
        const notificationsBefore = (yield* notificationsOf(a.schoolId)).length
        const moved = BackOffice.dataOf(
          Leads.CrmLead,
          yield* admin.post(`/leads/${lead.id}/status`, { status_id: world.mainA["In progress"]! })
        )
        assert.strictEqual(moved.responsible_id, null)
        assert.deepStrictEqual((yield* tasksOf(a.schoolId)).slice(tasksBefore).map(({ id: _, ...task }) => task), [
          { title: "Call the client back", lead_id: lead.id, assignee_id: null }
        ])
        assert.strictEqual((yield* notificationsOf(a.schoolId)).length, notificationsBefore)
      }))

    it.effect("a lead of another funnel moves within its own funnel; a status of another funnel is 422 status_id", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { a, b } = world
        const owner = yield* BackOffice.crm(a.emails.owner)
        const funnel = BackOffice.dataOf(
          Leads.Funnel,
          yield* owner.post("/funnels", {
            name: "Courses",
            statuses: [{ name: "New", priority: 1 }, { name: "Trial", priority: 2, auto_task_title: "Book a trial" }]
          }),
          201
        )
        const [fresh, trial] = funnel.statuses
        const lead = yield* crmLead(a.emails.owner, { phone: "12345", funnel_id: funnel.id, responsible_id: a.ids.owner })
        assert.strictEqual(lead.pipeline_status_id, fresh!.id)
        const before = yield* leadRow(a.schoolId, lead.id)
        for (const statusId of [world.mainA["Won"]!, world.mainB["Won"]!, 2147483000]) {
          const error = BackOffice.expectError(
            yield* owner.post(`/leads/${lead.id}/status`, { status_id: statusId }),
            422,
            "VALIDATION_FAILED"
          )
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["status_id"])
        }
        // A main-funnel lead cannot go to the custom funnel's status either.
        const mainLead = yield* crmLead(a.emails.owner, { phone: "12345" })
        BackOffice.expectError(yield* owner.post(`/leads/${mainLead.id}/status`, { status_id: trial!.id }), 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(yield* leadRow(a.schoolId, lead.id), before)

        const moved = BackOffice.dataOf(Leads.CrmLead, yield* owner.post(`/leads/${lead.id}/status`, { status_id: trial!.id }))
        assert.strictEqual(moved.pipeline_status_id, trial!.id)
        const tasks = yield* tasksOf(a.schoolId)
        assert.deepStrictEqual(tasks.at(-1), { id: tasks.at(-1)!.id, title: "Book a trial", lead_id: lead.id, assignee_id: a.ids.owner })
        // Another school's staff cannot reach it.
        const otherOwner = yield* BackOffice.crm(b.emails.owner)
        BackOffice.expectError(
          yield* otherOwner.post(`/leads/${lead.id}/status`, { status_id: world.mainB["Won"]! }),
          404,
          "NOT_FOUND"
        )
      }))

    it.effect("404 for another school's lead exactly as for a missing one; 422 for a bad id or body; 403 for a teacher", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { a, b } = world
        const leadOfB = yield* crmLead(b.emails.owner, { phone: "12345", responsible_id: b.ids.manager })
        const manager = yield* BackOffice.crm(a.emails.manager)
        const tasksBefore = (yield* tasksOf(b.schoolId)).length
        const foreign = BackOffice.expectError(
          yield* manager.post(`/leads/${leadOfB.id}/status`, { status_id: world.mainA["In progress"]! }),
          404,
          "NOT_FOUND"
        )
        const missing = BackOffice.expectError(
          yield* manager.post(`/leads/2147483000/status`, { status_id: world.mainA["In progress"]! }),
          404,
          "NOT_FOUND"
        )
        assert.strictEqual(foreign.message.replace(String(leadOfB.id), "N"), missing.message.replace("2147483000", "N"))
        assert.deepStrictEqual(yield* leadRow(b.schoolId, leadOfB.id), {
          pipeline_status_id: leadOfB.pipeline_status_id,
          responsible_id: b.ids.manager
        })
        assert.strictEqual((yield* tasksOf(b.schoolId)).length, tasksBefore)

        const lead = yield* crmLead(a.emails.manager, { phone: "12345", responsible_id: a.ids.manager })
        for (
          const [path, body, field] of [
            [`/leads/abc/status`, { status_id: 1 }, "id"],
            [`/leads/0/status`, { status_id: 1 }, "id"],
            [`/leads/${lead.id}/status`, {}, "status_id"],
            [`/leads/${lead.id}/status`, { status_id: "1" }, "status_id"],
            [`/leads/${lead.id}/status`, { status_id: 0 }, "status_id"]
          ] as const
        ) {
          const error = BackOffice.expectError(yield* manager.post(path, body), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), [field], path)
        }
        const teacher = yield* BackOffice.crm(a.emails.teacher)
        const tasksOfA = (yield* tasksOf(a.schoolId)).length
        BackOffice.expectError(
          yield* teacher.post(`/leads/${lead.id}/status`, { status_id: world.mainA["In progress"]! }),
          403,
          "FORBIDDEN"
        )
        assert.strictEqual((yield* leadRow(a.schoolId, lead.id))?.pipeline_status_id, world.mainA["Incoming"]!)
        assert.strictEqual((yield* tasksOf(a.schoolId)).length, tasksOfA)
      }))

    it.effect("concurrent moves to the same status: every one answers 200, the automation runs exactly once", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { a } = world
        const sessions = [
          yield* BackOffice.crm(a.emails.owner),
          yield* BackOffice.crm(a.emails.administrator),
          yield* BackOffice.crm(a.emails.manager)
        ]
        for (let round = 0; round < 3; round++) {
          const lead = yield* crmLead(a.emails.manager, { phone: "12345", responsible_id: a.ids.administrator })
          const tasksBefore = (yield* tasksOf(a.schoolId)).length
          const notificationsBefore = (yield* notificationsOf(a.schoolId)).length
          const replies = yield* Effect.all(
            Array.from({ length: 12 }, (_, i) =>
              sessions[i % sessions.length]!.post(`/leads/${lead.id}/status`, { status_id: world.mainA["In progress"]! })),
            { concurrency: "unbounded" }
          )
          for (const reply of replies) {
            assert.strictEqual(BackOffice.dataOf(Leads.CrmLead, reply).pipeline_status_id, world.mainA["In progress"]!)
          }
          const tasks = (yield* tasksOf(a.schoolId)).slice(tasksBefore)
          assert.deepStrictEqual(tasks.map((task) => task.lead_id), [lead.id])
          const notifications = (yield* notificationsOf(a.schoolId)).slice(notificationsBefore)
          assert.deepStrictEqual(notifications.map((n) => [n.employee_id, n.task_id]), [[a.ids.administrator, tasks[0]!.id]])
        }
      }))
  })

  describe("funnels", () => {
    it.effect("GET /funnels: the school's funnels, each with its statuses by priority; never another school's", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { a, b } = world
        const ofB = yield* Fixtures.funnel(b.schoolId, "Only B", false, [["X", 1]])
        const manager = yield* BackOffice.crm(a.emails.manager)
        const page = pageOf(Leads.Funnel, yield* manager.get("/funnels?per_page=100"))
        assert.notInclude(page.data.map((funnel) => funnel.id), ofB.funnelId)
        assert.strictEqual(page.meta.total, page.data.length)
        const main = page.data.find((funnel) => funnel.id === a.mainFunnelId)
        assert.deepStrictEqual(main, {
          id: a.mainFunnelId,
          name: "Main funnel",
          is_main: true,
          statuses: [
            { id: world.mainA["Incoming"]!, name: "Incoming", priority: 10, auto_task_title: null },
            { id: world.mainA["In progress"]!, name: "In progress", priority: 20, auto_task_title: "Call the client back" },
            { id: world.mainA["Won"]!, name: "Won", priority: 30, auto_task_title: null },
            { id: world.mainA["Lost"]!, name: "Lost", priority: 40, auto_task_title: null }
          ]
        })
        const ids = page.data.map((funnel) => funnel.id)
        assert.deepStrictEqual(ids, [...ids].sort((x, y) => x - y))
        const teacher = yield* BackOffice.crm(a.emails.teacher)
        BackOffice.expectError(yield* teacher.get("/funnels"), 403, "FORBIDDEN")
      }))

    it.effect("POST /funnels: 201 with the funnel and its statuses by priority, trimmed; \"\" or no title is no automation", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const admin = yield* BackOffice.crm(a.emails.administrator)
        const funnel = BackOffice.dataOf(
          Leads.Funnel,
          yield* admin.post("/funnels", {
            name: "  Summer camp ",
            statuses: [
              { name: "Paid", priority: 30, auto_task_title: "  Send the invoice " },
              { name: "New", priority: -5 },
              { name: "Called", priority: 7, auto_task_title: "" },
              { name: "Lost", priority: 40, auto_task_title: null }
            ]
          }),
          201
        )
        assert.strictEqual(funnel.name, "Summer camp")
        assert.strictEqual(funnel.is_main, false)
        assert.deepStrictEqual(funnel.statuses.map(({ id: _, ...status }) => status), [
          { name: "New", priority: -5, auto_task_title: null },
          { name: "Called", priority: 7, auto_task_title: null },
          { name: "Paid", priority: 30, auto_task_title: "Send the invoice" },
          { name: "Lost", priority: 40, auto_task_title: null }
        ])
        const listed = pageOf(Leads.Funnel, yield* admin.get("/funnels?per_page=100")).data.find((f) => f.id === funnel.id)
        assert.deepStrictEqual(listed, funnel)
        // A new lead of this funnel starts in its lowest priority.
        const lead = yield* crmLead(a.emails.administrator, { phone: "12345", funnel_id: funnel.id })
        assert.strictEqual(lead.pipeline_status_id, funnel.statuses[0]!.id)
      }))

    it.effect("POST /funnels: 422 with fields (no status, repeated priorities, names, types); 403 for a manager and a teacher", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const owner = yield* BackOffice.crm(a.emails.owner)
        const sql = yield* SqlClient.SqlClient
        const funnels = () =>
          Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM funnels WHERE school_id = ${a.schoolId}`, (r) => r[0]!.n)
            .pipe(Effect.orDie)
        const before = yield* funnels()
        const status = { name: "New", priority: 1 }
        const cases: ReadonlyArray<readonly [body: unknown, fields: ReadonlyArray<string>]> = [
          [{ name: "F", statuses: [] }, ["statuses"]],
          [{ name: "F" }, ["statuses"]],
          [{ name: "F", statuses: [status, { name: "Other", priority: 1 }] }, ["statuses"]],
          [{ name: "F", statuses: [{ name: "X", priority: 1.5 }] }, ["statuses"]],
          [{ name: "F", statuses: [{ name: " ", priority: 1 }] }, ["statuses"]],
          [{ name: "F", statuses: [{ name: "X", priority: 2 ** 31 }] }, ["statuses"]],
          [{ name: "F", statuses: [{ name: "X", priority: 1, auto_task_title: "t".repeat(256) }] }, ["statuses"]],
          [{ name: "F", statuses: Array.from({ length: 101 }, (_, i) => ({ name: `S${i}`, priority: i })) }, ["statuses"]],
          [{ name: "   ", statuses: [status] }, ["name"]],
          [{ statuses: "no" }, ["name", "statuses"]]
        ]
        for (const [body, fields] of cases) {
          const error = BackOffice.expectError(yield* owner.post("/funnels", body), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), [...fields], JSON.stringify(body).slice(0, 200))
        }
        for (const role of ["manager", "teacher"] as const) {
          const session = yield* BackOffice.crm(a.emails[role])
          BackOffice.expectError(yield* session.post("/funnels", { name: "F", statuses: [status] }), 403, "FORBIDDEN")
        }
        assert.strictEqual(yield* funnels(), before)
      }))
  })
})
