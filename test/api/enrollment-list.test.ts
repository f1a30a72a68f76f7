/**
 * GET /enrollments (docs/decisions.md "Enrollments in bulk"): the school's
 * active enrollments, ascending id, paged like every list, the same items as
 * POST /students/{id}/groups answers, and the same set the students' cards
 * show; ended enrollments and another school's are not there.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Enrollments, Ids, Models } from "@school/domain"
import { expectError, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly readKey: string
  readonly students: ReadonlyArray<number>
  /** Every enrollment made through the API, in the order made. */
  readonly made: ReadonlyArray<Enrollments.Enrollment>
  /** The one of them ended afterwards. */
  readonly ended: number
}>()("test/api/enrollment-list/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const server = yield* TestServer
      const a = yield* Fixtures.school("pro", "School A")
      const b = yield* Fixtures.school("pro", "School B")
      const students = yield* Fixtures.students(a.schoolId, a.filialId, 4, "Student")
      const groups = [
        yield* Fixtures.group(a.schoolId, a.filialId, "Chess", 10),
        yield* Fixtures.group(a.schoolId, a.filialId, "Go", 10)
      ]
      const api = yield* server.client(yield* Fixtures.key(a.schoolId, { scope: "write" }))
      const made: Array<Enrollments.Enrollment> = []
      for (const [student, group] of [[0, 0], [0, 1], [1, 0], [2, 1], [3, 0]] as const) {
        const reply = yield* api.enrollments.create({
          params: { id: Ids.StudentId.make(students[student]!) },
          headers: { "idempotency-key": `list-${student}-${group}` },
          payload: { group_id: Ids.GroupId.make(groups[group]!) }
        })
        made.push(reply.data)
      }
      const ended = made[2]!.id
      yield* sql`UPDATE enrollments SET ended_at = now() WHERE school_id = ${a.schoolId} AND id = ${ended}`
      // Another school's enrollment, made the same way.
      const [other] = yield* Fixtures.students(b.schoolId, b.filialId, 1, "Other")
      const apiB = yield* server.client(yield* Fixtures.key(b.schoolId, { scope: "write" }))
      yield* apiB.enrollments.create({
        params: { id: Ids.StudentId.make(other!) },
        headers: { "idempotency-key": "list-b" },
        payload: { group_id: Ids.GroupId.make(yield* Fixtures.group(b.schoolId, b.filialId, "B", 5)) }
      })
      return World.of({ readKey: yield* Fixtures.key(a.schoolId, { scope: "read" }), students, made, ended })
    }).pipe(Effect.orDie)
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

const Page = Schema.Struct({
  data: Schema.Array(Enrollments.Enrollment),
  meta: Schema.Struct({ page: Schema.Int, per_page: Schema.Int, total: Schema.Int })
})
const Card = Schema.Struct({ data: Models.StudentCard })

const get = (path: string) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    return yield* server.raw.get(`${V1}${path}`, world.readKey)
  })

layer(Env, { excludeTestServices: true })("GET /enrollments", (it) => {
  it.effect("a read key lists the school's active enrollments in id order, as POST answered them", () =>
    Effect.gen(function*() {
      const world = yield* World
      const reply = yield* get("/enrollments")
      assert.strictEqual(reply.status, 200, reply.text)
      const page = Schema.decodeUnknownSync(Page)(JSON.parse(reply.text), { onExcessProperty: "error" })
      const active = world.made.filter((e) => e.id !== world.ended)
      assert.deepStrictEqual(page.data, [...active].sort((x, y) => x.id - y.id))
      assert.deepStrictEqual(page.meta, { page: 1, per_page: 20, total: 4 })
    }))

  it.effect("pages like every list: per_page, page, a page past the end with the true total", () =>
    Effect.gen(function*() {
      const world = yield* World
      const ids = world.made.filter((e) => e.id !== world.ended).map((e) => e.id).sort((x, y) => x - y)
      const read = (query: string) =>
        Effect.map(get(`/enrollments?${query}`), (reply) => Schema.decodeUnknownSync(Page)(JSON.parse(reply.text)))
      const second = yield* read("page=2&per_page=3")
      assert.deepStrictEqual(second.data.map((e) => e.id), ids.slice(3))
      assert.deepStrictEqual(second.meta, { page: 2, per_page: 3, total: 4 })
      const past = yield* read("page=9&per_page=3")
      assert.deepStrictEqual(past, { data: [], meta: { page: 9, per_page: 3, total: 4 } })
      const error = expectError(yield* get("/enrollments?per_page=101"), 422, "validation_failed")
      assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["per_page"])
    }))

  it.effect("the same set as the students' cards show in active_groups", () =>
    Effect.gen(function*() {
      const world = yield* World
      const list = Schema.decodeUnknownSync(Page)(JSON.parse((yield* get("/enrollments")).text)).data
      for (const student of world.students) {
        const card = Schema.decodeUnknownSync(Card)(JSON.parse((yield* get(`/students/${student}`)).text)).data
        assert.deepStrictEqual(
          card.active_groups.map((g) => [g.enrollment_id, g.group_id]),
          list.filter((e) => e.student_id === student).map((e) => [e.id, e.group_id]),
          `student ${student}`
        )
      }
    }))

  it.effect("without a key: 401 unauthorized with its reason", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const error = expectError(yield* server.raw.get(`${V1}/enrollments`), 401, "unauthorized")
      assert.deepStrictEqual(error.fields, { reason: "missing_or_malformed_key" })
    }))
})
