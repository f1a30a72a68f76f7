/**
 * The back office's writes of school records (docs/back-office.md
 * "Students and payments"; docs/decisions.md "Resources", "Writes"): reference
 * data (filials, subjects, programs, levels), groups, students, lessons,
 * attendance marks and payments. Enrollment is not here: both APIs use
 * Enrollments.enroll.
 *
 * Each write is ONE statement: the references it names are checked against
 * the caller's school, the rows are written only when all of them are the
 * school's, and the webhook event (student.created, lesson.completed,
 * payment.received) is appended to the outbox in the same statement, so a
 * refused write leaves no row and no event. A reference that is not the
 * school's (missing, or another school's: the same answer) refuses the
 * write with `ReferencesNotFound` naming its field; every bad reference is
 * reported at once.
 * Every function takes the caller's SchoolId.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { Statement } from "effect/sql"
import * as SqlClient from "effect/sql/SqlClient"
import { type Ids, Models, Money } from "@school/domain"
import * as DomainErrors from "@school/domain/DomainErrors"
import * as Rules from "@school/domain/SchoolRecords"
import { insertEvents } from "./Outbox.ts"
import { named } from "./Spans.ts"

/** A reference a write names: the body field, whether it is the school's (a boolean SQL expression), and what it names. */
interface Reference {
  readonly field: string
  readonly ok: Statement.Fragment
  readonly entity: DomainErrors.ReferencedEntity
  /** null: none named (always the school's). */
  readonly id: number | null
}

const Missing = Schema.Struct({ missing: Schema.Array(Schema.String) })
const decodeMissing = Schema.decodeUnknownEffect(Missing)

/** The refusal naming the `missing` fields' references, in the write's order of its references. */
const refused = (references: ReadonlyArray<Reference>, missing: ReadonlyArray<string>) => {
  const named = references.flatMap(({ entity, field, id }) =>
    id !== null && missing.includes(field) ? [{ field, entity, id }] : []
  )
  const [first, ...rest] = named
  // Only a named reference (id not null) can be missing.
  return first === undefined
    ? Effect.die(new Error(`SchoolRecords: missing ${missing.join(", ")} names no reference`))
    : Effect.fail(new DomainErrors.ReferencesNotFound({ references: [first, ...rest] }))
}

const StudentCardRow = Schema.Struct({
  ...Models.StudentCard.fields,
  balance_kopecks: Money.KopecksFromBigInt
})
const PaymentRow = Schema.Struct({
  ...Models.Payment.fields,
  amount_kopecks: Money.KopecksFromBigInt
})

/** What the attendance statement found, beside the mark (NULL when none was written). */
const MarkOutcome = Schema.Struct({
  lesson_found: Schema.Boolean,
  student_found: Schema.Boolean,
  lesson_id: Schema.NullOr(Schema.Int)
})
const decodeMarkOutcome = Schema.decodeUnknownEffect(MarkOutcome)
const decodeMark = Schema.decodeUnknownEffect(Rules.AttendanceMark)
/**
 * The most runs of the attendance statement for one mark: a second run
 * always finds the mark a concurrent first one inserted; a third and more
 * only if marks were deleted in between.
 */
const MARK_ATTEMPTS = 5

/** What the payment statement found: the references, and whether the balance was raised. */
const PaymentOutcome = Schema.Struct({
  missing: Schema.Array(Schema.String),
  id: Schema.NullOr(Schema.Int)
})
const decodePaymentOutcome = Schema.decodeUnknownEffect(PaymentOutcome)

export interface NewGroup {
  readonly name: string
  readonly filialId: number
  readonly capacity: number
  readonly subjectId: number | null
  readonly programId: number | null
  readonly levelId: number | null
  readonly teacherId: number | null
}

export interface NewStudent {
  readonly fio: string
  readonly phone: string
  readonly email: string
  readonly filialId: number
}

