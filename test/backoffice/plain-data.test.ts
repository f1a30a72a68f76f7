/**
 * What the panel's leads and webhook pages read, as the back office answers
 * it over a real socket against a real database (docs/back-office.md "Leads,
 * funnels and tasks" and "Webhooks"): `GET /leads` newest first, page 2
 * continuing page 1, read backwards along the primary key (EXPLAIN over a
 * few thousand leads: no sort); `GET /tasks` naming each task's lead
 * (`lead_name`: its name as it is now, else its phone); and one delivery's
 * attempts with the start of the receiver's answer (`response_excerpt`) and
 * the error kind, from real attempts of the real dispatcher process against
 * a loopback receiver that answers 500 with a body, a body past the 4 KiB
 * the dispatcher keeps, nothing (a time-out), and an empty 404.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Leads } from "@school/domain"
import { Meta } from "@school/domain/Pagination"
import { DeliveryDetail, JournalEntry, RESPONSE_EXCERPT_BYTES } from "@school/domain/WebhookSubscriptions"
import * as BackOffice from "../support/BackOffice.ts"
import { eventually, subscription } from "../dispatcher/support.ts"
import { startDispatcher } from "../support/Processes.ts"
import * as Receivers from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const strict = { onExcessProperty: "error" } as const
const listOf = <S extends Schema.Top>(item: S) =>
  Schema.Struct({ success: Schema.Literal(true), data: Schema.Array(item), meta: Meta })
const pageOf = <A>(item: Schema.Codec<A, unknown>, reply: { status: number; json: unknown; text: string }) => {
  assert.strictEqual(reply.status, 200, reply.text)
  return Schema.decodeUnknownSync(listOf(item))(reply.json, strict)
}

/** The dispatcher process: loopback receivers allowed, retries 100 ms apart, a 1 s time-out (the hanging attempt). */
const DISPATCHER = {
  WEBHOOK_ALLOW_INSECURE_URLS: "true",
  WEBHOOK_RETRY_DELAYS: "100ms,100ms,100ms",
  WEBHOOK_TIMEOUT: "1s"
}

/** What the receiver answers the first attempt: markup and quotes, to be shown as text. */
const FIRST_BODY = `{"error":"<img src=x onerror=alert(1)>","detail":"database \\"main\\" is restarting"}`
/** The second: past the 4 KiB kept, with a 2-byte character cut at the limit ("a" + 2,047 "é" + half of one). */
const LONG_BODY = `a${"é".repeat(3000)}`

