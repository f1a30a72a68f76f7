/**
 * Demo (trial) lessons of one school as POST /demo-lessons books them
 * (docs/integrators.md "Writing", docs/decisions.md "Writes"): for a student or a lead of
 * the school, in a group of the school that has a free place. Booking does
 * not take the place (a trial visit is not an enrollment) and emits no
 * webhook. One statement checks and inserts.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { DemoLessons as DemoLessonRules, type Ids } from "@school/domain"
import * as DomainErrors from "@school/domain/DomainErrors"

const decodeDemoLesson = Schema.decodeUnknownEffect(DemoLessonRules.DemoLesson)

/** What the statement found, beside the booked lesson's columns (NULL when none was booked). */
const BookOutcome = Schema.Struct({
  attendee_found: Schema.Boolean,
  group_found: Schema.Boolean,
  id: Schema.NullOr(Schema.Int)
})
const decodeOutcome = Schema.decodeUnknownEffect(BookOutcome)

export class DemoLessons extends Context.Service<DemoLessons, {
  /**
   * The booking, or `DemoLessonRefused` with its reason: the attendee (a
   * student or a lead) or the group is not the school's, or the group has
   * no free place.
   */
  book(
    schoolId: Ids.SchoolId,
    lesson: DemoLessonRules.NewDemoLesson
  ): Effect.Effect<DemoLessonRules.DemoLesson, DomainErrors.DemoLessonRefused>
}>()("school/persistence/DemoLessons") {
  static readonly layer = Layer.effect(
    DemoLessons,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const book = Effect.fn("DemoLessons.book")(function*(schoolId: Ids.SchoolId, lesson: DemoLessonRules.NewDemoLesson) {
        const { attendee } = lesson
        const isStudent = attendee._tag === "Student"
        const who = isStudent
          ? sql`SELECT 1 FROM students WHERE school_id = ${schoolId} AND id = ${attendee.id}::int`
          : sql`SELECT 1 FROM leads WHERE school_id = ${schoolId} AND id = ${attendee.id}::int`
        const rows = yield* sql`
          WITH attendee AS (${who}),
          grp AS (
            SELECT capacity - enrolled_count AS free FROM groups WHERE school_id = ${schoolId} AND id = ${lesson.groupId}::int
          ), booked AS (
            INSERT INTO demo_lessons (school_id, student_id, lead_id, group_id, starts_at, comment)
            SELECT ${schoolId}, ${isStudent ? attendee.id : null}::int, ${isStudent ? null : attendee.id}::int,
                   ${lesson.groupId}::int, ${lesson.startsAt}::timestamptz, ${lesson.comment}::text
            WHERE EXISTS (SELECT 1 FROM attendee) AND EXISTS (SELECT 1 FROM grp WHERE free > 0)
            RETURNING id, student_id AS user_id, lead_id, group_id, api_ts(starts_at) AS starts_at, comment, status,
                      api_ts(created_at) AS created_at
          )
          SELECT EXISTS (SELECT 1 FROM attendee) AS attendee_found, EXISTS (SELECT 1 FROM grp) AS group_found, b.*
          FROM (VALUES (1)) AS one (x) LEFT JOIN booked b ON true`.pipe(Effect.orDie)
        // One row always: VALUES (1) LEFT JOIN the booked lesson.
        const row = yield* Effect.orDie(decodeOutcome(rows[0]))
        const refused = (reason: DomainErrors.DemoLessonRefused["reason"]) => new DomainErrors.DemoLessonRefused({ reason })
        if (!row.attendee_found) {
          return yield* refused(
            isStudent
              ? new DomainErrors.StudentNotFound({ studentId: attendee.id })
              : new DomainErrors.LeadNotFound({ leadId: attendee.id })
          )
        }
        const groupId = lesson.groupId
        if (!row.group_found) return yield* refused(new DomainErrors.GroupNotFound({ groupId }))
        if (row.id === null) return yield* refused(new DomainErrors.GroupFull({ groupId }))
        return yield* Effect.orDie(decodeDemoLesson(rows[0]))
      })

      return DemoLessons.of({ book })
    })
  )
}
