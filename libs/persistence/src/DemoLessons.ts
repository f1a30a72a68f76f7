/**
 * Demo (trial) lessons of one school as POST /demo-lessons books them (spec
 * 4.2, docs/decisions.md "Writes"): for a student or a lead of
 * the school, in a group of the school that has a free place. Booking does
 * not take the place (a trial visit is not an enrollment) and emits no
 * webhook (spec 1). One statement checks and inserts.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { DemoLessons as DemoLessonRules, Errors, type Ids } from "@school/domain"

const decodeDemoLesson = Schema.decodeUnknownEffect(DemoLessonRules.DemoLesson)

export type BookError = Errors.ValidationFailed | Errors.GroupNotFound | Errors.GroupFull

/** What the statement found, beside the booked lesson's columns (NULL when none was booked). */
const BookOutcome = Schema.Struct({
  attendee_found: Schema.Boolean,
  group_found: Schema.Boolean,
  id: Schema.NullOr(Schema.Int)
})
const decodeOutcome = Schema.decodeUnknownEffect(BookOutcome)

export class DemoLessons extends Context.Service<DemoLessons, {
  book(schoolId: Ids.SchoolId, lesson: DemoLessonRules.NewDemoLesson): Effect.Effect<DemoLessonRules.DemoLesson, BookError>
}>()("school/persistence/DemoLessons") {
  static readonly layer = Layer.effect(
    DemoLessons,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const book = Effect.fnUntraced(function*(schoolId: Ids.SchoolId, lesson: DemoLessonRules.NewDemoLesson) {
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
        if (!row.attendee_found) {
          // docs/decisions.md "Writes": no new code for this endpoint; the field is named.
          const field = isStudent ? "user_id" : "lead_id"
          const what = isStudent ? "a student" : "a lead"
          return yield* new Errors.ValidationFailed({
            message: `Invalid request body: ${field}`,
            fields: { [field]: [`Expected ${what} of this school, got ${attendee.id}`] }
          })
        }
        if (!row.group_found) {
          return yield* new Errors.GroupNotFound({ message: `Group ${lesson.groupId} not found in this school.` })
        }
        if (row.id === null) {
          return yield* new Errors.GroupFull({ message: `Group ${lesson.groupId} has no free places.` })
        }
        return yield* Effect.orDie(decodeDemoLesson(rows[0]))
      })

      return DemoLessons.of({ book })
    })
  )
}
