/**
 * The back office's school records over a real socket against a real
 * database (docs/back-office.md "Students and payments"): reference data,
 * groups, students, enrollments (the public function, its race), lessons,
 * attendance (lesson.completed once, also under concurrent marks) and
 * payments (balance, last-modified time seen by the public sync); for every
 * call: 403 per refused role, 404 across schools for an id in the path, 422
 * with fields, and no business row and no outbox event when refused.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Enrollments, Models } from "@school/domain"
import * as Records from "@school/domain/SchoolRecords"
import type { Role } from "@school/domain/Sessions"
import * as BackOffice from "../support/BackOffice.ts"
import { pageOf, type RawReply, type RawRequestError, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u
const MISSING_ID = 2_147_483_000

const one = <A>(rows: ReadonlyArray<A>): A => {
  const row = rows[0]
  if (row === undefined) throw new Error("expected one row")
  return row
}

/** School A (where the tests act) and school B (whose ids A must not reach), each with records of every kind. */
class World extends Context.Service<World, {
  readonly a: BackOffice.StaffSchool
  readonly b: BackOffice.StaffSchool
  readonly readKeyA: string
  /** B's records. */
  readonly ofB: {
    readonly student: number
    readonly group: number
    readonly lesson: number
    readonly subject: number
    readonly program: number
    readonly level: number
  }
  /** Sessions in A per role. */
  readonly sessions: Readonly<Record<Role, BackOffice.Crm>>
}>()("test/backoffice/school/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const a = yield* BackOffice.staffSchool()
      const b = yield* BackOffice.staffSchool()
      const [student] = yield* Fixtures.students(b.schoolId, b.filialId, 1, "Student of B")
      const group = yield* Fixtures.group(b.schoolId, b.filialId, "Group of B", 10)
      const lesson = yield* Fixtures.lesson(b.schoolId, group, b.filialId, "2026-05-01T10:00:00Z")
      const subject = one(yield* sql<{ id: number }>`
        INSERT INTO subjects (school_id, name) VALUES (${b.schoolId}, 'Subject of B') RETURNING id`).id
      const program = one(yield* sql<{ id: number }>`
        INSERT INTO programs (school_id, name) VALUES (${b.schoolId}, 'Program of B') RETURNING id`).id
      const level = one(yield* sql<{ id: number }>`
        INSERT INTO levels (school_id, name) VALUES (${b.schoolId}, 'Level of B') RETURNING id`).id
      return World.of({
        a,
        b,
        readKeyA: yield* Fixtures.key(a.schoolId, { scope: "read" }),
        ofB: { student: student!, group, lesson, subject, program, level },
        sessions: {
          owner: yield* BackOffice.crm(a.emails.owner),
          administrator: yield* BackOffice.crm(a.emails.administrator),
          manager: yield* BackOffice.crm(a.emails.manager),
          teacher: yield* BackOffice.crm(a.emails.teacher)
        }
      })
    }).pipe(Effect.orDie)
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

/** What a refused call must leave as it was: every school-record table of A, balances, places, the outbox. */
const stateOf = (schoolId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return one(yield* sql<Record<string, string>>`
      SELECT (SELECT count(*) FROM filials WHERE school_id = ${schoolId})::text AS filials,
             (SELECT count(*) FROM subjects WHERE school_id = ${schoolId})::text AS subjects,
             (SELECT count(*) FROM programs WHERE school_id = ${schoolId})::text AS programs,
             (SELECT count(*) FROM levels WHERE school_id = ${schoolId})::text AS levels,
             (SELECT count(*) FROM groups WHERE school_id = ${schoolId})::text AS groups,
             (SELECT coalesce(sum(enrolled_count), 0) FROM groups WHERE school_id = ${schoolId})::text AS enrolled,
             (SELECT count(*) FROM students WHERE school_id = ${schoolId})::text AS students,
             (SELECT coalesce(sum(balance_kopecks), 0) FROM students WHERE school_id = ${schoolId})::text AS balances,
             (SELECT coalesce(max(updated_at), 'epoch') FROM students WHERE school_id = ${schoolId})::text AS touched,
             (SELECT count(*) FROM enrollments WHERE school_id = ${schoolId})::text AS enrollments,
             (SELECT count(*) FROM lessons WHERE school_id = ${schoolId})::text AS lessons,
             (SELECT string_agg(lesson_id || ':' || student_id || ':' || visit_status, ',' ORDER BY lesson_id, student_id)
              FROM attendance WHERE school_id = ${schoolId}) AS attendance,
             (SELECT count(*) FROM payments WHERE school_id = ${schoolId})::text AS payments,
             (SELECT count(*) FROM outbox_events WHERE school_id = ${schoolId})::text AS outbox`)
  }).pipe(Effect.orDie)

