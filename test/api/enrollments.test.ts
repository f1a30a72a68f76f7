/**
 * POST /students/{id}/groups against a real database over a real socket
 * (docs/integrators.md "Writing"; docs/decisions.md "Writes"): the enrollment, its
 * group.enrolled outbox row, the place it takes, the student's card and
 * last-modified time, and every error with status, code and fields.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Enrollments, Errors, Events, Ids } from "@school/domain"
import { dataOf, expectError, failsWith, JSON_CONTENT_TYPE, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, outbox } from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly schoolA: number
  readonly filialA: number
  readonly writeKey: string
  readonly students: ReadonlyArray<number>
  readonly studentOfB: number
  readonly groupOfB: number
}>()("test/api/enrollments/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const a = yield* Fixtures.school("pro", "School A")
      const b = yield* Fixtures.school("pro", "School B")
      const students = yield* Fixtures.students(a.schoolId, a.filialId, 10, "Student")
      const [studentOfB] = yield* Fixtures.students(b.schoolId, b.filialId, 1, "Other")
      return World.of({
        schoolA: a.schoolId,
        filialA: a.filialId,
        writeKey: yield* Fixtures.key(a.schoolId, { scope: "write" }),
        students,
        studentOfB: studentOfB!,
        groupOfB: yield* Fixtures.group(b.schoolId, b.filialId, "Group of B", 10)
      })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

let n = 0
const freshKey = () => `enroll-${++n}-${Math.random()}`

/** POST /students/{id}/groups as bytes: whatever path id and body the test gives. */
const enroll = (studentId: number | string, body: unknown) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    return yield* server.raw.post(`${V1}/students/${studentId}/groups`, {
      key: world.writeKey,
      idempotencyKey: freshKey(),
      body
    })
  })

/** The same through the contract's client. */
const enrollTyped = (studentId: number, groupId: number) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    const api = yield* server.client(world.writeKey)
    return yield* api.enrollments.create({
      params: { id: Ids.StudentId.make(studentId) },
      headers: { "idempotency-key": freshKey() },
      payload: { group_id: Ids.GroupId.make(groupId) }
    })
  })

const newGroup = (name: string, capacity: number) =>
  Effect.flatMap(World, (world) => Fixtures.group(world.schoolA, world.filialA, name, capacity))

const groupCounts = Effect.fnUntraced(function*(groupId: number) {
  const sql = yield* SqlClient.SqlClient
  const world = yield* World
  const rows = yield* sql<{ enrolled_count: number; active: number }>`
    SELECT g.enrolled_count,
           (SELECT count(*)::int FROM enrollments e
            WHERE e.school_id = g.school_id AND e.group_id = g.id AND e.ended_at IS NULL) AS active
    FROM groups g WHERE g.school_id = ${world.schoolA} AND g.id = ${groupId}`
  return rows[0]!
}, Effect.orDie)

const MICROS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

