/**
 * The outbox rows the back office's actions write (docs/integrators.md "Event catalog";
 * docs/decisions.md "Webhooks"): registering a student, enrolling,
 * marking "attended" and posting a payment each append exactly one event
 * whose payload, read back as the stored json text, decodes strictly with
 * the catalog's schema (libs/domain/src/Events.ts: no field more or less,
 * integers as integers) in the catalog's field order; a payment's amounts
 * are the exact rouble decimal in the stored text itself (150050 → 1500.5,
 * never 1500.5000000001 nor 1500.50).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { Enrollments, Events, Models } from "@school/domain"
import * as Records from "@school/domain/SchoolRecords"
import * as BackOffice from "../support/BackOffice.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly a: BackOffice.StaffSchool
  readonly owner: BackOffice.Crm
}>()("test/backoffice/events/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const a = yield* BackOffice.staffSchool()
      return World.of({ a, owner: yield* BackOffice.crm(a.emails.owner) })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

/** The catalog's field order per event (docs/integrators.md "Event catalog"). */
const ORDER: Readonly<Record<string, ReadonlyArray<string>>> = {
  "student.created": ["student_id", "student_name", "filial_id"],
  "group.enrolled": ["enrollment_id", "student_id", "group_id", "group_name", "filial_id"],
  "lesson.completed": ["student_id", "lesson_id", "group_id", "teacher_id", "visit_status", "filial_id"],
  "payment.received": ["student_id", "payment_id", "amount", "payment_amount", "payment_type", "group_id", "filial_id"]
}

/**
 * Runs `action` and returns the one outbox row it wrote, its payload decoded
 * strictly with the event's schema from the stored text.
 */
const onlyEvent = <A, E, R>(action: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const { a } = yield* World
    const before = (yield* Fixtures.outbox(a.schoolId)).length
    const result = yield* action
    const rows = (yield* Fixtures.outbox(a.schoolId)).slice(before)
    assert.strictEqual(rows.length, 1, JSON.stringify(rows))
    const row = rows[0]!
    const event = Schema.decodeUnknownSync(Events.EventName)(row.event)
    const parsed: unknown = JSON.parse(row.payload)
    const payload = Schema.decodeUnknownSync(Events.payloads[event])(parsed, Events.strict)
    assert.deepStrictEqual(Object.keys(payload), ORDER[event])
    return { result, event, payload, text: row.payload }
  })

/** The decimal text of `kopecks` roubles, computed apart from libs/domain's Money (with BigInt). */
const expectedRoubles = (kopecks: number): string => {
  const k = BigInt(kopecks)
  const whole = k / 100n
  const cents = k % 100n
  if (cents === 0n) return whole.toString()
  return `${whole}.${cents.toString().padStart(2, "0").replace(/0$/u, "")}`
}

/** The raw number text of a top-level key in the stored json (`"amount" : 1500.5`). */
const rawNumber = (text: string, key: string): string => {
  const match = new RegExp(`"${key}"\\s*:\\s*(-?[0-9][0-9.eE+-]*)`, "u").exec(text)
  if (match === null) throw new Error(`no number ${key} in ${text}`)
  return match[1]!
}

