/**
 * POST /leads against a real database over a real socket (docs/integrators.md
 * "Writing", "lead.created"; docs/decisions.md "Writes", "Requests and responses"):
 * every rule of the lead, its lead.created outbox row, every error with its
 * status, code and fields, the body edge cases of the envelope (413, 415,
 * invalid JSON, non-object), and a property test holding the SQL status
 * choice to `Leads.lowestPriorityStatus`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Errors, Events, Leads } from "@school/domain"
import { dataOf, expectError, failsWith, JSON_CONTENT_TYPE, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, funnel, outbox } from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly schoolA: number
  readonly schoolB: number
  readonly schoolNoFunnel: number
  readonly writeKey: string
  readonly readKey: string
  readonly keyB: string
  readonly keyNoFunnel: string
  readonly main: { readonly funnelId: number; readonly statusIds: ReadonlyArray<number> }
  readonly courses: { readonly funnelId: number; readonly statusIds: ReadonlyArray<number> }
  readonly emptyFunnel: number
  readonly mainB: { readonly funnelId: number; readonly statusIds: ReadonlyArray<number> }
  readonly funnelOfB: number
}>()("test/api/leads/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const a = yield* Fixtures.school("pro", "School A")
      const b = yield* Fixtures.school("pro", "School B")
      const c = yield* Fixtures.school("pro", "School without a main funnel")
      // The lowest priority is not the first status created.
      const main = yield* funnel(a.schoolId, "Main", true, [["Won", 30], ["Incoming", 10], ["In progress", 20]])
      // A tie on the lowest priority goes to the older status.
      const courses = yield* funnel(a.schoolId, "Courses", false, [["B", 5], ["A", -3], ["C", -3]])
      const empty = yield* funnel(a.schoolId, "Empty", false, [])
      const mainB = yield* funnel(b.schoolId, "Main", true, [["New", 1], ["Old", 2]])
      const otherB = yield* funnel(b.schoolId, "Other", false, [["X", 0]])
      return World.of({
        schoolA: a.schoolId,
        schoolB: b.schoolId,
        schoolNoFunnel: c.schoolId,
        writeKey: yield* Fixtures.key(a.schoolId, { scope: "write" }),
        readKey: yield* Fixtures.key(a.schoolId, { scope: "read" }),
        keyB: yield* Fixtures.key(b.schoolId, { scope: "write" }),
        keyNoFunnel: yield* Fixtures.key(c.schoolId, { scope: "write" }),
        main,
        courses,
        emptyFunnel: empty.funnelId,
        mainB,
        funnelOfB: otherB.funnelId
      })
    })
  )
}

const Env = World.layer.pipe(
  Layer.provideMerge(TestServer.layer()),
  Layer.provideMerge(TestDatabase.layer)
)

let keys = 0
/** A fresh Idempotency-Key per call. */
const freshKey = () => `lead-test-${++keys}-${Math.random().toString(36).slice(2)}`

/** POST /leads as bytes: whatever body and headers the test gives, a fresh Idempotency-Key. */
const postLead = (body: unknown, key?: string, options: { readonly headers?: Record<string, string> } = {}) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    return yield* server.raw.post(`${V1}/leads`, {
      key: key ?? world.writeKey,
      idempotencyKey: freshKey(),
      body,
      ...(options.headers === undefined ? {} : { headers: options.headers })
    })
  })

/** POST /leads through the contract's client, with a fresh Idempotency-Key. */
const createLead = (payload: Leads.CreateLeadRequest, key?: string) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    const api = yield* server.client(key ?? world.writeKey)
    return yield* api.leads.create({ headers: { "idempotency-key": freshKey() }, payload })
  })

const MICROS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

const StoredLead = Schema.Struct({
  name: Schema.String,
  phone: Schema.String,
  source: Schema.String,
  comment: Schema.String,
  funnel_id: Schema.NullOr(Schema.Int),
  pipeline_status_id: Schema.Int,
  responsible_id: Schema.NullOr(Schema.Int)
})

