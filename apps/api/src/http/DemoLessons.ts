/** POST /demo-lessons (spec 4.2, docs/decisions.md "Writes"): one repository call. */
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { DemoLessons as DemoLessonRules } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
import { DemoLessons } from "@school/persistence/DemoLessons"

export const DemoLessonsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "demoLessons",
  Effect.fnUntraced(function*(handlers) {
    const demoLessons = yield* DemoLessons
    return handlers.handle("create", Effect.fnUntraced(function*({ payload }) {
      const { schoolId } = yield* CurrentKey
      return { data: yield* demoLessons.book(schoolId, DemoLessonRules.toNewDemoLesson(payload)) }
    }))
  })
)
