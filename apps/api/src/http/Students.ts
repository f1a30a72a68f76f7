/**
 * GET /students and GET /students/{id} (docs/integrators.md "Reading"):
 * decode, one repository call, encode; the JSON of the list and of the card
 * is written from their rows (./ListResponse.ts).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Errors, Models, Pagination } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
import { Students } from "@school/persistence/Students"
import { dataResponse, listResponse } from "./ListResponse.ts"

const studentsList = listResponse(Models.StudentListItem)
const studentCard = dataResponse(Models.StudentCard)

export const StudentsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "students",
  Effect.fnUntraced(function*(handlers) {
    const students = yield* Students
    return handlers
      .handle("list", Effect.fn("PublicApi.students.list")(function*({ query }) {
        const { schoolId } = yield* CurrentKey
        const page = Pagination.listRequest(query)
        return studentsList(yield* students.list(schoolId, { page, updatedSince: query.updated_since }))
      }))
      .handle("get", Effect.fn("PublicApi.students.get")(function*({ params }) {
        const { schoolId } = yield* CurrentKey
        const student = yield* students.get(schoolId, params.id)
        if (Option.isNone(student)) {
          // Another school's student is indistinguishable from a missing one.
          return yield* new Errors.NotFound({ message: `Student ${params.id} not found.` })
        }
        return studentCard(student.value)
      }))
  })
)
