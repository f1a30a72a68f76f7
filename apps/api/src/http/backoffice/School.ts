/**
 * Handlers of the back office's school records
 * (libs/domain/src/api/backoffice/School.ts; docs/back-office.md): the role
 * is checked before the request is decoded (`RoleCheck`, from each
 * endpoint's `RequiredAccess`); then one repository call.
 * Enrollment is the public API's own function (Enrollments.enroll), its
 * refusals said in the back office's codes. `SchoolRepositories` names the
 * persistence services they need beyond those Server.ts already provides
 * (Enrollments); Server.ts provides them with the rest.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { CurrentEmployee } from "@school/domain/api/BackOfficeMiddleware"
import { toBackOfficeError } from "@school/domain/Enrollments"
import { Enrollments } from "@school/persistence/Enrollments"
import { SchoolRecords } from "@school/persistence/SchoolRecords"

export const SchoolRepositories = SchoolRecords.layer

const ReferenceHandlers = HttpApiBuilder.group(
  BackOfficeApi,
  "reference",
  Effect.fnUntraced(function*(handlers) {
    const records = yield* SchoolRecords
    return handlers
      .handle("createFilial", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const address = payload.address === undefined || payload.address === null || payload.address === ""
          ? null
          : payload.address
        return { success: true as const, data: yield* records.createFilial(schoolId, { name: payload.name, address }) }
      }))
      .handle("createSubject", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        return { success: true as const, data: yield* records.createSubject(schoolId, { name: payload.name }) }
      }))
      .handle("createProgram", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const program = { name: payload.name, subjectId: payload.subject_id ?? null }
        return { success: true as const, data: yield* records.createProgram(schoolId, program) }
      }))
      .handle("createLevel", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const level = { name: payload.name, programId: payload.program_id ?? null }
        return { success: true as const, data: yield* records.createLevel(schoolId, level) }
      }))
      .handle("createGroup", Effect.fnUntraced(function*({ payload }) {
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
        return { success: true as const, data: group }
      }))
      .handle("createLesson", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const lesson = yield* records.createLesson(schoolId, {
          groupId: payload.group_id,
          startsAt: payload.starts_at,
          endsAt: payload.ends_at,
          teacherId: payload.teacher_id ?? null,
          topic: payload.topic === undefined || payload.topic === null || payload.topic === "" ? null : payload.topic
        })
        return { success: true as const, data: lesson }
      }))
  })
)

const StudentsHandlers = HttpApiBuilder.group(
  BackOfficeApi,
  "students",
  Effect.fnUntraced(function*(handlers) {
    const records = yield* SchoolRecords
    const enrollments = yield* Enrollments
    return handlers
      .handle("createStudent", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const student = yield* records.createStudent(schoolId, {
          fio: payload.fio,
          phone: payload.phone ?? "",
          email: payload.email ?? "",
          filialId: payload.filial_id
        })
        return { success: true as const, data: student }
      }))
      .handle("enroll", Effect.fnUntraced(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        // The public POST /students/{id}/groups's function: the same rules and race safety.
        const enrollment = yield* enrollments.enroll(schoolId, params.id, payload.group_id).pipe(
          Effect.mapError(toBackOfficeError)
        )
        return { success: true as const, data: enrollment }
      }))
      .handle("markAttendance", Effect.fnUntraced(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        const mark = yield* records.markAttendance(schoolId, params.id, {
          studentId: payload.student_id,
          visitStatus: payload.visit_status
        })
        return { success: true as const, data: mark }
      }))
      .handle("createPayment", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const payment = yield* records.createPayment(schoolId, {
          studentId: payload.student_id,
          amountKopecks: payload.amount_kopecks,
          paymentType: payload.payment_type,
          groupId: payload.group_id ?? null,
          paidAt: payload.paid_at ?? null
        })
        return { success: true as const, data: payment }
      }))
  })
)

export const SchoolHandlersNoDeps = Layer.mergeAll(ReferenceHandlers, StudentsHandlers)
