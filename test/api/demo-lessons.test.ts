/**
 * POST /demo-lessons against a real database over a real socket
 * (docs/integrators.md "Writing"; docs/decisions.md "Writes"): a booking for a student or a lead,
 * no webhook event, no place taken, and every error with status, code and
 * fields.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { DemoLessons, Errors, Ids } from "@school/domain"
import { dataOf, expectError, failsWith, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, funnel } from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly schoolA: number
  readonly writeKey: string
  readonly student: number
  readonly studentOfB: number
  readonly group: number
  readonly fullGroup: number
  readonly groupOfB: number
  readonly keyB: string
}>()("test/api/demo-lessons/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const a = yield* Fixtures.school("pro", "School A")
      const b = yield* Fixtures.school("pro", "School B")
      yield* funnel(a.schoolId, "Main", true, [["Incoming", 1]])
      yield* funnel(b.schoolId, "Main", true, [["Incoming", 1]])
      const [student] = yield* Fixtures.students(a.schoolId, a.filialId, 2, "Student")
      const [studentOfB] = yield* Fixtures.students(b.schoolId, b.filialId, 1, "Other")
      const fullGroup = yield* Fixtures.group(a.schoolId, a.filialId, "Full", 1)
      yield* Fixtures.enroll(a.schoolId, student!, fullGroup)
      return World.of({
        schoolA: a.schoolId,
        writeKey: yield* Fixtures.key(a.schoolId, { scope: "write" }),
        keyB: yield* Fixtures.key(b.schoolId, { scope: "write" }),
        student: student!,
        studentOfB: studentOfB!,
        group: yield* Fixtures.group(a.schoolId, a.filialId, "Trial group", 2),
        fullGroup,
        groupOfB: yield* Fixtures.group(b.schoolId, b.filialId, "Group of B", 10)
      })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

let n = 0
const freshKey = () => `demo-${++n}-${Math.random()}`

/** POST /demo-lessons as bytes (any body), with a fresh Idempotency-Key. */
const book = (body: unknown) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    return yield* server.raw.post(`${V1}/demo-lessons`, { key: world.writeKey, idempotencyKey: freshKey(), body })
  })

/** The contract's client with this key (school A's write key by default). */
const client = (key?: string) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    return yield* server.client(key ?? world.writeKey)
  })

/** POST /demo-lessons through the contract's client, with a fresh Idempotency-Key. */
const bookTyped = (payload: DemoLessons.CreateDemoLessonRequest) =>
  Effect.flatMap(client(), (api) => api.demoLessons.create({ headers: { "idempotency-key": freshKey() }, payload }))

const MICROS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