/** Runs `call` and asserts that school A's records and outbox are exactly as before. */
const changesNothing = <A, E, R>(call: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const { a } = yield* World
    const before = yield* stateOf(a.schoolId)
    const result = yield* call
    assert.deepStrictEqual(yield* stateOf(a.schoolId), before)
    return result
  })

/** A refused call: status, code, exactly these `fields` keys (when given), nothing written. */
const refused = <R>(
  send: Effect.Effect<RawReply, RawRequestError, R>,
  status: number,
  code: string,
  fields?: ReadonlyArray<string>
) =>
  changesNothing(send).pipe(Effect.map((reply) => {
    const error = BackOffice.expectError(reply, status, code)
    if (fields !== undefined) assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), [...fields].sort(), reply.text)
    return error
  }))

const as = (role: Role) => Effect.map(World, (world) => world.sessions[role])
const post = (role: Role, path: string, body?: unknown) => Effect.flatMap(as(role), (session) => session.post(path, body))

const outboxOf = (schoolId: number) => Fixtures.outbox(schoolId)

/** Creates a group in A through the back office (201 asserted). */
const newGroup = (name: string, capacity: number, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const { a } = yield* World
    return BackOffice.dataOf(
      Models.Group,
      yield* post("owner", "/groups", { name, filial_id: a.filialId, capacity, ...extra }),
      201
    )
  })

const newStudent = (fio: string) =>
  Effect.gen(function*() {
    const { a } = yield* World
    return BackOffice.dataOf(Models.StudentCard, yield* post("manager", "/students", { fio, filial_id: a.filialId }), 201)
  })

const newLesson = (groupId: number, extra: Record<string, unknown> = {}) =>
  Effect.map(
    post("administrator", "/lessons", {
      group_id: groupId,
      starts_at: "2026-05-04T10:00:00+03:00",
      ends_at: "2026-05-04T11:30:00+03:00",
      ...extra
    }),
    (reply) => BackOffice.dataOf(Models.Lesson, reply, 201)
  )

