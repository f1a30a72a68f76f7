/**
 * Handlers of the back office's school records
 * (libs/domain/src/api/backoffice/School.ts; docs/back-office.md): the role
 * is checked before the request is decoded (`RoleCheck`, from each
 * endpoint's `RequiredAccess`); then one repository call.
 * Enrollment is the public API's own function (Enrollments.enroll), its
 * refusals said in the back office's codes. Each handler maps its
 * repository's domain errors (libs/domain/src/DomainErrors.ts) to the back
 * office's rows. `SchoolRepositories` names the
 * persistence services they need beyond those Server.ts already provides
 * (Enrollments); Server.ts provides them with the rest.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { CurrentEmployee } from "@school/domain/api/BackOfficeMiddleware"
import * as Errors from "@school/domain/BackOfficeErrors"
import { Enrollments } from "@school/persistence/Enrollments"
import { SchoolRecords } from "@school/persistence/SchoolRecords"
import * as RefusalMessages from "../RefusalMessages.ts"
import { invalidBody, referencesNotFound } from "./Refusals.ts"

export const SchoolRepositories = SchoolRecords.layer

const ReferenceHandlers = HttpApiBuilder.group(
  BackOfficeApi,
  "reference",
  Effect.fnUntraced(function*(handlers) {
    const records = yield* SchoolRecords
    return handlers
      .handle("createFilial", Effect.fn("BackOfficeApi.reference.createFilial")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const address = payload.address === undefined || payload.address === null || payload.address === ""
          ? null
          : payload.address
        return yield* records.createFilial(schoolId, { name: payload.name, address })
      }))
      .handle("createSubject", Effect.fn("BackOfficeApi.reference.createSubject")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        return yield* records.createSubject(schoolId, { name: payload.name })
      }))
      .handle("createProgram", Effect.fn("BackOfficeApi.reference.createProgram")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const program = { name: payload.name, subjectId: payload.subject_id ?? null }
        return yield* records.createProgram(schoolId, program)
      }, Effect.catchTag("ReferencesNotFound", referencesNotFound)))
      .handle("createLevel", Effect.fn("BackOfficeApi.reference.createLevel")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const level = { name: payload.name, programId: payload.program_id ?? null }
        return yield* records.createLevel(schoolId, level)
      }, Effect.catchTag("ReferencesNotFound", referencesNotFound)))
      .handle("createGroup", Effect.fn("BackOfficeApi.reference.createGroup")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const group = yield* records.createGroup(schoolId, {
          name: payload.name,
          filialId: payload.filial_id,
          capacity: payload.capacity,
          subjectId: payload.subject_id ?? null,
          programId: payload.program_id ?? null,
          levelId: payload.level_id ?? null,
          teacherId: payload.teacher_id ?? null
        })
        return group
      }, Effect.catchTag("ReferencesNotFound", referencesNotFound)))
      .handle("createLesson", Effect.fn("BackOfficeApi.reference.createLesson")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const lesson = yield* records.createLesson(schoolId, {
          groupId: payload.group_id,
          startsAt: payload.starts_at,
          endsAt: payload.ends_at,
          teacherId: payload.teacher_id ?? null,
          topic: payload.topic === undefined || payload.topic === null || payload.topic === "" ? null : payload.topic
        })
        return lesson
      }, Effect.catchTag("ReferencesNotFound", referencesNotFound)))
  })
)

const StudentsHandlers = HttpApiBuilder.group(
  BackOfficeApi,
  "students",
  Effect.fnUntraced(function*(handlers) {
    const records = yield* SchoolRecords
    const enrollments = yield* Enrollments
    return handlers
      .handle("createStudent", Effect.fn("BackOfficeApi.students.createStudent")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const student = yield* records.createStudent(schoolId, {
          fio: payload.fio,
          phone: payload.phone ?? "",
          email: payload.email ?? "",
          filialId: payload.filial_id
        })
        return student
      }, Effect.catchTag("ReferencesNotFound", referencesNotFound)))
      .handle("enroll", Effect.fn("BackOfficeApi.students.enroll")(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        // The public POST /students/{id}/groups's function: the same rules and race safety.
        const enrollment = yield* enrollments.enroll(schoolId, params.id, payload.group_id)
        return enrollment
      }, Effect.catchReasons("EnrollmentRefused", {
        // The student is the path's id (404); the group is a body reference (422 on group_id)
        // (docs/back-office.md "Answers and errors").
        StudentNotFound: (reason) => Effect.fail(new Errors.NotFound({ message: RefusalMessages.studentNotFound(reason) })),
        GroupNotFound: (reason) => Effect.fail(invalidBody({ group_id: [RefusalMessages.groupNotFound(reason)] })),
        GroupFull: (reason) => Effect.fail(new Errors.GroupFull({ message: RefusalMessages.groupFull(reason) })),
        AlreadyEnrolled: (reason) =>
          Effect.fail(new Errors.AlreadyEnrolled({ message: RefusalMessages.alreadyEnrolled(reason) }))
      }, Effect.die)))
      .handle("markAttendance", Effect.fn("BackOfficeApi.students.markAttendance")(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        const mark = yield* records.markAttendance(schoolId, params.id, {
          studentId: payload.student_id,
          visitStatus: payload.visit_status
        })
        return mark
      }, Effect.catchTags({
        LessonNotFound: ({ lessonId }) => Effect.fail(new Errors.NotFound({ message: `Lesson ${lessonId} does not exist.` })),
        ReferencesNotFound: referencesNotFound
      })))
      .handle("createPayment", Effect.fn("BackOfficeApi.students.createPayment")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const payment = yield* records.createPayment(schoolId, {
          studentId: payload.student_id,
          amountKopecks: payload.amount_kopecks,
          paymentType: payload.payment_type,
          groupId: payload.group_id ?? null,
          paidAt: payload.paid_at ?? null
        })
        return payment
      }, Effect.catchTags({
        ReferencesNotFound: referencesNotFound,
        BalanceLimitExceeded: ({ limitKopecks, studentId }) =>
          Effect.fail(invalidBody({
            amount_kopecks: [`The payment would take student ${studentId}'s balance beyond ${limitKopecks} kopecks.`]
          }))
      })))
  })
)

export const SchoolHandlersNoDeps = Layer.mergeAll(ReferenceHandlers, StudentsHandlers)
