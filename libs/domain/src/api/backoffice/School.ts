/**
 * The back office's school records (docs/back-office.md): reference data
 * (filials, subjects, programs, levels), groups and lessons; students,
 * enrollments, attendance and payments, the actions that raise events
 * (docs/integrators.md "Event catalog"). The contract: paths, bodies (libs/domain/src/SchoolRecords.ts),
 * success shapes (the records as the public API shows them, docs/decisions.md
 * "Resources"), errors, and the roles each call needs (`RequiredAccess`,
 * checked by `RoleCheck` before the request is decoded, so a refused role
 * gets 403 FORBIDDEN whatever it sent). Endpoints are added before
 * `.middleware(...)`, which applies to those added before it.
 */
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Errors from "../../BackOfficeErrors.ts"
import { CreateEnrollmentRequest, Enrollment } from "../../Enrollments.ts"
import { StudentIdFromPath } from "../../Ids.ts"
import * as Models from "../../Models.ts"
import * as Records from "../../SchoolRecords.ts"
import { FULL_ACCESS, FULL_ACCESS_OR_MANAGER, FULL_ACCESS_OR_TEACHER } from "../../Sessions.ts"
import {
  BackOfficeValidation,
  bodyRefusals,
  ok,
  okCreated,
  RequiredAccess,
  RoleCheck,
  SessionAuthentication
} from "../BackOfficeMiddleware.ts"

const refused = [Errors.ValidationFailed.envelope, ...bodyRefusals]

export class ReferenceGroup extends HttpApiGroup.make("reference")
    .annotate(OpenApi.Description, "The school's structure: filials, subjects, programs, levels, groups, lessons (docs/back-office.md \"Students and payments\").")
  .add(
    HttpApiEndpoint.post("createFilial", "/filials", {
      payload: Records.CreateFilialRequest,
      success: okCreated(Models.Filial),
      error: refused
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "Add a filial (branch) of the school")
      .annotate(OpenApi.Description, "Owner or administrator only. Adds a filial (branch) of the school."),
    HttpApiEndpoint.post("createSubject", "/subjects", {
      payload: Records.CreateSubjectRequest,
      success: okCreated(Models.Subject),
      error: refused
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "Add a subject")
      .annotate(OpenApi.Description, "Owner or administrator only. Adds a subject of the school."),
    HttpApiEndpoint.post("createProgram", "/programs", {
      payload: Records.CreateProgramRequest,
      success: okCreated(Models.Program),
      error: refused
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "Add a program, optionally of a subject of the school")
      .annotate(OpenApi.Description, "Owner or administrator only. Adds a program; a `subject_id` that is not the school's is 422 `VALIDATION_FAILED`."),
    HttpApiEndpoint.post("createLevel", "/levels", {
      payload: Records.CreateLevelRequest,
      success: okCreated(Models.Level),
      error: refused
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "Add a level, optionally of a program of the school")
      .annotate(OpenApi.Description, "Owner or administrator only. Adds a level; a `program_id` that is not the school's is 422 `VALIDATION_FAILED`."),
    HttpApiEndpoint.post("createGroup", "/groups", {
      payload: Records.CreateGroupRequest,
      success: okCreated(Models.Group),
      error: refused
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(
        OpenApi.Summary,
        "Add a group in a filial; every id it names must be the school's (a teacher: any employee of the school)"
      )
      .annotate(OpenApi.Description, "Owner or administrator only. Adds a group with its capacity in a filial; an id it names that is not the school's is 422 `VALIDATION_FAILED` on that field."),
    HttpApiEndpoint.post("createLesson", "/lessons", {
      payload: Records.CreateLessonRequest,
      success: okCreated(Models.Lesson),
      error: refused
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(
        OpenApi.Summary,
        "Schedule a lesson of a group, in the group's filial (teacher: the one given, else the group's)"
      )
      .annotate(OpenApi.Description, "Owner or administrator only. Schedules a lesson of a group, in the group's filial; an id that is not the school's is 422 `VALIDATION_FAILED` on that field.")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}

export class StudentsGroup extends HttpApiGroup.make("students")
    .annotate(OpenApi.Description, "Students, enrollments, attendance and payments (docs/back-office.md \"Students and payments\").")
  .add(
    HttpApiEndpoint.post("createStudent", "/students", {
      payload: Records.CreateStudentRequest,
      success: okCreated(Models.StudentCard),
      error: refused
    }).annotate(RequiredAccess, FULL_ACCESS_OR_MANAGER)
      .annotate(OpenApi.Summary, "Register a student in a filial (emits student.created)")
      .annotate(OpenApi.Description, "Full access or manager. Registers a student in a filial and sends `student.created` to the school's webhooks, in the same transaction."),
    HttpApiEndpoint.post("enroll", "/students/:id/enrollments", {
      params: { id: StudentIdFromPath },
      payload: CreateEnrollmentRequest,
      success: okCreated(Enrollment),
      error: [
        Errors.NotFound.envelope,
        Errors.ValidationFailed.envelope,
        Errors.GroupFull.envelope,
        Errors.AlreadyEnrolled.envelope,
        ...bodyRefusals
      ]
    }).annotate(RequiredAccess, FULL_ACCESS_OR_MANAGER)
      .annotate(
        OpenApi.Summary,
        "Enroll the student into a group: the public enrollment's rules and race safety (emits group.enrolled)"
      )
      .annotate(OpenApi.Description, "Full access or manager. Enrolls the student into the group with the public API's rules: 404 `NOT_FOUND` for a student or group that is not the school's, 409 `GROUP_FULL` without a free place, 409 `ALREADY_ENROLLED`. Sends `group.enrolled`."),
    HttpApiEndpoint.post("markAttendance", "/lessons/:id/attendance", {
      params: { id: Records.LessonIdFromPath },
      payload: Records.MarkAttendanceRequest,
      success: ok(Records.AttendanceMark),
      error: [Errors.NotFound.envelope, Errors.ValidationFailed.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, FULL_ACCESS_OR_TEACHER)
      .annotate(
        OpenApi.Summary,
        "Set a student's mark at a lesson (1 attended, 2 absent, 3 excused; again: replaces it). The first 1 emits lesson.completed"
      )
      .annotate(OpenApi.Description, "Teachers and full access. Sets the student's `visit_status` at the lesson (1 attended, 2 absent, 3 excused); setting it again replaces it. The first 1 sends `lesson.completed`. A lesson that is not the school's is 404 `NOT_FOUND`."),
    HttpApiEndpoint.post("createPayment", "/payments", {
      payload: Records.CreatePaymentRequest,
      success: okCreated(Models.Payment),
      error: refused
    }).annotate(RequiredAccess, FULL_ACCESS_OR_MANAGER)
      .annotate(OpenApi.Summary, "Post a payment: raises the student's balance (emits payment.received, in roubles)")
      .annotate(OpenApi.Description, "Full access or manager. Posts a payment in kopecks: raises the student's balance and `updated_at`, and sends `payment.received` (amount in roubles).")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