layer(Env, { excludeTestServices: true })("back-office school records", (it) => {
  describe("reference data", () => {
    it.effect("POST /filials, /subjects, /programs, /levels: 201 with the record as the public API shows it", () =>
      Effect.gen(function*() {
        const world = yield* World
        const filial = BackOffice.dataOf(
          Models.Filial,
          yield* post("owner", "/filials", { name: "  North  ", address: " Lenina 1 " }),
          201
        )
        assert.deepStrictEqual(filial, { id: filial.id, name: "North", address: "Lenina 1" })
        const bare = BackOffice.dataOf(Models.Filial, yield* post("administrator", "/filials", { name: "South" }), 201)
        assert.strictEqual(bare.address, null)
        const subject = BackOffice.dataOf(Models.Subject, yield* post("owner", "/subjects", { name: "Maths" }), 201)
        assert.deepStrictEqual(subject, { id: subject.id, name: "Maths" })
        const program = BackOffice.dataOf(
          Models.Program,
          yield* post("owner", "/programs", { name: "Algebra", subject_id: subject.id }),
          201
        )
        assert.deepStrictEqual(program, { id: program.id, name: "Algebra", subject_id: subject.id })
        const level = BackOffice.dataOf(
          Models.Level,
          yield* post("owner", "/levels", { name: "Beginner", program_id: program.id }),
          201
        )
        assert.deepStrictEqual(level, { id: level.id, name: "Beginner", program_id: program.id })
        const loose = BackOffice.dataOf(Models.Level, yield* post("owner", "/levels", { name: "Any", program_id: null }), 201)
        assert.strictEqual(loose.program_id, null)
        // The public API lists what the back office made.
        const server = yield* TestServer
        const filials = pageOf(Models.Filial, yield* server.raw.get(`${V1}/filials?per_page=100`, world.readKeyA))
        assert.deepInclude(filials.data, filial)
        const levels = pageOf(Models.Level, yield* server.raw.get(`${V1}/levels?per_page=100`, world.readKeyA))
        assert.deepInclude(levels.data, level)
      }))

    it.effect("another school's subject or program is 422 on that field; bad names are 422 per field", () =>
      Effect.gen(function*() {
        const { ofB } = yield* World
        yield* refused(post("owner", "/programs", { name: "P", subject_id: ofB.subject }), 422, "VALIDATION_FAILED", [
          "subject_id"
        ])
        yield* refused(post("owner", "/programs", { name: "P", subject_id: MISSING_ID }), 422, "VALIDATION_FAILED", [
          "subject_id"
        ])
        yield* refused(post("owner", "/levels", { name: "L", program_id: ofB.program }), 422, "VALIDATION_FAILED", [
          "program_id"
        ])
        yield* refused(post("owner", "/filials", { name: "   " }), 422, "VALIDATION_FAILED", ["name"])
        yield* refused(post("owner", "/filials", { address: "x" }), 422, "VALIDATION_FAILED", ["name"])
        yield* refused(post("owner", "/filials", { name: "N", address: 5 }), 422, "VALIDATION_FAILED", ["address"])
        yield* refused(post("owner", "/subjects", { name: "x".repeat(256) }), 422, "VALIDATION_FAILED", ["name"])
        yield* refused(post("owner", "/subjects", { name: 7 }), 422, "VALIDATION_FAILED", ["name"])
        yield* refused(post("owner", "/programs", { name: "P", subject_id: "1" }), 422, "VALIDATION_FAILED", ["subject_id"])
        yield* refused(post("owner", "/levels", { name: "L", program_id: 0 }), 422, "VALIDATION_FAILED", ["program_id"])
        const notJson = yield* refused(post("owner", "/subjects", "{"), 422, "VALIDATION_FAILED")
        assert.isUndefined(notJson.fields)
      }))
  })

  describe("POST /groups", () => {
    it.effect("201 with the group as the public API shows it: references of the school, capacity >= 0", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const subject = BackOffice.dataOf(Models.Subject, yield* post("owner", "/subjects", { name: "Music" }), 201)
        const program = BackOffice.dataOf(
          Models.Program,
          yield* post("owner", "/programs", { name: "Piano", subject_id: subject.id }),
          201
        )
        const level = BackOffice.dataOf(Models.Level, yield* post("owner", "/levels", { name: "A1" }), 201)
        const group = yield* newGroup("  Piano A1 ", 8, {
          subject_id: subject.id,
          program_id: program.id,
          level_id: level.id,
          teacher_id: a.ids.teacher
        })
        assert.deepStrictEqual(group, {
          id: group.id,
          name: "Piano A1",
          filial_id: a.filialId,
          subject_id: subject.id,
          program_id: program.id,
          level_id: level.id,
          teacher_id: a.ids.teacher,
          capacity: 8,
          enrolled_count: 0,
          free_places: 8
        })
        const empty = yield* newGroup("Waiting list", 0)
        assert.deepStrictEqual([empty.capacity, empty.free_places, empty.subject_id, empty.teacher_id], [0, 0, null, null])
        const world = yield* World
        const server = yield* TestServer
        const groups = pageOf(Models.Group, yield* server.raw.get(`${V1}/groups?per_page=100`, world.readKeyA))
        assert.deepInclude(groups.data, group)
      }))

    it.effect("another school's (or a missing) filial, subject, program, level or teacher: 422 naming every one", () =>
      Effect.gen(function*() {
        const { b, ofB } = yield* World
        yield* refused(
          post("owner", "/groups", {
            name: "G",
            capacity: 5,
            filial_id: b.filialId,
            subject_id: ofB.subject,
            program_id: ofB.program,
            level_id: ofB.level,
            teacher_id: b.ids.teacher
          }),
          422,
          "VALIDATION_FAILED",
          ["filial_id", "subject_id", "program_id", "level_id", "teacher_id"]
        )
        const { a } = yield* World
        yield* refused(
          post("owner", "/groups", { name: "G", capacity: 5, filial_id: a.filialId, teacher_id: MISSING_ID }),
          422,
          "VALIDATION_FAILED",
          ["teacher_id"]
        )
      }))

    it.effect("bad input: 422 with every field (types, missing, negative capacity)", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        yield* refused(post("owner", "/groups", {}), 422, "VALIDATION_FAILED", ["name", "filial_id", "capacity"])
        yield* refused(
          post("owner", "/groups", { name: "G", filial_id: a.filialId, capacity: -1 }),
          422,
          "VALIDATION_FAILED",
          ["capacity"]
        )
        yield* refused(
          post("owner", "/groups", { name: "G", filial_id: String(a.filialId), capacity: 1.5, teacher_id: true }),
          422,
          "VALIDATION_FAILED",
          ["filial_id", "capacity", "teacher_id"]
        )
        yield* refused(
          post("owner", "/groups", { name: "G", filial_id: a.filialId, capacity: 2_147_483_648 }),
          422,
          "VALIDATION_FAILED",
          ["capacity"]
        )
      }))
  })

  describe("POST /students", () => {
    it.effect("201 with the student card; one student.created with the card's id, fio and filial", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const before = (yield* outboxOf(a.schoolId)).length
        const card = BackOffice.dataOf(
          Models.StudentCard,
          yield* post("manager", "/students", {
            fio: "  Anna Ivanova ",
            phone: " +7 (900) 111-22-33 ",
            email: " anna@example.com ",
            filial_id: a.filialId
          }),
          201
        )
        assert.deepStrictEqual(card, {
          id: card.id,
          fio: "Anna Ivanova",
          phone: "+7 (900) 111-22-33",
          email: "anna@example.com",
          balance_kopecks: 0,
          filial_id: a.filialId,
          created_at: card.created_at,
          updated_at: card.updated_at,
          active_groups: []
        })
        assert.match(card.created_at, TIMESTAMP)
        const events = (yield* outboxOf(a.schoolId)).slice(before)
        assert.deepStrictEqual(events.map((e) => [e.event, JSON.parse(e.payload)]), [
          ["student.created", { student_id: card.id, student_name: "Anna Ivanova", filial_id: a.filialId }]
        ])
        const bare = yield* newStudent("Boris")
        assert.deepStrictEqual([bare.phone, bare.email], ["", ""])
      }))

    it.effect("another school's filial is 422 filial_id; bad fio, phone, e-mail are 422 per field; nothing written", () =>
      Effect.gen(function*() {
        const { a, b } = yield* World
        yield* refused(post("manager", "/students", { fio: "X", filial_id: b.filialId }), 422, "VALIDATION_FAILED", [
          "filial_id"
        ])
        yield* refused(post("owner", "/students", {}), 422, "VALIDATION_FAILED", ["fio", "filial_id"])
        yield* refused(
          post("owner", "/students", { fio: " ", phone: "call me", email: "nope", filial_id: a.filialId }),
          422,
          "VALIDATION_FAILED",
          ["fio", "phone", "email"]
        )
        yield* refused(
          post("owner", "/students", { fio: ["A"], filial_id: -1 }),
          422,
          "VALIDATION_FAILED",
          ["fio", "filial_id"]
        )
      }))
  })

  describe("POST /students/{id}/enrollments", () => {
    it.effect("201 with the enrollment (the public function): one group.enrolled, a place taken", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const group = yield* newGroup("Chess", 3)
        const student = yield* newStudent("Chess player")
        const before = (yield* outboxOf(a.schoolId)).length
        const enrollment = BackOffice.dataOf(
          Enrollments.Enrollment,
          yield* post("manager", `/students/${student.id}/enrollments`, { group_id: group.id }),
          201
        )
        assert.deepStrictEqual([enrollment.student_id, enrollment.group_id], [student.id, group.id])
        const events = (yield* outboxOf(a.schoolId)).slice(before)
        assert.deepStrictEqual(events.map((e) => [e.event, JSON.parse(e.payload)]), [
          ["group.enrolled", {
            enrollment_id: enrollment.id,
            student_id: student.id,
            group_id: group.id,
            group_name: "Chess",
            filial_id: a.filialId
          }]
        ])
        const sql = yield* SqlClient.SqlClient
        const places = one(yield* sql<{ enrolled_count: number }>`
          SELECT enrolled_count FROM groups WHERE school_id = ${a.schoolId} AND id = ${group.id}`)
        assert.strictEqual(places.enrolled_count, 1)
      }))

    it.effect("404 for another school's or a missing student; 422 group_id for another school's group; 409s", () =>
      Effect.gen(function*() {
        const { ofB } = yield* World
        const group = yield* newGroup("Tiny", 1)
        const student = yield* newStudent("Tiny one")
        const other = yield* newStudent("Tiny two")
        yield* refused(post("manager", `/students/${ofB.student}/enrollments`, { group_id: group.id }), 404, "NOT_FOUND")
        yield* refused(post("manager", `/students/${MISSING_ID}/enrollments`, { group_id: group.id }), 404, "NOT_FOUND")
        yield* refused(
          post("manager", `/students/${student.id}/enrollments`, { group_id: ofB.group }),
          422,
          "VALIDATION_FAILED",
          ["group_id"]
        )
        yield* refused(post("manager", `/students/${student.id}/enrollments`, {}), 422, "VALIDATION_FAILED", ["group_id"])
        yield* refused(
          post("manager", `/students/abc/enrollments`, { group_id: group.id }),
          422,
          "VALIDATION_FAILED",
          ["id"]
        )
        assert.strictEqual((yield* post("manager", `/students/${student.id}/enrollments`, { group_id: group.id })).status, 201)
        yield* refused(
          post("manager", `/students/${student.id}/enrollments`, { group_id: group.id }),
          409,
          "ALREADY_ENROLLED"
        )
        yield* refused(post("manager", `/students/${other.id}/enrollments`, { group_id: group.id }), 409, "GROUP_FULL")
      }))

    it.effect("two concurrent enrollments into a group's last place: one 201, one 409 GROUP_FULL", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        for (let round = 0; round < 5; round++) {
          const group = yield* newGroup(`Last place ${round}`, 1)
          const first = yield* newStudent(`Racer ${round}a`)
          const second = yield* newStudent(`Racer ${round}b`)
          const before = (yield* outboxOf(a.schoolId)).length
          const replies = yield* Effect.all([
            post("owner", `/students/${first.id}/enrollments`, { group_id: group.id }),
            post("manager", `/students/${second.id}/enrollments`, { group_id: group.id })
          ], { concurrency: "unbounded" })
          assert.deepStrictEqual(replies.map((r) => r.status).sort(), [201, 409], replies.map((r) => r.text).join("\n"))
          const loser = replies.find((r) => r.status === 409)!
          BackOffice.expectError(loser, 409, "GROUP_FULL")
          const events = (yield* outboxOf(a.schoolId)).slice(before)
          assert.deepStrictEqual(events.map((e) => e.event), ["group.enrolled"])
        }
      }))
  })

  describe("POST /lessons", () => {
    it.effect("201 with the lesson: the group's filial, the group's teacher unless one is given, times in UTC", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const group = yield* newGroup("With teacher", 5, { teacher_id: a.ids.teacher })
        const lesson = yield* newLesson(group.id, { topic: "  Scales " })
        assert.deepStrictEqual(lesson, {
          id: lesson.id,
          group_id: group.id,
          filial_id: a.filialId,
          teacher_id: a.ids.teacher,
          starts_at: "2026-05-04T07:00:00.000000Z",
          ends_at: "2026-05-04T08:30:00.000000Z",
          topic: "Scales"
        })
        const other = yield* newLesson(group.id, { teacher_id: a.ids.manager, ends_at: "2026-05-04T07:00:00Z" })
        assert.deepStrictEqual([other.teacher_id, other.topic, other.ends_at], [
          a.ids.manager,
          null,
          "2026-05-04T07:00:00.000000Z"
        ])
        const bare = yield* newLesson((yield* newGroup("No teacher", 5)).id)
        assert.strictEqual(bare.teacher_id, null)
        const world = yield* World
        const server = yield* TestServer
        const listed = pageOf(
          Models.Lesson,
          yield* server.raw.get(`${V1}/lessons?from=2026-05-04&to=2026-05-04&per_page=100`, world.readKeyA)
        )
        assert.deepInclude(listed.data, lesson)
      }))

    it.effect("ends before it starts, bad instants, another school's group or teacher: 422 per field", () =>
      Effect.gen(function*() {
        const { b, ofB } = yield* World
        const group = yield* newGroup("Lessons", 5)
        yield* refused(
          post("owner", "/lessons", {
            group_id: group.id,
            starts_at: "2026-05-04T10:00:00+03:00",
            ends_at: "2026-05-04T06:59:59Z"
          }),
          422,
          "VALIDATION_FAILED",
          ["ends_at"]
        )
        yield* refused(
          post("owner", "/lessons", { group_id: group.id, starts_at: "2026-05-04 10:00", ends_at: "2026-05-04T10:00:00" }),
          422,
          "VALIDATION_FAILED",
          ["starts_at", "ends_at"]
        )
        yield* refused(post("owner", "/lessons", {}), 422, "VALIDATION_FAILED", ["group_id", "starts_at", "ends_at"])
        yield* refused(
          post("owner", "/lessons", {
            group_id: ofB.group,
            teacher_id: b.ids.teacher,
            starts_at: "2026-05-04T10:00:00Z",
            ends_at: "2026-05-04T11:00:00Z"
          }),
          422,
          "VALIDATION_FAILED",
          ["group_id", "teacher_id"]
        )
        yield* refused(
          post("owner", "/lessons", {
            group_id: group.id,
            starts_at: "2026-05-04T10:00:00Z",
            ends_at: "2026-05-04T11:00:00Z",
            topic: "x".repeat(1001)
          }),
          422,
          "VALIDATION_FAILED",
          ["topic"]
        )
      }))
  })

  describe("POST /lessons/{id}/attendance", () => {
    const mark = (role: Role, lessonId: number | string, studentId: unknown, visitStatus: unknown) =>
      post(role, `/lessons/${lessonId}/attendance`, { student_id: studentId, visit_status: visitStatus })

    const completedFor = (lessonId: number, studentId: number) =>
      Effect.gen(function*() {
        const { a } = yield* World
        return (yield* outboxOf(a.schoolId)).filter((e) => {
          const payload = JSON.parse(e.payload)
          return e.event === "lesson.completed" && payload.lesson_id === lessonId && payload.student_id === studentId
        })
      })

    it.effect("1 raises lesson.completed once; a second 1, 2, 3 and 1 again after 2 raise nothing; 200 with the mark", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const group = yield* newGroup("Marks", 5, { teacher_id: a.ids.teacher })
        const lesson = yield* newLesson(group.id)
        const student = yield* newStudent("Marked")
        const first = BackOffice.dataOf(Records.AttendanceMark, yield* mark("teacher", lesson.id, student.id, 1))
        assert.deepStrictEqual(first, {
          lesson_id: lesson.id,
          student_id: student.id,
          group_id: group.id,
          visit_status: 1,
          marked_at: first.marked_at,
          first_attended_at: first.marked_at
        })
        const events = yield* completedFor(lesson.id, student.id)
        assert.deepStrictEqual(events.map((e) => JSON.parse(e.payload)), [{
          student_id: student.id,
          lesson_id: lesson.id,
          group_id: group.id,
          teacher_id: a.ids.teacher,
          visit_status: 1,
          filial_id: a.filialId
        }])
        const again = BackOffice.dataOf(Records.AttendanceMark, yield* mark("owner", lesson.id, student.id, 1))
        assert.strictEqual(again.first_attended_at, first.first_attended_at)
        const absent = BackOffice.dataOf(Records.AttendanceMark, yield* mark("teacher", lesson.id, student.id, 2))
        assert.deepStrictEqual([absent.visit_status, absent.first_attended_at], [2, first.first_attended_at])
        BackOffice.dataOf(Records.AttendanceMark, yield* mark("teacher", lesson.id, student.id, 1))
        assert.strictEqual((yield* completedFor(lesson.id, student.id)).length, 1)
      }))

    it.effect("2 or 3 first raise nothing; the first 1 after them raises it; teacher_id 0 when the lesson has none", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const group = yield* newGroup("No teacher marks", 5)
        const lesson = yield* newLesson(group.id)
        const student = yield* newStudent("Late")
        const excused = BackOffice.dataOf(Records.AttendanceMark, yield* mark("administrator", lesson.id, student.id, 3))
        assert.deepStrictEqual([excused.visit_status, excused.first_attended_at], [3, null])
        BackOffice.dataOf(Records.AttendanceMark, yield* mark("teacher", lesson.id, student.id, 2))
        assert.strictEqual((yield* completedFor(lesson.id, student.id)).length, 0)
        BackOffice.dataOf(Records.AttendanceMark, yield* mark("teacher", lesson.id, student.id, 1))
        const events = yield* completedFor(lesson.id, student.id)
        assert.deepStrictEqual(events.map((e) => JSON.parse(e.payload)), [{
          student_id: student.id,
          lesson_id: lesson.id,
          group_id: group.id,
          teacher_id: 0,
          visit_status: 1,
          filial_id: a.filialId
        }])
      }))

    it.effect("concurrent 'attended' marks of one student raise exactly one lesson.completed", () =>
      Effect.gen(function*() {
        const group = yield* newGroup("Race marks", 5)
        const lesson = yield* newLesson(group.id)
        for (let round = 0; round < 3; round++) {
          const student = yield* newStudent(`Racing ${round}`)
          const roles: ReadonlyArray<Role> = ["owner", "administrator", "teacher"]
          const replies = yield* Effect.all(
            Array.from({ length: 12 }, (_, i) => mark(roles[i % roles.length]!, lesson.id, student.id, 1)),
            { concurrency: "unbounded" }
          )
          for (const reply of replies) BackOffice.dataOf(Records.AttendanceMark, reply)
          assert.strictEqual((yield* completedFor(lesson.id, student.id)).length, 1)
        }
      }))

    it.effect("another school's or a missing lesson: 404; another school's student: 422 student_id; bad status: 422", () =>
      Effect.gen(function*() {
        const { ofB } = yield* World
        const lesson = yield* newLesson((yield* newGroup("Marks 404", 5)).id)
        const student = yield* newStudent("Nobody marks me")
        yield* refused(mark("teacher", ofB.lesson, student.id, 1), 404, "NOT_FOUND")
        yield* refused(mark("teacher", MISSING_ID, student.id, 1), 404, "NOT_FOUND")
        yield* refused(mark("teacher", lesson.id, ofB.student, 1), 422, "VALIDATION_FAILED", ["student_id"])
        yield* refused(mark("teacher", lesson.id, MISSING_ID, 1), 422, "VALIDATION_FAILED", ["student_id"])
        for (const status of [0, 4, "1", 1.5, null]) {
          yield* refused(mark("teacher", lesson.id, student.id, status), 422, "VALIDATION_FAILED", ["visit_status"])
        }
        yield* refused(post("teacher", `/lessons/${lesson.id}/attendance`, {}), 422, "VALIDATION_FAILED", [
          "student_id",
          "visit_status"
        ])
        yield* refused(mark("teacher", "01", student.id, 1), 422, "VALIDATION_FAILED", ["id"])
      }))
  })

  describe("POST /payments", () => {
    it.effect("201 with the payment; the balance rises and updated_at moves, so the public updated_since sync sees it", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { a } = world
        const sql = yield* SqlClient.SqlClient
        const student = yield* newStudent("Payer")
        // The sync's mark: after the student was written.
        const mark = one(yield* sql<{ at: string }>`SELECT api_ts(clock_timestamp()) AS at`).at
        const payment = BackOffice.dataOf(
          Models.Payment,
          yield* post("manager", "/payments", { student_id: student.id, amount_kopecks: 150050, payment_type: "card" }),
          201
        )
        assert.deepStrictEqual(payment, {
          id: payment.id,
          student_id: student.id,
          amount_kopecks: 150050,
          payment_type: "card",
          group_id: null,
          filial_id: a.filialId,
          paid_at: payment.paid_at,
          created_at: payment.created_at,
          updated_at: payment.updated_at
        })
        const server = yield* TestServer
        const synced = pageOf(
          Models.StudentListItem,
          yield* server.raw.get(`${V1}/students?per_page=100&updated_since=${mark}`, world.readKeyA)
        )
        const seen = synced.data.find((s) => s.id === student.id)
        assert.isDefined(seen, "the payment moved the student's updated_at past the sync mark")
        assert.strictEqual(seen!.balance_kopecks, 150050)
        assert.isTrue(seen!.updated_at !== null && seen!.updated_at >= mark)
        const payments = pageOf(
          Models.Payment,
          yield* server.raw.get(`${V1}/payments?per_page=100&updated_since=${mark}`, world.readKeyA)
        )
        assert.deepInclude(payments.data, payment)
        // A second payment with a group and a time adds up.
        const group = yield* newGroup("Paid group", 5)
        const second = BackOffice.dataOf(
          Models.Payment,
          yield* post("owner", "/payments", {
            student_id: student.id,
            amount_kopecks: 1,
            payment_type: "cash",
            group_id: group.id,
            paid_at: "2026-04-30T12:00:00+03:00"
          }),
          201
        )
        assert.deepStrictEqual([second.group_id, second.paid_at], [group.id, "2026-04-30T09:00:00.000000Z"])
        const balance = one(yield* sql<{ b: string }>`
          SELECT balance_kopecks::text AS b FROM students WHERE school_id = ${a.schoolId} AND id = ${student.id}`).b
        assert.strictEqual(balance, "150051")
      }))

    it.effect("another school's student or group: 422 per field; bad amounts and types: 422; nothing written", () =>
      Effect.gen(function*() {
        const { ofB } = yield* World
        const student = yield* newStudent("Refused payer")
        const pay = (body: Record<string, unknown>) =>
          post("manager", "/payments", { student_id: student.id, amount_kopecks: 100, payment_type: "cash", ...body })
        yield* refused(pay({ student_id: ofB.student, group_id: ofB.group }), 422, "VALIDATION_FAILED", [
          "student_id",
          "group_id"
        ])
        yield* refused(pay({ student_id: MISSING_ID }), 422, "VALIDATION_FAILED", ["student_id"])
        for (const amount of [0, -100, 1.5, "100", 1_000_000_000_001, null]) {
          yield* refused(pay({ amount_kopecks: amount }), 422, "VALIDATION_FAILED", ["amount_kopecks"])
        }
        for (const type of ["crypto", "", 1, null]) {
          yield* refused(pay({ payment_type: type }), 422, "VALIDATION_FAILED", ["payment_type"])
        }
        yield* refused(pay({ paid_at: "yesterday" }), 422, "VALIDATION_FAILED", ["paid_at"])
        yield* refused(post("manager", "/payments", {}), 422, "VALIDATION_FAILED", [
          "student_id",
          "amount_kopecks",
          "payment_type"
        ])
      }))

    it.effect("a payment that would take the balance past what JSON carries exactly is 422 amount_kopecks", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const sql = yield* SqlClient.SqlClient
        const student = yield* newStudent("Rich")
        yield* sql`UPDATE students SET balance_kopecks = ${Number.MAX_SAFE_INTEGER - 10}::bigint
                   WHERE school_id = ${a.schoolId} AND id = ${student.id}`
        yield* refused(
          post("manager", "/payments", { student_id: student.id, amount_kopecks: 11, payment_type: "cash" }),
          422,
          "VALIDATION_FAILED",
          ["amount_kopecks"]
        )
        assert.strictEqual(
          (yield* post("manager", "/payments", { student_id: student.id, amount_kopecks: 10, payment_type: "cash" })).status,
          201
        )
      }))
  })

  describe("roles", () => {
    it.effect("every call refuses the roles outside its row with 403 FORBIDDEN, even with a valid body, writing nothing", () =>
      Effect.gen(function*() {
        const { a } = yield* World
        const group = yield* newGroup("Roles", 50)
        const lesson = yield* newLesson(group.id)
        const student = yield* newStudent("Roles")
        const calls: ReadonlyArray<readonly [path: string, body: unknown, allowed: ReadonlyArray<Role>]> = [
          ["/filials", { name: "F" }, ["owner", "administrator"]],
          ["/subjects", { name: "S" }, ["owner", "administrator"]],
          ["/programs", { name: "P" }, ["owner", "administrator"]],
          ["/levels", { name: "L" }, ["owner", "administrator"]],
          ["/groups", { name: "G", filial_id: a.filialId, capacity: 1 }, ["owner", "administrator"]],
          ["/lessons", {
            group_id: group.id,
            starts_at: "2026-05-04T10:00:00Z",
            ends_at: "2026-05-04T11:00:00Z"
          }, ["owner", "administrator"]],
          ["/students", { fio: "S", filial_id: a.filialId }, ["owner", "administrator", "manager"]],
          [`/students/${student.id}/enrollments`, { group_id: group.id }, ["owner", "administrator", "manager"]],
          [`/lessons/${lesson.id}/attendance`, { student_id: student.id, visit_status: 1 }, [
            "owner",
            "administrator",
            "teacher"
          ]],
          ["/payments", { student_id: student.id, amount_kopecks: 100, payment_type: "cash" }, [
            "owner",
            "administrator",
            "manager"
          ]]
        ]
        let forbidden = 0
        for (const [path, body, allowed] of calls) {
          for (const role of BackOffice.ROLES) {
            if (allowed.includes(role)) continue
            yield* refused(post(role, path, body), 403, "FORBIDDEN")
            // A refused role is refused before its body is read: an invalid one gets the same 403.
            yield* refused(post(role, path, { nonsense: true }), 403, "FORBIDDEN")
            forbidden++
          }
        }
        assert.strictEqual(forbidden, 16)
      }))

    it.effect("without a session: 401 UNAUTHENTICATED; an API key does not work here", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const world = yield* World
        const anonymous = yield* changesNothing(server.raw.post(`${BackOffice.CRM}/subjects`, { body: { name: "S" } }))
        BackOffice.expectError(anonymous, 401, "UNAUTHENTICATED")
        const byKey = yield* changesNothing(
          server.raw.post(`${BackOffice.CRM}/subjects`, { key: world.readKeyA, body: { name: "S" } })
        )
        BackOffice.expectError(byKey, 401, "UNAUTHENTICATED")
      }))
  })
})
