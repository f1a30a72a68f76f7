/** POST /demo-lessons (spec 4.2, DECISIONS "Writes"): one repository call. */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { DemoLessons as DemoLessonRules } from "@school/domain"
import { CurrentKey, PublicApi } from "@school/domain/PublicApi"
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

export const DemoLessonsHandlers = DemoLessonsHandlersNoDeps.pipe(Layer.provide(DemoLessons.layer))