const storedLead = Effect.fnUntraced(function*(schoolId: number, id: number) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT name, phone, source, comment, funnel_id, pipeline_status_id, responsible_id
                          FROM leads WHERE school_id = ${schoolId} AND id = ${id}`
  return Schema.decodeUnknownSync(StoredLead)(rows[0])
}, Effect.orDie)

layer(Env, { excludeTestServices: true })("POST /leads", (it) => {
  describe("success", () => {
    it.effect("201 {data: lead}: trimmed fields, defaults, main funnel as 0, its lowest-priority status", () =>
      Effect.gen(function*() {
        const world = yield* World
        const reply = yield* postLead({ phone: "  +7 (999) 123-45-67 ", name: "  Anna Petrova ", comment: " call after 18:00 " })
        assert.strictEqual(reply.status, 201, reply.text)
        assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
        assert.isNull(reply.headers.get("idempotent-replayed"))
        const lead = dataOf(Leads.Lead, reply)
        assert.deepStrictEqual({ ...lead, id: 0, created_at: "" }, {
          id: 0,
          name: "Anna Petrova",
          phone: "+7 (999) 123-45-67",
          source: "api",
          comment: "call after 18:00",
          funnel_id: 0,
          pipeline_status_id: world.main.statusIds[1]!,
          created_at: ""
        })
        assert.match(lead.created_at, MICROS_Z)
        // Stored: no responsible employee, funnel NULL (the placeholder, not a foreign key).
        const row = yield* storedLead(world.schoolA, lead.id)
        assert.strictEqual(row.responsible_id, null)
        assert.strictEqual(row.funnel_id, null)
        assert.strictEqual(row.pipeline_status_id, world.main.statusIds[1]!)
      }))

    it.effect("name omitted is \"\"; source kept when given, \"api\" when empty or null; null fields read as omitted", () =>
      Effect.gen(function*() {
        const a = dataOf(Leads.Lead, yield* postLead({ phone: "12345", source: " site-form " }))
        assert.strictEqual(a.name, "")
        assert.strictEqual(a.comment, "")
        assert.strictEqual(a.source, "site-form")
        const { data: b } = yield* createLead({ phone: "12345", source: "" })
        assert.strictEqual(b.source, "api")
        const c = dataOf(Leads.Lead, yield* postLead({ phone: "12345", name: null, source: null, comment: null, funnel_id: null }))
        assert.deepStrictEqual([c.name, c.source, c.comment, c.funnel_id], ["", "api", "", 0])
      }))

    it.effect("funnel_id 0 is the main funnel, returned as 0", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { data: lead } = yield* createLead({ phone: "12345", funnel_id: 0 })
        assert.strictEqual(lead.funnel_id, 0)
        assert.strictEqual(lead.pipeline_status_id, world.main.statusIds[1]!)
      }))

    it.effect("a funnel of the school is echoed; a priority tie goes to the older status", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { data: lead } = yield* createLead({ phone: "12345", funnel_id: world.courses.funnelId })
        assert.strictEqual(lead.funnel_id, world.courses.funnelId)
        assert.strictEqual(lead.pipeline_status_id, world.courses.statusIds[1]!)
      }))

    it.effect("unknown fields are ignored", () =>
      Effect.gen(function*() {
        const reply = yield* postLead({ phone: "12345", utm: { campaign: "x" }, responsible_id: 1 })
        assert.strictEqual(reply.status, 201, reply.text)
      }))

    it.effect("each school's key writes into its own school and main funnel", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { data: lead } = yield* createLead({ phone: "12345", name: "B lead" }, world.keyB)
        assert.strictEqual(lead.pipeline_status_id, world.mainB.statusIds[0]!)
        const row = yield* storedLead(world.schoolB, lead.id)
        assert.strictEqual(row.name, "B lead")
      }))
  })

  describe("lead.created in the outbox", () => {
    it.effect("one row per lead: the school, the event, the payload exactly as the event catalog lists it", () =>
      Effect.gen(function*() {
        const world = yield* World
        const before = yield* outbox(world.schoolB)
        const lead = dataOf(Leads.Lead, yield* postLead({ phone: " 8 800 555-35-35 ", name: "Ivan", source: "landing" }, world.keyB))
        const after = yield* outbox(world.schoolB)
        assert.strictEqual(after.length, before.length + 1)
        const row = after[after.length - 1]!
        assert.strictEqual(row.event, "lead.created")
        assert.match(row.created_at, MICROS_Z)
        const payload: unknown = JSON.parse(row.payload)
        // Field for field, in the catalog's order, the same name, phone and source as the lead.
        assert.deepStrictEqual(Schema.decodeUnknownSync(Events.LeadCreated)(payload, Events.strict), {
          lead_id: lead.id,
          name: "Ivan",
          phone: "8 800 555-35-35",
          source: "landing"
        })
        assert.deepStrictEqual(Object.keys(Schema.decodeUnknownSync(Schema.Record(Schema.String, Schema.Unknown))(payload)), [
          "lead_id",
          "name",
          "phone",
          "source"
        ])
      }))

    it.effect("a lead with no name carries \"\" and source \"api\" in its event", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { data: lead } = yield* createLead({ phone: "12345" }, world.keyB)
        const rows = yield* outbox(world.schoolB)
        const payload = Schema.decodeUnknownSync(Events.LeadCreated)(JSON.parse(rows[rows.length - 1]!.payload), Events.strict)
        assert.deepStrictEqual(payload, { lead_id: lead.id, name: "", phone: "12345", source: "api" })
      }))
  })

  describe("funnel_not_found (422)", () => {
    it.effect("another school's funnel, a missing one, one without statuses, no main funnel: no lead, no event", () =>
      Effect.gen(function*() {
        const world = yield* World
        const leadsBefore = yield* count("leads", world.schoolA)
        const eventsBefore = yield* count("outbox_events", world.schoolA)
        for (const funnelId of [world.funnelOfB, world.mainB.funnelId, 999_999, world.emptyFunnel, 2_147_483_647]) {
          const error = yield* createLead({ phone: "12345", funnel_id: funnelId }).pipe(failsWith(Errors.FunnelNotFound))
          assert.strictEqual(error.message, `Funnel ${funnelId} does not exist in this school.`)
          assert.isUndefined(error.fields)
        }
        const noMain = yield* createLead({ phone: "12345" }, world.keyNoFunnel).pipe(failsWith(Errors.FunnelNotFound))
        assert.strictEqual(noMain.message, "The school has no main funnel with statuses.")
        // The envelope as sent.
        const wire = expectError(yield* postLead({ phone: "12345", funnel_id: 999_999 }), 422, "funnel_not_found")
        assert.isUndefined(wire.fields)
        assert.strictEqual(yield* count("leads", world.schoolA), leadsBefore)
        assert.strictEqual(yield* count("outbox_events", world.schoolA), eventsBefore)
        assert.strictEqual(yield* count("leads", world.schoolNoFunnel), 0)
      }))
  })

  describe("validation_failed (422)", () => {
    const cases: ReadonlyArray<readonly [string, unknown, ReadonlyArray<string>]> = [
      ["phone omitted", { name: "x" }, ["phone"]],
      ["phone empty after trimming", { phone: "   " }, ["phone"]],
      ["phone with a letter", { phone: "12a45" }, ["phone"]],
      ["phone with 4 digits", { phone: "+1 (23) 4" }, ["phone"]],
      ["phone with 21 digits", { phone: "1".repeat(21) }, ["phone"]],
      ["phone not a string", { phone: 1234567 }, ["phone"]],
      ["name not a string", { phone: "12345", name: 5 }, ["name"]],
      ["name over 255 characters", { phone: "12345", name: "n".repeat(256) }, ["name"]],
      ["comment over 4000 characters", { phone: "12345", comment: "c".repeat(4001) }, ["comment"]],
      ["source over 64 characters", { phone: "12345", source: "s".repeat(65) }, ["source"]],
      ["a NUL character", { phone: "12345", name: "a\u0000b" }, ["name"]],
      ["an unpaired surrogate", { phone: "12345", comment: "a\ud800b" }, ["comment"]],
      ["funnel_id negative", { phone: "12345", funnel_id: -1 }, ["funnel_id"]],
      ["funnel_id not an integer", { phone: "12345", funnel_id: 1.5 }, ["funnel_id"]],
      ["funnel_id a string", { phone: "12345", funnel_id: "1" }, ["funnel_id"]],
      ["every bad field at once", { name: 1, funnel_id: -2, source: [] }, ["phone", "name", "source", "funnel_id"]]
    ]
    for (const [label, body, fields] of cases) {
      it.effect(`${label}: fields name ${fields.join(", ")}`, () =>
        Effect.gen(function*() {
          const error = expectError(yield* postLead(body), 422, "validation_failed")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), [...fields].sort())
          for (const messages of Object.values(error.fields ?? {})) {
            assert.isTrue(Array.isArray(messages) && messages.length > 0 && messages.every((m) => m.length > 0))
          }
        }))
    }

    it.effect("an omitted phone has a per-field message", () =>
      Effect.gen(function*() {
        const error = expectError(yield* postLead({}), 422, "validation_failed")
        assert.deepStrictEqual(error.fields, { phone: ["phone is required"] })
      }))

    it.effect("the edges pass: 5 and 20 digits, 255/4000/64 characters", () =>
      Effect.gen(function*() {
        for (const body of [
          { phone: "12345" },
          { phone: "+" + "9".repeat(20) },
          { phone: "(123) 45", name: "n".repeat(255), comment: "c".repeat(4000), source: "s".repeat(64) }
        ]) {
          const reply = yield* postLead(body)
          assert.strictEqual(reply.status, 201, reply.text)
        }
      }))
  })

  describe("the body itself (413, 415, 422 without fields: docs/decisions.md \"Requests and responses\")", () => {
    it.effect("invalid JSON: 422 validation_failed without fields", () =>
      Effect.gen(function*() {
        const error = expectError(yield* postLead("{\"phone\": \"12345\""), 422, "validation_failed")
        assert.isUndefined(error.fields)
      }))

    it.effect("a JSON value that is not an object: 422 validation_failed without fields", () =>
      Effect.gen(function*() {
        for (const body of ["[]", "\"12345\"", "null", "42", ""]) {
          const error = expectError(yield* postLead(body), 422, "validation_failed")
          assert.isUndefined(error.fields, body)
        }
      }))

    it.effect("a body that is not JSON: 415 unsupported_media_type", () =>
      Effect.gen(function*() {
        for (const contentType of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
          const error = expectError(
            yield* postLead("phone=12345", undefined, { headers: { "content-type": contentType } }),
            415,
            "unsupported_media_type"
          )
          assert.isUndefined(error.fields)
        }
      }))

    it.effect("application/json with a charset is JSON", () =>
      Effect.gen(function*() {
        const reply = yield* postLead(JSON.stringify({ phone: "12345" }), undefined, {
          headers: { "content-type": "application/json; charset=utf-8" }
        })
        assert.strictEqual(reply.status, 201, reply.text)
      }))

    it.effect("a body over 256 KiB: 413 payload_too_large; exactly 256 KiB is read", () =>
      Effect.gen(function*() {
        const world = yield* World
        const before = yield* count("idempotency_keys", world.schoolA)
        const big = JSON.stringify({ phone: "12345", comment: "c".repeat(300_000) })
        const error = expectError(yield* postLead(big), 413, "payload_too_large")
        assert.isUndefined(error.fields)
        // Nothing was claimed for it.
        assert.strictEqual(yield* count("idempotency_keys", world.schoolA), before)
        const padding = " ".repeat(256 * 1024 - JSON.stringify({ phone: "12345" }).length)
        const edge = yield* postLead(JSON.stringify({ phone: "12345" }) + padding)
        assert.strictEqual(edge.status, 201, edge.text)
      }))
  })

  describe("authentication and scope come first (the order of checks: docs/decisions.md \"Authentication and scopes\")", () => {
    it.effect("no key: 401; a read key: 403 insufficient_scope, even without an Idempotency-Key; nothing written", () =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        const before = yield* count("leads", world.schoolA)
        const noKey = yield* server.raw.post(`${V1}/leads`, { idempotencyKey: freshKey(), body: { phone: "12345" } })
        assert.strictEqual(expectError(noKey, 401, "unauthorized").fields?.["reason"], "missing_or_malformed_key")
        const read = yield* server.raw.post(`${V1}/leads`, { key: world.readKey, idempotencyKey: freshKey(), body: { phone: "12345" } })
        assert.isUndefined(expectError(read, 403, "insufficient_scope").fields)
        const scope = yield* createLead({ phone: "12345" }, world.readKey).pipe(failsWith(Errors.InsufficientScope))
        assert.strictEqual(scope.message, "This endpoint needs an API key with write scope.")
        assert.isUndefined(scope.fields)
        const readNoKey = yield* server.raw.post(`${V1}/leads`, { key: world.readKey, body: {} })
        expectError(readNoKey, 403, "insufficient_scope")
        assert.strictEqual(yield* count("leads", world.schoolA), before)
      }))

    it.effect("GET on the write path is 405 with Allow: POST", () =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        const reply = yield* server.raw.get(`${V1}/leads`, world.writeKey)
        expectError(reply, 405, "method_not_allowed")
        assert.strictEqual(reply.headers.get("allow"), "POST")
      }))
  })

  describe("status choice against the database", () => {
    const Priorities = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: -3, maximum: 3 }))).check(
      Schema.isMinLength(1),
      Schema.isMaxLength(6)
    )
    it.effect.prop(
      "for any set of priorities the lead goes to Leads.lowestPriorityStatus of its funnel",
      [Priorities],
      ([priorities]) =>
        Effect.gen(function*() {
          const world = yield* World
          const created = yield* funnel(
            world.schoolA,
            "Prop",
            false,
            priorities.map((priority, i) => [`S${i}`, priority] as const)
          )
          const statuses = created.statusIds.map((id, i) => ({ id, priority: priorities[i]! }))
          const expected = Option.getOrThrow(Leads.lowestPriorityStatus(statuses))
          const { data: lead } = yield* createLead({ phone: "12345", funnel_id: created.funnelId })
          assert.strictEqual(lead.pipeline_status_id, expected.id)
          assert.strictEqual(lead.funnel_id, created.funnelId)
        }),
      { timeout: 60_000, arbitrary: { runs: 80 } }
    )
  })
})
