/**
 * Enrolling students of one school into its groups (docs/integrators.md "Writing";
 * docs/decisions.md "Writes"), as POST /students/{id}/groups does it:
 * one statement takes a place in the group, records the enrollment, moves
 * the student's last-modified time (the card's active_groups changed) and
 * appends `group.enrolled` to the outbox.
 *
 * Capacity under concurrency: the place is taken by `UPDATE groups … WHERE
 * enrolled_count < capacity`, which locks the group's row; a concurrent
 * enrollment waits for it and re-checks the count on the committed row, so
 * N parallel enrollments into k free places give exactly k successes (and
 * the table's CHECK enrolled_count <= capacity backs it up).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { Enrollments as EnrollmentRules, type Ids, Pagination } from "@school/domain"
import * as DomainErrors from "@school/domain/DomainErrors"
import { insertEvents } from "./Outbox.ts"
import { listReader } from "./Paging.ts"
import { named } from "./Spans.ts"

const decodeEnrollment = Schema.decodeUnknownEffect(EnrollmentRules.Enrollment)

/** What the statement found, beside the enrollment's columns (NULL when none was made). */
const EnrollOutcome = Schema.Struct({
  student_found: Schema.Boolean,
  group_found: Schema.Boolean,
  already: Schema.Boolean,
  id: Schema.NullOr(Schema.Int)
})
const decodeOutcome = Schema.decodeUnknownEffect(EnrollOutcome)

/** `EnrollmentRefused` for `reason`. */
const refused = (reason: DomainErrors.EnrollmentRefused["reason"]) => new DomainErrors.EnrollmentRefused({ reason })

export class Enrollments extends Context.Service<Enrollments, {
  /**
   * The enrollment, or `EnrollmentRefused` with its reason: the student or
   * the group is not the school's, the group has no free place, the student
   * is in the group already.
   */
  enroll(
    schoolId: Ids.SchoolId,
    studentId: Ids.StudentId,
    groupId: Ids.GroupId
  ): Effect.Effect<EnrollmentRules.Enrollment, DomainErrors.EnrollmentRefused>
  /** The school's active enrollments (not ended), ascending id, one page and the total. */
  listActive(schoolId: Ids.SchoolId, page: Pagination.ListRequest): Effect.Effect<Pagination.ListResult<EnrollmentRules.Enrollment>>
}>()("school/persistence/Enrollments") {
  static readonly layer = Layer.effect(
    Enrollments,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const enroll = Effect.fn("Enrollments.enroll")(function*(schoolId: Ids.SchoolId, studentId: Ids.StudentId, groupId: Ids.GroupId) {
        const rows = yield* sql`
          WITH student AS (
            SELECT id FROM students WHERE school_id = ${schoolId} AND id = ${studentId}::int
          ), grp AS (
            SELECT id FROM groups WHERE school_id = ${schoolId} AND id = ${groupId}::int
          ), existing AS (
            SELECT id FROM enrollments
            WHERE school_id = ${schoolId} AND student_id = ${studentId}::int AND group_id = ${groupId}::int
              AND ended_at IS NULL
          ), seat AS (
            UPDATE groups SET enrolled_count = enrolled_count + 1
            WHERE school_id = ${schoolId} AND id = ${groupId}::int AND enrolled_count < capacity
              AND EXISTS (SELECT 1 FROM student) AND NOT EXISTS (SELECT 1 FROM existing)
            RETURNING id, name, filial_id
          ), enrolled AS (
            INSERT INTO enrollments (school_id, student_id, group_id)
            SELECT ${schoolId}, ${studentId}::int, id FROM seat
            RETURNING id, student_id, group_id, enrolled_at
          ), touched AS (
            UPDATE students SET updated_at = clock_timestamp()
            WHERE school_id = ${schoolId} AND id IN (SELECT student_id FROM enrolled)
          ), event AS (
            ${
          insertEvents(sql, {
            schoolId,
            event: "group.enrolled",
            payload: sql`json_build_object('enrollment_id', e.id, 'student_id', e.student_id, 'group_id', e.group_id,
                                           'group_name', s.name, 'filial_id', s.filial_id)`,
            from: sql`enrolled e JOIN seat s ON s.id = e.group_id`
          })
        }
          )
          SELECT EXISTS (SELECT 1 FROM student) AS student_found,
                 EXISTS (SELECT 1 FROM grp) AS group_found,
                 EXISTS (SELECT 1 FROM existing) AS already,
                 e.id, e.student_id, e.group_id, api_ts(e.enrolled_at) AS enrolled_at
          FROM (VALUES (1)) AS one (x) LEFT JOIN enrolled e ON true`.pipe(
          // The same student enrolled concurrently by another request: the
          // partial unique index refuses the second active enrollment.
          Effect.catchReason(
            "SqlError",
            "UniqueViolation",
            (reason) =>
              reason.constraint === "enrollments_active"
                ? Effect.fail(refused(new DomainErrors.AlreadyEnrolled({ studentId, groupId })))
                : Effect.die(reason)
          ),
          Effect.catchTag("SqlError", Effect.die)
        )
        // One row always: VALUES (1) LEFT JOIN the enrollment.
        const row = yield* Effect.orDie(decodeOutcome(rows[0]))
        if (!row.student_found) return yield* refused(new DomainErrors.StudentNotFound({ studentId }))
        if (!row.group_found) return yield* refused(new DomainErrors.GroupNotFound({ groupId }))
        if (row.already) return yield* refused(new DomainErrors.AlreadyEnrolled({ studentId, groupId }))
        if (row.id === null) return yield* refused(new DomainErrors.GroupFull({ groupId }))
        return yield* Effect.orDie(decodeEnrollment(rows[0]))
      })

      const readPage = listReader(sql, EnrollmentRules.Enrollment)
      // The page walks the primary key (school_id, id); the count, the partial index of active enrollments.
      const listActive = (schoolId: Ids.SchoolId, page: Pagination.ListRequest) =>
        readPage(
          page,
          () => sql`SELECT count(*)::int AS total FROM enrollments WHERE school_id = ${schoolId} AND ended_at IS NULL`,
          ({ after, limit, offset }) =>
            sql`SELECT id, student_id, group_id, api_ts(enrolled_at) AS enrolled_at
                FROM enrollments WHERE school_id = ${schoolId} AND ended_at IS NULL AND ${after}
                ORDER BY id LIMIT ${limit} OFFSET ${offset}`
        )

      return Enrollments.of({ enroll, listActive: named("Enrollments.listActive", listActive) })
    })
  )
}
