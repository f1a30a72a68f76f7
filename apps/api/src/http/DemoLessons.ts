/** POST /demo-lessons (docs/integrators.md "Writing", docs/decisions.md "Writes"): one repository call. */
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { DemoLessons as DemoLessonRules, Errors } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
import { DemoLessons } from "@school/persistence/DemoLessons"
import * as RefusalMessages from "./RefusalMessages.ts"

/**
 * An attendee not of the school: docs/decisions.md "Writes": no new code for
 * this endpoint; the field is named.
 */
const attendeeNotFound = (field: "user_id" | "lead_id", what: string, id: number) =>
  Effect.fail(
    new Errors.ValidationFailed({
      message: `Invalid request body: ${field}`,
      fields: { [field]: [`Expected ${what} of this school, got ${id}`] }
    })
  )

export const DemoLessonsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "demoLessons",
  Effect.fnUntraced(function*(handlers) {
    const demoLessons = yield* DemoLessons
    return handlers.handle("create", Effect.fn("PublicApi.demoLessons.create")(function*({ payload }) {
      const { schoolId } = yield* CurrentKey
      return { data: yield* demoLessons.book(schoolId, DemoLessonRules.toNewDemoLesson(payload)) }
    }, Effect.catchReasons("DemoLessonRefused", {
      StudentNotFound: ({ studentId }) => attendeeNotFound("user_id", "a student", studentId),
      LeadNotFound: ({ leadId }) => attendeeNotFound("lead_id", "a lead", leadId),
      GroupNotFound: (reason) => Effect.fail(new Errors.GroupNotFound({ message: RefusalMessages.groupNotFound(reason) })),
      GroupFull: (reason) => Effect.fail(new Errors.GroupFull({ message: RefusalMessages.groupFull(reason) }))
    }, Effect.die)))
  })
)