layer(Env, { excludeTestServices: true })("POST /demo-lessons", (it) => {
  describe("success (docs/decisions.md \"Writes\": 201 {data: {id, user_id, lead_id, group_id, starts_at, comment, status, created_at}})", () => {
    it.effect("for a student: starts_at in UTC with microseconds, comment trimmed, scheduled; no event, no place taken", () =>
      Effect.gen(function*() {
        const world = yield* World
        const events = yield* count("outbox_events", world.schoolA)
        const reply = yield* book({
          user_id: world.student,
          group_id: world.group,
          starts_at: "2026-12-01T18:30:00+03:00",
          comment: "  first visit "
        })
        assert.strictEqual(reply.status, 201, reply.text)
        const lesson = dataOf(DemoLessons.DemoLesson, reply)
        assert.deepStrictEqual({ ...lesson, id: 0, created_at: "" }, {
          id: 0,
          user_id: world.student,
          lead_id: null,
          group_id: world.group,
          starts_at: "2026-12-01T15:30:00.000000Z",
          comment: "first visit",
          status: "scheduled",
          created_at: ""
        })
        assert.match(lesson.created_at, MICROS_Z)
        assert.strictEqual(yield* count("outbox_events", world.schoolA), events)
        // Three trials on a group with two places: a trial does not take a place.
        for (let i = 0; i < 3; i++) {
          const { data } = yield* bookTyped({ user_id: Ids.StudentId.make(world.student), group_id: Ids.GroupId.make(world.group) })
          assert.strictEqual(data.status, "scheduled")
        }
      }))

    it.effect("for a lead created through the API; starts_at and comment optional", () =>
      Effect.gen(function*() {
        const world = yield* World
        const api = yield* client()
        const { data: lead } = yield* api.leads.create({
          headers: { "idempotency-key": freshKey() },
          payload: { phone: "12345", name: "Trial lead" }
        })
        const { data: lesson } = yield* bookTyped({
          lead_id: Ids.LeadId.make(lead.id),
          group_id: Ids.GroupId.make(world.group),
          user_id: null
        })
        assert.deepStrictEqual([lesson.user_id, lesson.lead_id, lesson.starts_at, lesson.comment], [null, lead.id, null, ""])
        // The same as sent: null where nothing was given.
        const wire = yield* book({ lead_id: lead.id, group_id: world.group, user_id: null })
        const sent = dataOf(DemoLessons.DemoLesson, wire)
        assert.deepStrictEqual([sent.user_id, sent.lead_id, sent.starts_at, sent.comment], [null, lead.id, null, ""])
      }))
  })

  describe("errors", () => {
    it.effect("neither user_id nor lead_id: validation_failed with fields.user_id", () =>
      Effect.gen(function*() {
        const world = yield* World
        for (const body of [{ group_id: world.group }, { group_id: world.group, user_id: null, lead_id: null }]) {
          const error = expectError(yield* book(body), 422, "validation_failed")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["user_id"])
        }
      }))

    it.effect("both: validation_failed naming both", () =>
      Effect.gen(function*() {
        const world = yield* World
        const error = expectError(yield* book({ user_id: world.student, lead_id: 1, group_id: world.group }), 422, "validation_failed")
        assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), ["lead_id", "user_id"])
      }))

    it.effect("a user_id or lead_id that is not the school's: validation_failed on that field", () =>
      Effect.gen(function*() {
        const world = yield* World
        const apiB = yield* client(world.keyB)
        const { data: leadOfB } = yield* apiB.leads.create({ headers: { "idempotency-key": freshKey() }, payload: { phone: "12345" } })
        for (const [body, field] of [
          [{ user_id: world.studentOfB, group_id: world.group }, "user_id"],
          [{ user_id: 999_999, group_id: world.group }, "user_id"],
          [{ lead_id: leadOfB.id, group_id: world.group }, "lead_id"],
          [{ lead_id: 999_999, group_id: world.group }, "lead_id"]
        ] as const) {
          const error = expectError(yield* book(body), 422, "validation_failed")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), [field])
        }
      }))

    it.effect("group_not_found (422) and group_full (409), without fields", () =>
      Effect.gen(function*() {
        const world = yield* World
        const student = Ids.StudentId.make(world.student)
        for (const group of [world.groupOfB, 999_999]) {
          const error = yield* bookTyped({ user_id: student, group_id: Ids.GroupId.make(group) }).pipe(
            failsWith(Errors.GroupNotFound)
          )
          assert.strictEqual(error.message, `Group ${group} not found in this school.`)
          assert.isUndefined(error.fields)
        }
        const full = yield* bookTyped({ user_id: student, group_id: Ids.GroupId.make(world.fullGroup) }).pipe(
          failsWith(Errors.GroupFull)
        )
        assert.strictEqual(full.message, `Group ${world.fullGroup} has no free places.`)
        assert.isUndefined(full.fields)
        // The envelopes as sent.
        assert.isUndefined(expectError(yield* book({ user_id: world.student, group_id: 999_999 }), 422, "group_not_found").fields)
        assert.isUndefined(expectError(yield* book({ user_id: world.student, group_id: world.fullGroup }), 409, "group_full").fields)
      }))

    it.effect("bad types and formats name their fields", () =>
      Effect.gen(function*() {
        const world = yield* World
        const cases: ReadonlyArray<readonly [unknown, ReadonlyArray<string>]> = [
          [{ user_id: world.student }, ["group_id"]],
          [{ user_id: "1", group_id: world.group }, ["user_id"]],
          [{ user_id: world.student, group_id: world.group, starts_at: "2026-12-01T18:30:00" }, ["starts_at"]],
          [{ user_id: world.student, group_id: world.group, starts_at: "tomorrow" }, ["starts_at"]],
          [{ user_id: world.student, group_id: world.group, starts_at: "0000-01-01T00:00:00Z" }, ["starts_at"]],
          [{ user_id: world.student, group_id: world.group, comment: "c".repeat(4001) }, ["comment"]],
          [{ user_id: world.student, group_id: 0 }, ["group_id"]]
        ]
        for (const [body, fields] of cases) {
          const error = expectError(yield* book(body), 422, "validation_failed")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), [...fields].sort(), JSON.stringify(body))
        }
      }))
  })
})
