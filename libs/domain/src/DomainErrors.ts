/**
 * The errors the repositories of libs/persistence fail with
 * (docs/development.md "libs/persistence": a repository's interface speaks
 * only domain errors). Each carries the facts of a refusal (which id, which
 * body field, which limit), never an HTTP status, a wire code or an English
 * message: each API's handlers map them to that API's own rows
 * (apps/api/src/http/*.ts to PublicErrors.ts, apps/api/src/http/backoffice/*.ts
 * to BackOfficeErrors.ts; the operator CLI to its one line), so one
 * repository method serves every caller. Where one refusal has several
 * causes, the error is one class with a `reason` union (caught with
 * `Effect.catchReasons`).
 */
import * as Schema from "effect/Schema"

// ---------------------------------------------------------------------------
// References a write names that are not the school's

/** What a reference names. */
export const ReferencedEntity = Schema.Literals([
  "filial",
  "subject",
  "program",
  "level",
  "employee",
  "group",
  "student",
  "funnel"
])
export type ReferencedEntity = typeof ReferencedEntity.Type

/** One reference that is not the school's (missing, or another school's: the same answer). */
export const MissingReference = Schema.Struct({
  /** The request's field that named it (`filial_id`, `responsible_id`…). */
  field: Schema.String,
  entity: ReferencedEntity,
  /** The id given; for a funnel, 0 is the main funnel (the school has none with statuses). */
  id: Schema.Int
})
export type MissingReference = typeof MissingReference.Type

/**
 * A write refused because references it names are not the school's: every
 * bad reference at once, in the order of the write's fields; nothing was
 * written. A lead's funnel and responsible employee (Leads.create), a school
 * record's references (SchoolRecords).
 */
export class ReferencesNotFound extends Schema.TaggedError<ReferencesNotFound>()("ReferencesNotFound", {
  references: Schema.NonEmptyArray(MissingReference)
}) {}

// ---------------------------------------------------------------------------
// Things looked up by the id in the path

export class LeadNotFound extends Schema.TaggedError<LeadNotFound>()("LeadNotFound", {
  leadId: Schema.Int
}) {}

export class StudentNotFound extends Schema.TaggedError<StudentNotFound>()("StudentNotFound", {
  studentId: Schema.Int
}) {}

export class GroupNotFound extends Schema.TaggedError<GroupNotFound>()("GroupNotFound", {
  groupId: Schema.Int
}) {}

export class LessonNotFound extends Schema.TaggedError<LessonNotFound>()("LessonNotFound", {
  lessonId: Schema.Int
}) {}

/** Not one of the employee's own notifications (another's, or none). */
export class NotificationNotFound extends Schema.TaggedError<NotificationNotFound>()("NotificationNotFound", {
  notificationId: Schema.Int
}) {}

// ---------------------------------------------------------------------------
// Leads (docs/back-office.md "Leads, funnels and tasks")

/** A move to a status that is not of the lead's funnel (its main funnel when it has none of its own). */
export class StatusNotInFunnel extends Schema.TaggedError<StatusNotInFunnel>()("StatusNotInFunnel", {
  leadId: Schema.Int,
  statusId: Schema.Int
}) {}

// ---------------------------------------------------------------------------
// Enrollments and demo lessons (docs/decisions.md "Writes")

export class GroupFull extends Schema.TaggedError<GroupFull>()("GroupFull", {
  groupId: Schema.Int
}) {}

/** The student has an active enrollment in the group already. */
export class AlreadyEnrolled extends Schema.TaggedError<AlreadyEnrolled>()("AlreadyEnrolled", {
  studentId: Schema.Int,
  groupId: Schema.Int
}) {}

/** Enrollments.enroll refused: nothing was written. */
export class EnrollmentRefused extends Schema.TaggedError<EnrollmentRefused>()("EnrollmentRefused", {
  reason: Schema.Union([StudentNotFound, GroupNotFound, GroupFull, AlreadyEnrolled])
}) {}

/** DemoLessons.book refused: the attendee (a student or a lead) or the group is not the school's, or the group is full. */
export class DemoLessonRefused extends Schema.TaggedError<DemoLessonRefused>()("DemoLessonRefused", {
  reason: Schema.Union([StudentNotFound, LeadNotFound, GroupNotFound, GroupFull])
}) {}

// ---------------------------------------------------------------------------
// Payments (docs/decisions.md "Writes")

/** The payment would take the student's balance beyond `limitKopecks` (what a JSON number carries exactly). */
export class BalanceLimitExceeded extends Schema.TaggedError<BalanceLimitExceeded>()("BalanceLimitExceeded", {
  studentId: Schema.Int,
  limitKopecks: Schema.Number
}) {}

// ---------------------------------------------------------------------------
// Schools, staff and keys (docs/operations.md "Operator CLI", docs/back-office.md "Staff", "API keys")

/** The login e-mail (normalized) is already someone's: login e-mails are unique across the service. */
export class EmailTaken extends Schema.TaggedError<EmailTaken>()("EmailTaken", {
  email: Schema.String
}) {}

export class SchoolNotFound extends Schema.TaggedError<SchoolNotFound>()("SchoolNotFound", {
  schoolId: Schema.Int
}) {}

/** The school has `limit` local webhook listeners open already (libs/persistence/src/Listeners.ts `MAX_LISTENERS`). */
export class ListenerLimitReached extends Schema.TaggedError<ListenerLimitReached>()("ListenerLimitReached", {
  schoolId: Schema.Int,
  limit: Schema.Int
}) {}

/** The school's plan is below Extended (or it has none), so it may not issue API keys (Plans.canIssueKeys). */
export class PlanTooLow extends Schema.TaggedError<PlanTooLow>()("PlanTooLow", {
  schoolId: Schema.Int,
  plan: Schema.NullOr(Schema.String)
}) {}

export class ApiKeyNotFound extends Schema.TaggedError<ApiKeyNotFound>()("ApiKeyNotFound", {
  schoolId: Schema.Int,
  keyId: Schema.Int
}) {}

/** No employee with this id in the caller's school (another school's is the same answer). */
export class EmployeeNotFound extends Schema.TaggedError<EmployeeNotFound>()("EmployeeNotFound", {
  employeeId: Schema.Int
}) {}

/**
 * The caller may not change this employee, nor end their sessions
 * (Staff.mayChangeEmployee, docs/back-office.md "Staff"): the owner, oneself,
 * or, for an administrator, another administrator.
 */
export class EmployeeChangeForbidden extends Schema.TaggedError<EmployeeChangeForbidden>()("EmployeeChangeForbidden", {
  employeeId: Schema.Int,
  actorRole: Schema.String,
  targetRole: Schema.String
}) {}

/** Employees.update / endSessions refused: nothing was changed. */
export class EmployeeChangeRefused extends Schema.TaggedError<EmployeeChangeRefused>()("EmployeeChangeRefused", {
  reason: Schema.Union([EmployeeNotFound, EmployeeChangeForbidden])
}) {}

/** The current password given to a password change is not the stored one: nothing was changed. */
export class WrongPassword extends Schema.TaggedError<WrongPassword>()("WrongPassword", {
  employeeId: Schema.Int
}) {}