export interface NewLesson {
  readonly groupId: number
  /** UTC spellings (Timestamps.IsoInstant). */
  readonly startsAt: string
  readonly endsAt: string
  /** null: the group's teacher. */
  readonly teacherId: number | null
  readonly topic: string | null
}

export interface NewPayment {
  readonly studentId: number
  readonly amountKopecks: number
  readonly paymentType: Models.PaymentType
  readonly groupId: number | null
  /** UTC spelling; null: now. */
  readonly paidAt: string | null
}

type Refusal = DomainErrors.ReferencesNotFound

export class SchoolRecords extends Context.Service<SchoolRecords, {
  createFilial(schoolId: Ids.SchoolId, filial: { readonly name: string; readonly address: string | null }): Effect.Effect<typeof Models.Filial.Type>
  createSubject(schoolId: Ids.SchoolId, subject: { readonly name: string }): Effect.Effect<typeof Models.Subject.Type>
  createProgram(
    schoolId: Ids.SchoolId,
    program: { readonly name: string; readonly subjectId: number | null }
  ): Effect.Effect<typeof Models.Program.Type, Refusal>
  createLevel(
    schoolId: Ids.SchoolId,
    level: { readonly name: string; readonly programId: number | null }
  ): Effect.Effect<typeof Models.Level.Type, Refusal>
  createGroup(schoolId: Ids.SchoolId, group: NewGroup): Effect.Effect<Models.Group, Refusal>
  /** The student and its `student.created` (docs/integrators.md "Event catalog"). */
  createStudent(schoolId: Ids.SchoolId, student: NewStudent): Effect.Effect<Models.StudentCard, Refusal>
  /** The lesson in its group's filial. */
  createLesson(schoolId: Ids.SchoolId, lesson: NewLesson): Effect.Effect<Models.Lesson, Refusal>
  /**
   * Sets a student's mark at a lesson (a second mark replaces the first);
   * `lesson.completed` when the mark becomes 1 for the first time
   * (Rules.raisesLessonCompleted). `LessonNotFound`: the lesson is not the
   * school's; `ReferencesNotFound` (student_id): the student is not.
   */
  markAttendance(
    schoolId: Ids.SchoolId,
    lessonId: Rules.LessonId,
    mark: { readonly studentId: number; readonly visitStatus: Rules.VisitStatus }
  ): Effect.Effect<Rules.AttendanceMark, DomainErrors.LessonNotFound | Refusal>
  /**
   * The payment, the student's balance and last-modified time, and `payment.received` (docs/integrators.md "Event catalog").
   * `BalanceLimitExceeded`: the balance would leave what a JSON number carries exactly.
   */
  createPayment(
    schoolId: Ids.SchoolId,
    payment: NewPayment
  ): Effect.Effect<Models.Payment, Refusal | DomainErrors.BalanceLimitExceeded>
}>()("school/persistence/SchoolRecords") {
  static readonly layer = Layer.effect(
    SchoolRecords,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /** A row of `table` of the school with that id exists; an absent reference (null) is fine. */
      const reference = (
        schoolId: Ids.SchoolId,
        field: string,
        table: "filials" | "subjects" | "programs" | "levels" | "employees" | "groups" | "students",
        id: number | null,
        entity: DomainErrors.ReferencedEntity
      ): Reference => ({
        field,
        ok: id === null
          ? sql`true`
          : sql`EXISTS (SELECT 1 FROM ${sql(table)} WHERE school_id = ${schoolId} AND id = ${id}::int)`,
        entity,
        id
      })

      /** `checks.missing`: the fields whose reference is not the school's. */
      const missingOf = (references: ReadonlyArray<Reference>) =>
        references.length === 0
          ? sql`ARRAY[]::text[]`
          : sql`array_remove(ARRAY[${
            sql.csv(references.map((r) => sql`CASE WHEN ${r.ok} THEN NULL ELSE ${r.field}::text END`))
          }]::text[], NULL)`

      /**
       * One statement: `checks` (one row: `missing`), then `write` (CTEs
       * whose first, `r`, writes `FROM checks WHERE checks.ok`), then the
       * row `columns` (over `r`) or the refusal.
       */
      const checkedWrite = <S extends Schema.Top & { readonly DecodingServices: never }>(
        row: S,
        references: ReadonlyArray<Reference>,
        write: Statement.Fragment,
        columns: Statement.Fragment
      ): Effect.Effect<S["Type"], Refusal> =>
        Effect.gen(function*() {
          const rows = yield* sql`
            WITH checks AS (
              SELECT m.missing, cardinality(m.missing) = 0 AS ok FROM (SELECT ${missingOf(references)} AS missing) m
            ), ${write}
            SELECT checks.missing, ${columns} FROM checks LEFT JOIN r ON true`.pipe(Effect.orDie)
          // One row: `checks` has exactly one.
          const { missing } = yield* Effect.orDie(decodeMissing(rows[0]))
          if (missing.length > 0) return yield* refused(references, missing)
          return yield* Effect.orDie(Schema.decodeUnknownEffect(row)(rows[0]))
        })

      const createFilial = (schoolId: Ids.SchoolId, filial: { readonly name: string; readonly address: string | null }) =>
        checkedWrite(
          Models.Filial,
          [],
          sql`r AS (
            INSERT INTO filials (school_id, name, address)
            SELECT ${schoolId}, ${filial.name}::text, ${filial.address}::text FROM checks WHERE checks.ok
            RETURNING *)`,
          sql`r.id, r.name, r.address`
        ).pipe(Effect.catchTag("ReferencesNotFound", Effect.die))

      const createSubject = (schoolId: Ids.SchoolId, subject: { readonly name: string }) =>
        checkedWrite(
          Models.Subject,
          [],
          sql`r AS (
            INSERT INTO subjects (school_id, name) SELECT ${schoolId}, ${subject.name}::text FROM checks WHERE checks.ok
            RETURNING *)`,
          sql`r.id, r.name`
        ).pipe(Effect.catchTag("ReferencesNotFound", Effect.die))

      const createProgram = (schoolId: Ids.SchoolId, program: { readonly name: string; readonly subjectId: number | null }) =>
        checkedWrite(
          Models.Program,
          [reference(schoolId, "subject_id", "subjects", program.subjectId, "subject")],
          sql`r AS (
            INSERT INTO programs (school_id, name, subject_id)
            SELECT ${schoolId}, ${program.name}::text, ${program.subjectId}::int FROM checks WHERE checks.ok
            RETURNING *)`,
          sql`r.id, r.name, r.subject_id`
        )

      const createLevel = (schoolId: Ids.SchoolId, level: { readonly name: string; readonly programId: number | null }) =>
        checkedWrite(
          Models.Level,
          [reference(schoolId, "program_id", "programs", level.programId, "program")],
          sql`r AS (
            INSERT INTO levels (school_id, name, program_id)
            SELECT ${schoolId}, ${level.name}::text, ${level.programId}::int FROM checks WHERE checks.ok
            RETURNING *)`,
          sql`r.id, r.name, r.program_id`
        )

      const createGroup = (schoolId: Ids.SchoolId, group: NewGroup) =>
        checkedWrite(
          Models.Group,
          [
            reference(schoolId, "filial_id", "filials", group.filialId, "filial"),
            reference(schoolId, "subject_id", "subjects", group.subjectId, "subject"),
            reference(schoolId, "program_id", "programs", group.programId, "program"),
            reference(schoolId, "level_id", "levels", group.levelId, "level"),
            reference(schoolId, "teacher_id", "employees", group.teacherId, "employee")
          ],
          sql`r AS (
            INSERT INTO groups (school_id, name, filial_id, subject_id, program_id, level_id, teacher_id, capacity)
            SELECT ${schoolId}, ${group.name}::text, ${group.filialId}::int, ${group.subjectId}::int,
                   ${group.programId}::int, ${group.levelId}::int, ${group.teacherId}::int, ${group.capacity}::int
            FROM checks WHERE checks.ok
            RETURNING *)`,
          sql`r.id, r.name, r.filial_id, r.subject_id, r.program_id, r.level_id, r.teacher_id, r.capacity,
              r.enrolled_count, r.capacity - r.enrolled_count AS free_places`
        )

      const createStudent = (schoolId: Ids.SchoolId, student: NewStudent) =>
        checkedWrite(
          StudentCardRow,
          [reference(schoolId, "filial_id", "filials", student.filialId, "filial")],
          sql`r AS (
            INSERT INTO students (school_id, fio, phone, email, filial_id)
            SELECT ${schoolId}, ${student.fio}::text, ${student.phone}::text, ${student.email}::text, ${student.filialId}::int
            FROM checks WHERE checks.ok
            RETURNING *
          ), event AS (
            ${
            insertEvents(sql, {
              schoolId,
              event: "student.created",
              // student_name is the student's fio.
              payload: sql`json_build_object('student_id', id, 'student_name', fio, 'filial_id', filial_id)`,
              from: sql`r`
            })
          })`,
          sql`r.id, r.fio, r.phone, r.email, r.balance_kopecks, r.filial_id,
              api_ts(r.created_at) AS created_at, api_ts(r.updated_at) AS updated_at, '[]'::json AS active_groups`
        )

      const createLesson = (schoolId: Ids.SchoolId, lesson: NewLesson) => {
        const groupRef = reference(schoolId, "group_id", "groups", lesson.groupId, "group")
        return checkedWrite(
          Models.Lesson,
          [groupRef, reference(schoolId, "teacher_id", "employees", lesson.teacherId, "employee")],
          sql`r AS (
            -- The lesson takes its group's filial; without a teacher of its own, the group's teacher.
            INSERT INTO lessons (school_id, group_id, filial_id, teacher_id, starts_at, ends_at, topic)
            SELECT ${schoolId}, g.id, g.filial_id, coalesce(${lesson.teacherId}::int, g.teacher_id),
                   ${lesson.startsAt}::timestamptz, ${lesson.endsAt}::timestamptz, ${lesson.topic}::text
            FROM checks JOIN groups g ON g.school_id = ${schoolId} AND g.id = ${lesson.groupId}::int
            WHERE checks.ok
            RETURNING *)`,
          sql`r.id, r.group_id, r.filial_id, r.teacher_id, api_ts(r.starts_at) AS starts_at,
              api_ts(r.ends_at) AS ends_at, r.topic`
        )
      }

      const markAttendance = Effect.fn("SchoolRecords.markAttendance")(function*(
        schoolId: Ids.SchoolId,
        lessonId: Rules.LessonId,
        mark: { readonly studentId: number; readonly visitStatus: Rules.VisitStatus }
      ) {
        // docs/decisions.md "Writes": lesson.completed once per lesson and student. `first_attended_at`
        // is set once by the table's trigger (migration 0540); the mark that sees it go from unset to
        // set raises the event (Rules.raisesLessonCompleted). The statement reads the mark as it
        // stands and writes it in one go, in SQL PostgreSQL 15 runs (docs/operations.md "PostgreSQL
        // versions"):
        // - `prev` locks the pair's mark (FOR UPDATE): a concurrent mark of the same pair waits there
        //   until this one commits, then reads what it wrote (under READ COMMITTED a locked row is
        //   read in its newest version), so exactly one of them sees `first_attended_at` unset;
        // - with a mark there, `upd` rewrites it and compares with `prev`; without one, `ins` writes
        //   the first mark, or nothing when a concurrent mark inserted it after this statement's
        //   snapshot (ON CONFLICT DO NOTHING waits for that one to commit). Then nothing was
        //   written and the statement runs again: its new snapshot sees that mark, and `prev` locks it.
        const statement = sql`
          WITH l AS (
            SELECT id, group_id, filial_id, teacher_id FROM lessons WHERE school_id = ${schoolId} AND id = ${lessonId}::int
          ), st AS (
            SELECT id FROM students WHERE school_id = ${schoolId} AND id = ${mark.studentId}::int
          ), prev AS (
            SELECT first_attended_at FROM attendance
            WHERE school_id = ${schoolId} AND lesson_id = ${lessonId}::int AND student_id = ${mark.studentId}::int
            FOR UPDATE
          ), upd AS (
            UPDATE attendance AS a SET visit_status = ${mark.visitStatus}::smallint, marked_at = clock_timestamp()
            FROM prev
            WHERE a.school_id = ${schoolId} AND a.lesson_id = ${lessonId}::int AND a.student_id = ${mark.studentId}::int
            RETURNING a.lesson_id, a.student_id, a.visit_status, a.marked_at, a.first_attended_at,
                      prev.first_attended_at IS NULL AND a.first_attended_at IS NOT NULL AS completes
          ), ins AS (
            INSERT INTO attendance (school_id, lesson_id, student_id, visit_status, marked_at)
            SELECT ${schoolId}, l.id, st.id, ${mark.visitStatus}::smallint, clock_timestamp() FROM l, st
            WHERE NOT EXISTS (SELECT 1 FROM prev)
            ON CONFLICT (school_id, lesson_id, student_id) DO NOTHING
            RETURNING lesson_id, student_id, visit_status, marked_at, first_attended_at,
                      first_attended_at IS NOT NULL AS completes
          ), m AS (
            SELECT * FROM upd UNION ALL SELECT * FROM ins
          ), event AS (
            ${
          insertEvents(sql, {
            schoolId,
            event: "lesson.completed",
            // docs/integrators.md "Event catalog"; docs/decisions.md "Webhooks": teacher_id 0 when the lesson has none.
            payload: sql`json_build_object('student_id', m.student_id, 'lesson_id', m.lesson_id, 'group_id', l.group_id,
                                           'teacher_id', coalesce(l.teacher_id, 0), 'visit_status', m.visit_status,
                                           'filial_id', l.filial_id)`,
            from: sql`m JOIN l ON l.id = m.lesson_id WHERE m.completes`
          })
        }
          )
          SELECT EXISTS (SELECT 1 FROM l) AS lesson_found, EXISTS (SELECT 1 FROM st) AS student_found,
                 m.lesson_id, m.student_id, l.group_id, m.visit_status, api_ts(m.marked_at) AS marked_at,
                 api_ts(m.first_attended_at) AS first_attended_at
          FROM (VALUES (1)) AS one (x) LEFT JOIN m ON true LEFT JOIN l ON true`.pipe(Effect.orDie)
        // One row always: VALUES (1) LEFT JOIN the mark. A run that lost the race to insert the
        // pair's first mark wrote nothing; the next one finds that mark (MARK_ATTEMPTS bounds it).
        for (let attempt = 1;; attempt++) {
          const rows = yield* statement
          const outcome = yield* Effect.orDie(decodeMarkOutcome(rows[0]))
          if (!outcome.lesson_found) return yield* new DomainErrors.LessonNotFound({ lessonId })
          if (!outcome.student_found) {
            return yield* new DomainErrors.ReferencesNotFound({
              references: [{ field: "student_id", entity: "student", id: mark.studentId }]
            })
          }
          if (outcome.lesson_id !== null) return yield* Effect.orDie(decodeMark(rows[0]))
          if (attempt >= MARK_ATTEMPTS) {
            return yield* Effect.die(new Error(`SchoolRecords.markAttendance: no mark written in ${MARK_ATTEMPTS} attempts`))
          }
        }
      })

      const decodePayment = Schema.decodeUnknownEffect(PaymentRow)

      const createPayment = Effect.fn("SchoolRecords.createPayment")(function*(schoolId: Ids.SchoolId, payment: NewPayment) {
        const references = [
          reference(schoolId, "student_id", "students", payment.studentId, "student"),
          reference(schoolId, "group_id", "groups", payment.groupId, "group")
        ]
        // docs/integrators.md "Event catalog": amount and payment_amount are the stored sum in roubles, as an exact decimal
        // (Money.roublesText: 150050 → 1500.5); a numeric keeps that text in the json.
        const roubles = Money.roublesText(payment.amountKopecks)
        const rows = yield* sql`
          WITH checks AS (
            SELECT m.missing, cardinality(m.missing) = 0 AS ok FROM (SELECT ${missingOf(references)} AS missing) m
          ), s AS (
            -- The balance moves, and with it the student's updated_at (its touch trigger), so an
            -- updated_since sync of GET /students sees the payment. The bound keeps the balance
            -- within what a JSON number carries exactly.
            UPDATE students SET balance_kopecks = balance_kopecks + ${payment.amountKopecks}::bigint
            FROM checks
            WHERE checks.ok AND school_id = ${schoolId} AND id = ${payment.studentId}::int
              AND balance_kopecks + ${payment.amountKopecks}::bigint <= ${Number.MAX_SAFE_INTEGER}::bigint
            RETURNING id, filial_id
          ), r AS (
            -- docs/decisions.md "Writes": the payment is booked to the student's filial.
            INSERT INTO payments (school_id, student_id, amount_kopecks, payment_type, group_id, filial_id, paid_at)
            SELECT ${schoolId}, s.id, ${payment.amountKopecks}::bigint, ${payment.paymentType}::text, ${payment.groupId}::int,
                   s.filial_id, coalesce(${payment.paidAt}::timestamptz, now())
            FROM s
            RETURNING *
          ), event AS (
            ${
          insertEvents(sql, {
            schoolId,
            event: "payment.received",
            // docs/integrators.md "Event catalog"; docs/decisions.md "Webhooks": group_id 0 when the payment has none.
            payload: sql`json_build_object('student_id', student_id, 'payment_id', id,
                                           'amount', ${roubles}::numeric, 'payment_amount', ${roubles}::numeric,
                                           'payment_type', payment_type, 'group_id', coalesce(group_id, 0),
                                           'filial_id', filial_id)`,
            from: sql`r`
          })
        }
          )
          SELECT checks.missing, r.id, r.student_id, r.amount_kopecks, r.payment_type, r.group_id, r.filial_id,
                 api_ts(r.paid_at) AS paid_at, api_ts(r.created_at) AS created_at, api_ts(r.updated_at) AS updated_at
          FROM checks LEFT JOIN r ON true`.pipe(Effect.orDie)
        const outcome = yield* Effect.orDie(decodePaymentOutcome(rows[0]))
        if (outcome.missing.length > 0) return yield* refused(references, outcome.missing)
        if (outcome.id === null) {
          return yield* new DomainErrors.BalanceLimitExceeded({
            studentId: payment.studentId,
            limitKopecks: Number.MAX_SAFE_INTEGER
          })
        }
        return yield* Effect.orDie(decodePayment(rows[0]))
      })

      return SchoolRecords.of({
        createFilial: named("SchoolRecords.createFilial", createFilial),
        createSubject: named("SchoolRecords.createSubject", createSubject),
        createProgram: named("SchoolRecords.createProgram", createProgram),
        createLevel: named("SchoolRecords.createLevel", createLevel),
        createGroup: named("SchoolRecords.createGroup", createGroup),
        createStudent: named("SchoolRecords.createStudent", createStudent),
        createLesson: named("SchoolRecords.createLesson", createLesson),
        markAttendance,
        createPayment
      })
    })
  )
}