/** One school with staff; the dispatcher process over this file's database. */
class World extends Context.Service<World, { readonly school: BackOffice.StaffSchool }>()("test/backoffice/plain-data/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const database = yield* TestDatabase
      yield* Effect.orDie(startDispatcher(database.url, DISPATCHER))
      return World.of({ school: yield* BackOffice.staffSchool() })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true, timeout: 60_000 })("the panel's leads and webhook data", (it) => {
  describe("GET /leads", () => {
    it.effect("newest first: the lead just made is the first of page 1, and page 2 continues where page 1 ended", () =>
      Effect.gen(function*() {
        const { school } = yield* World
        const owner = yield* BackOffice.crm(school.emails.owner)
        const made: Array<number> = []
        for (let n = 1; n <= 5; n++) {
          made.push(BackOffice.dataOf(Leads.CrmLead, yield* owner.post("/leads", { phone: `+7 999 100-00-0${n}`, name: `Lead ${n}` }), 201).id)
        }
        const all = pageOf(Leads.CrmLead, yield* owner.get("/leads?per_page=100"))
        const ids = all.data.map((lead) => lead.id)
        assert.deepStrictEqual(ids.slice(0, 5), [...made].reverse())
        assert.deepStrictEqual(ids, [...ids].sort((x, y) => y - x))
        const pages = []
        for (let page = 1; page <= Math.ceil(all.meta.total / 2); page++) {
          const reply = pageOf(Leads.CrmLead, yield* owner.get(`/leads?page=${page}&per_page=2`))
          assert.deepStrictEqual(reply.meta, { page, per_page: 2, total: all.meta.total })
          pages.push(...reply.data.map((lead) => lead.id))
        }
        assert.deepStrictEqual(pages, ids)
        assert.strictEqual(pages[0], made.at(-1))
      }))

    it.effect("read backwards along the primary key (leads_pkey): no sort, on a few thousand leads of several schools", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { school } = yield* World
        const other = yield* BackOffice.staffSchool()
        const status = (funnelId: number) =>
          Effect.map(
            sql<{ id: number }>`SELECT id FROM pipeline_statuses WHERE funnel_id = ${funnelId} ORDER BY priority, id LIMIT 1`,
            (rows) => rows[0]!.id
          )
        for (const { schoolId, mainFunnelId } of [school, other]) {
          const first = yield* status(mainFunnelId)
          yield* sql`
            INSERT INTO leads (school_id, name, phone, pipeline_status_id)
            SELECT ${schoolId}, 'Bulk ' || g, '+79000000000', ${first}
            FROM generate_series(1, 3000) g`
        }
        yield* sql`ANALYZE leads`
        // Libs/persistence/src/Leads.ts `list`'s page statement, at page 1 and at page 40 (per_page 20).
        for (const offset of [0, 780]) {
          const plan = yield* sql<{ "QUERY PLAN": string }>`
            EXPLAIN SELECT l.id, l.name, l.phone FROM leads l WHERE l.school_id = ${school.schoolId}
            ORDER BY l.id DESC LIMIT 20 OFFSET ${offset}`
          const text = plan.map((row) => row["QUERY PLAN"]).join("\n")
          assert.include(text, "Index Scan Backward using leads_pkey", text)
          assert.notInclude(text, "Sort", text)
        }
        const owner = yield* BackOffice.crm(school.emails.owner)
        const first = pageOf(Leads.CrmLead, yield* owner.get("/leads?per_page=1"))
        const [newest] = yield* sql<{ id: number }>`SELECT max(id) AS id FROM leads WHERE school_id = ${school.schoolId}`
        assert.strictEqual(first.data[0]?.id, newest?.id)
        assert.strictEqual(first.data[0]?.name, "Bulk 3000")
      }).pipe(Effect.orDie))
  })

  describe("GET /tasks", () => {
    it.effect("each task carries lead_name: the lead's name as it is now, or its phone when it has none (taskLeadName)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { school } = yield* World
        const owner = yield* BackOffice.crm(school.emails.owner)
        const funnel = BackOffice.dataOf(
          Leads.Funnel,
          yield* owner.post("/funnels", {
            name: "Courses",
            statuses: [{ name: "New", priority: 10 }, { name: "Call", priority: 20, auto_task_title: "Call back" }]
          }),
          201
        )
        const call = funnel.statuses[1]!.id
        const named = BackOffice.dataOf(
          Leads.CrmLead,
          yield* owner.post("/leads", { phone: "+7 999 200-00-01", name: "Anna Ivanova", funnel_id: funnel.id, responsible_id: school.ids.manager }),
          201
        )
        const unnamed = BackOffice.dataOf(
          Leads.CrmLead,
          yield* owner.post("/leads", { phone: "+7 999 200-00-02", funnel_id: funnel.id }),
          201
        )
        for (const lead of [named, unnamed]) {
          BackOffice.dataOf(Leads.CrmLead, yield* owner.post(`/leads/${lead.id}/status`, { status_id: call }))
        }
        const tasks = pageOf(Leads.Task, yield* owner.get("/tasks?per_page=100")).data
        const of = (leadId: number) => tasks.find((task) => task.lead_id === leadId)
        assert.strictEqual(of(named.id)?.lead_name, "Anna Ivanova")
        assert.strictEqual(of(unnamed.id)?.lead_name, "+7 999 200-00-02")
        for (const lead of [named, unnamed]) assert.strictEqual(of(lead.id)?.lead_name, Leads.taskLeadName(lead))
        // Every existing field is still there, with its value.
        assert.deepStrictEqual(
          { ...of(named.id)!, id: 0, created_at: "" },
          { id: 0, title: "Call back", lead_id: named.id, assignee_id: school.ids.manager, created_at: "", lead_name: "Anna Ivanova" }
        )

        // The lead's name as it is now; the manager's own list names it too.
        yield* sql`UPDATE leads SET name = 'Anna Petrova' WHERE school_id = ${school.schoolId} AND id = ${named.id}`
        const manager = yield* BackOffice.crm(school.emails.manager)
        const mine = pageOf(Leads.Task, yield* manager.get("/tasks")).data
        assert.deepStrictEqual(mine.map((task) => [task.lead_id, task.lead_name]), [[named.id, "Anna Petrova"]])
      }).pipe(Effect.orDie))
  })

  describe("GET /webhooks/{id}/deliveries/{delivery_id}", () => {
    it.effect("each attempt carries the start of the receiver's answer as text (at most 4 KiB, null when none) and the error kind", () =>
      Effect.gen(function*() {
        const { school } = yield* World
        const receiver = yield* Receivers.startReceiver((index) =>
          index === 0
            ? Receivers.status(500, FIRST_BODY)
            : index === 1
            ? Receivers.status(503, LONG_BODY)
            : index === 2
            ? Receivers.hang
            : Receivers.status(404, "")
        )
        const hook = yield* subscription(school.schoolId, receiver.url, ["lead.created"])
        const owner = yield* BackOffice.crm(school.emails.owner)
        BackOffice.dataOf(Schema.Struct({ event_id: Schema.Int }), yield* owner.post(`/webhooks/${hook.id}/test`), 202)
        const journal = yield* eventually(
          "the test delivery fails after 4 attempts",
          Effect.map(owner.get(`/webhooks/${hook.id}/deliveries`), (reply) => BackOffice.dataOf(Schema.Array(JournalEntry), reply)),
          (entries) => entries[0]?.status === "failed",
          20_000
        )
        const detail = BackOffice.dataOf(DeliveryDetail, yield* owner.get(`/webhooks/${hook.id}/deliveries/${journal[0]!.id}`))
        const attempts = detail.attempts_detail.map(({ at: _, duration_ms: __, ...attempt }) => attempt)
        // "a" and 2,047 "é" are 4,095 bytes; the 4,096th is the first half of the next "é".
        const cut = `a${"é".repeat(2047)}\uFFFD`
        assert.deepStrictEqual(attempts, [
          { attempt: 1, response_code: 500, error: null, response_excerpt: FIRST_BODY },
          { attempt: 2, response_code: 503, error: null, response_excerpt: cut },
          { attempt: 3, response_code: null, error: "timeout", response_excerpt: null },
          { attempt: 4, response_code: 404, error: null, response_excerpt: null }
        ])
        assert.strictEqual(Buffer.byteLength(cut.slice(0, -1), "utf8"), RESPONSE_EXCERPT_BYTES - 1)
        // The time-out's attempt took the time-out.
        assert.isAtLeast(detail.attempts_detail[2]!.duration_ms, 1_000)
        // The wire carries the excerpt as a JSON string, the markup as characters.
        const raw = yield* owner.get(`/webhooks/${hook.id}/deliveries/${journal[0]!.id}`)
        assert.include(raw.text, JSON.stringify(FIRST_BODY))
      }).pipe(Effect.scoped, Effect.orDie))
  })
})