layer(Env, { excludeTestServices: true })("back-office events", (it) => {
  describe("each action writes exactly one event with the catalog's payload", () => {
    it.effect("student.created, group.enrolled, lesson.completed, payment.received", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const student = yield* onlyEvent(
          Effect.map(
            owner.post("/students", { fio: "Event Student", filial_id: a.filialId }),
            (reply) => BackOffice.dataOf(Models.StudentCard, reply, 201)
          )
        )
        assert.strictEqual(student.event, "student.created")
        assert.deepStrictEqual(student.payload, {
          student_id: student.result.id,
          student_name: "Event Student",
          filial_id: a.filialId
        })

        const group = BackOffice.dataOf(
          Models.Group,
          yield* owner.post("/groups", { name: "Event group", filial_id: a.filialId, capacity: 2, teacher_id: a.ids.teacher }),
          201
        )
        const enrolled = yield* onlyEvent(
          Effect.map(
            owner.post(`/students/${student.result.id}/enrollments`, { group_id: group.id }),
            (reply) => BackOffice.dataOf(Enrollments.Enrollment, reply, 201)
          )
        )
        assert.deepStrictEqual(enrolled.payload, {
          enrollment_id: enrolled.result.id,
          student_id: student.result.id,
          group_id: group.id,
          group_name: "Event group",
          filial_id: a.filialId
        })

        const lesson = BackOffice.dataOf(
          Models.Lesson,
          yield* owner.post("/lessons", {
            group_id: group.id,
            starts_at: "2026-06-01T09:00:00Z",
            ends_at: "2026-06-01T10:00:00Z"
          }),
          201
        )
        const completed = yield* onlyEvent(
          Effect.map(
            owner.post(`/lessons/${lesson.id}/attendance`, { student_id: student.result.id, visit_status: 1 }),
            (reply) => BackOffice.dataOf(Records.AttendanceMark, reply)
          )
        )
        assert.deepStrictEqual(completed.payload, {
          student_id: student.result.id,
          lesson_id: lesson.id,
          group_id: group.id,
          teacher_id: a.ids.teacher,
          visit_status: 1,
          filial_id: a.filialId
        })

        const paid = yield* onlyEvent(
          Effect.map(
            owner.post("/payments", {
              student_id: student.result.id,
              amount_kopecks: 150050,
              payment_type: "transfer",
              group_id: group.id
            }),
            (reply) => BackOffice.dataOf(Models.Payment, reply, 201)
          )
        )
        assert.deepStrictEqual(paid.payload, {
          student_id: student.result.id,
          payment_id: paid.result.id,
          amount: 1500.5,
          payment_amount: 1500.5,
          payment_type: "transfer",
          group_id: group.id,
          filial_id: a.filialId
        })
        // The stored text itself, not only the parsed number.
        assert.strictEqual(rawNumber(paid.text, "amount"), "1500.5")
        assert.strictEqual(rawNumber(paid.text, "payment_amount"), "1500.5")
      }))

    it.effect("marks that raise nothing write nothing: 2, 3, and a second 1", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const student = BackOffice.dataOf(
          Models.StudentCard,
          yield* owner.post("/students", { fio: "Quiet", filial_id: a.filialId }),
          201
        )
        const group = BackOffice.dataOf(
          Models.Group,
          yield* owner.post("/groups", { name: "Quiet group", filial_id: a.filialId, capacity: 2 }),
          201
        )
        const lesson = BackOffice.dataOf(
          Models.Lesson,
          yield* owner.post("/lessons", {
            group_id: group.id,
            starts_at: "2026-06-02T09:00:00Z",
            ends_at: "2026-06-02T10:00:00Z"
          }),
          201
        )
        const before = (yield* Fixtures.outbox(a.schoolId)).length
        for (const status of [2, 3, 2]) {
          BackOffice.dataOf(
            Records.AttendanceMark,
            yield* owner.post(`/lessons/${lesson.id}/attendance`, { student_id: student.id, visit_status: status })
          )
        }
        assert.strictEqual((yield* Fixtures.outbox(a.schoolId)).length, before)
        const first = yield* onlyEvent(owner.post(`/lessons/${lesson.id}/attendance`, { student_id: student.id, visit_status: 1 }))
        assert.deepStrictEqual([first.event, first.payload], [
          "lesson.completed",
          { student_id: student.id, lesson_id: lesson.id, group_id: group.id, teacher_id: 0, visit_status: 1, filial_id: a.filialId }
        ])
        BackOffice.dataOf(
          Records.AttendanceMark,
          yield* owner.post(`/lessons/${lesson.id}/attendance`, { student_id: student.id, visit_status: 1 })
        )
        assert.strictEqual((yield* Fixtures.outbox(a.schoolId)).length, before + 1)
      }))
  })

  describe("lesson.completed follows the rule (Records.raisesLessonCompleted)", () => {
    // Any sequence of marks of one student at one lesson: the events the database raises are the rule's.
    const Marks = Schema.Array(Records.VisitStatus).check(Schema.isMinLength(1), Schema.isMaxLength(6))
    it.effect.prop(
      "the number of lesson.completed for a sequence of marks is the rule's (at most one)",
      [Marks],
      ([marks]) =>
        Effect.gen(function*() {
          const { a, owner } = yield* World
          const student = BackOffice.dataOf(
            Models.StudentCard,
            yield* owner.post("/students", { fio: "Sequence", filial_id: a.filialId }),
            201
          )
          const group = BackOffice.dataOf(
            Models.Group,
            yield* owner.post("/groups", { name: "Sequence group", filial_id: a.filialId, capacity: 1 }),
            201
          )
          const lesson = BackOffice.dataOf(
            Models.Lesson,
            yield* owner.post("/lessons", {
              group_id: group.id,
              starts_at: "2026-06-03T09:00:00Z",
              ends_at: "2026-06-03T10:00:00Z"
            }),
            201
          )
          const before = (yield* Fixtures.outbox(a.schoolId)).length
          let previous: Option.Option<{ readonly first_attended_at: string | null }> = Option.none()
          let expected = 0
          for (const status of marks) {
            if (Records.raisesLessonCompleted(previous, status)) expected++
            const mark = BackOffice.dataOf(
              Records.AttendanceMark,
              yield* owner.post(`/lessons/${lesson.id}/attendance`, { student_id: student.id, visit_status: status })
            )
            assert.strictEqual(mark.visit_status, status)
            previous = Option.some(mark)
          }
          const events = (yield* Fixtures.outbox(a.schoolId)).slice(before)
          assert.deepStrictEqual(events.map((e) => e.event), Array.from({ length: expected }, () => "lesson.completed"))
          assert.strictEqual(expected, marks.includes(1) ? 1 : 0)
        }),
      { timeout: 120_000, arbitrary: { runs: 25 } }
    )
  })

  describe("payment.received amounts", () => {
    it.effect("the stored text is the exact rouble decimal; group_id 0 when none; JSON round-trips it", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const student = BackOffice.dataOf(
          Models.StudentCard,
          yield* owner.post("/students", { fio: "Amounts", filial_id: a.filialId }),
          201
        )
        const amounts = [1, 10, 99, 100, 101, 110, 150050, 123456, 1999, 100000, 999_999_999_999, 1_000_000_000_000]
        for (const amount of amounts) {
          const paid = yield* onlyEvent(
            owner.post("/payments", { student_id: student.id, amount_kopecks: amount, payment_type: "cash" })
          )
          const expected = expectedRoubles(amount)
          assert.strictEqual(rawNumber(paid.text, "amount"), expected, paid.text)
          assert.strictEqual(rawNumber(paid.text, "payment_amount"), expected, paid.text)
          assert.strictEqual(rawNumber(paid.text, "group_id"), "0")
          // What a receiver does: parse the body, and what the dispatcher's re-serialisation would write.
          const payload = Schema.decodeUnknownSync(Events.PaymentReceived)(JSON.parse(paid.text), Events.strict)
          assert.strictEqual(JSON.stringify(payload.amount), expected)
          assert.strictEqual(Math.round(payload.amount * 100), amount)
        }
        assert.deepStrictEqual(expectedRoubles(150050), "1500.5")
        assert.deepStrictEqual(expectedRoubles(100), "1")
        assert.deepStrictEqual(expectedRoubles(1), "0.01")
      }))
  })
})