layer(Env, { excludeTestServices: true })("POST /students/{id}/groups", (it) => {
  describe("success", () => {
    it.effect("201 {data: {id, student_id, group_id, enrolled_at}}; a place taken; group.enrolled in the outbox", () =>
      Effect.gen(function*() {
        const world = yield* World
        const group = yield* newGroup("Chess A1", 3)
        const student = world.students[0]!
        const events = yield* outbox(world.schoolA)
        const reply = yield* enroll(student, { group_id: group })
        assert.strictEqual(reply.status, 201, reply.text)
        assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
        const enrollment = dataOf(Enrollments.Enrollment, reply)
        assert.strictEqual(enrollment.student_id, student)
        assert.strictEqual(enrollment.group_id, group)
        assert.match(enrollment.enrolled_at, MICROS_Z)
        assert.deepStrictEqual(yield* groupCounts(group), { enrolled_count: 1, active: 1 })
        const after = yield* outbox(world.schoolA)
        assert.strictEqual(after.length, events.length + 1)
        const row = after[after.length - 1]!
        assert.strictEqual(row.event, "group.enrolled")
        const payload: unknown = JSON.parse(row.payload)
        assert.deepStrictEqual(Schema.decodeUnknownSync(Events.GroupEnrolled)(payload, Events.strict), {
          enrollment_id: enrollment.id,
          student_id: student,
          group_id: group,
          group_name: "Chess A1",
          filial_id: world.filialA
        })
        assert.deepStrictEqual(
          Object.keys(Schema.decodeUnknownSync(Schema.Record(Schema.String, Schema.Unknown))(payload)),
          ["enrollment_id", "student_id", "group_id", "group_name", "filial_id"]
        )
      }))

    it.effect("the student's card shows the group, and the student's last-modified time moves (legacy NULL too)", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const server = yield* TestServer
        const student = world.students[1]!
        yield* sql`UPDATE students SET updated_at = NULL WHERE school_id = ${world.schoolA} AND id = ${student}`
        const group = yield* newGroup("Go B2", 5)
        const { data: enrollment } = yield* enrollTyped(student, group)
        const api = yield* server.client(world.writeKey)
        const { data: card } = yield* api.students.get({ params: { id: Ids.StudentId.make(student) } })
        assert.deepStrictEqual(card.active_groups.map((g) => [g.group_id, g.enrollment_id, g.group_name]), [
          [group, enrollment.id, "Go B2"]
        ])
        assert.isNotNull(card.updated_at)
      }))
  })

  describe("errors", () => {
    it.effect("student_not_found (422): another school's student or none; checked before the group", () =>
      Effect.gen(function*() {
        const world = yield* World
        const group = yield* newGroup("G", 5)
        for (const student of [world.studentOfB, 999_999]) {
          const error = yield* enrollTyped(student, group).pipe(failsWith(Errors.StudentNotFound))
          assert.strictEqual(error.message, `Student ${student} not found in this school.`)
          assert.isUndefined(error.fields)
        }
        yield* enrollTyped(999_999, 999_999).pipe(failsWith(Errors.StudentNotFound))
        // The envelope as sent.
        assert.isUndefined(expectError(yield* enroll(999_999, { group_id: 999_999 }), 422, "student_not_found").fields)
        assert.deepStrictEqual(yield* groupCounts(group), { enrolled_count: 0, active: 0 })
      }))

    it.effect("group_not_found (422): another school's group or none", () =>
      Effect.gen(function*() {
        const world = yield* World
        for (const group of [world.groupOfB, 999_999]) {
          const error = yield* enrollTyped(world.students[2]!, group).pipe(failsWith(Errors.GroupNotFound))
          assert.strictEqual(error.message, `Group ${group} not found in this school.`)
          assert.isUndefined(error.fields)
        }
        assert.isUndefined(expectError(yield* enroll(world.students[2]!, { group_id: 999_999 }), 422, "group_not_found").fields)
      }))

    it.effect("group_full (409): no free place (capacity 0, or taken); nothing written", () =>
      Effect.gen(function*() {
        const world = yield* World
        const none = yield* newGroup("No places", 0)
        const one = yield* newGroup("One place", 1)
        const events = yield* count("outbox_events", world.schoolA)
        assert.isUndefined(expectError(yield* enroll(world.students[3]!, { group_id: none }), 409, "group_full").fields)
        yield* enrollTyped(world.students[3]!, one)
        const full = yield* enrollTyped(world.students[4]!, one).pipe(failsWith(Errors.GroupFull))
        assert.strictEqual(full.message, `Group ${one} has no free places.`)
        assert.isUndefined(full.fields)
        assert.deepStrictEqual(yield* groupCounts(one), { enrolled_count: 1, active: 1 })
        assert.strictEqual(yield* count("outbox_events", world.schoolA), events + 1)
      }))

    it.effect("already_enrolled (422): an active enrollment exists (also when the group is full); an ended one does not count", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const group = yield* newGroup("Once", 1)
        const student = world.students[5]!
        yield* enrollTyped(student, group)
        assert.isUndefined(expectError(yield* enroll(student, { group_id: group }), 422, "already_enrolled").fields)
        const again = yield* enrollTyped(student, group).pipe(failsWith(Errors.AlreadyEnrolled))
        assert.strictEqual(again.message, `Student ${student} is already enrolled in group ${group}.`)
        assert.isUndefined(again.fields)
        assert.deepStrictEqual(yield* groupCounts(group), { enrolled_count: 1, active: 1 })
        // End it (freeing the place): the student may enroll again.
        yield* sql`UPDATE enrollments SET ended_at = now() WHERE school_id = ${world.schoolA} AND student_id = ${student}`
        yield* sql`UPDATE groups SET enrolled_count = 0 WHERE school_id = ${world.schoolA} AND id = ${group}`
        const { data: enrolled } = yield* enrollTyped(student, group)
        assert.deepStrictEqual([enrolled.student_id, enrolled.group_id], [student, group])
      }))

    it.effect("validation_failed (422): group_id missing, not an integer, not positive; a malformed path id", () =>
      Effect.gen(function*() {
        const world = yield* World
        for (const body of [{}, { group_id: "5" }, { group_id: 0 }, { group_id: -1 }, { group_id: 1.5 }, { group_id: null }]) {
          const error = expectError(yield* enroll(world.students[6]!, body), 422, "validation_failed")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["group_id"], JSON.stringify(body))
        }
        for (const id of ["abc", "0", "-3", "2147483648"]) {
          const error = expectError(yield* enroll(id, { group_id: 1 }), 422, "validation_failed")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["id"], id)
        }
        assert.isUndefined(expectError(yield* enroll(world.students[6]!, "[1]"), 422, "validation_failed").fields)
      }))
  })
})
