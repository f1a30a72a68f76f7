/** GET /groups, /lessons, /filials, /subjects, /programs, /levels. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { type Ids, LessonWindow, Models, Pagination } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
import { Catalog } from "@school/persistence/Catalog"
import { listResponse } from "./ListResponse.ts"

/** A paginated list of one school: the whole handler (its span `name`), given which catalog list to read. */
const listOf = <F extends Schema.Struct.Fields, A extends Schema.Struct<F>["Type"] & { readonly id: number }>(
  name: string,
  item: Schema.Struct<F>,
  read: (schoolId: Ids.SchoolId, page: Pagination.ListRequest) => Effect.Effect<Pagination.ListResult<A>>
) => {
  const answer = listResponse(item)
  return Effect.fn(name)(function*({ query }: { readonly query: Pagination.ListQuery }) {
    const { schoolId } = yield* CurrentKey
    return answer(yield* read(schoolId, Pagination.listRequest(query)))
  })
}

const lessonsList = listResponse(Models.Lesson)

export const GroupsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "groups",
  Effect.fnUntraced(function*(handlers) {
    const catalog = yield* Catalog
    return handlers.handle("list", listOf("PublicApi.groups.list", Models.Group, catalog.groups))
  })
)

export const LessonsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "lessons",
  Effect.fnUntraced(function*(handlers) {
    const catalog = yield* Catalog
    return handlers.handle("list", Effect.fn("PublicApi.lessons.list")(function*({ query }) {
      // invalid_window, window_too_large (docs/integrators.md "Responses and errors")
      const window = LessonWindow.validateWindow(query.from, query.to)
      if (Result.isFailure(window)) return yield* window.failure
      const { schoolId } = yield* CurrentKey
      return lessonsList(yield* catalog.lessons(schoolId, window.success, Pagination.listRequest(query)))
    }))
  })
)

export const ReferenceHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "reference",
  Effect.fnUntraced(function*(handlers) {
    const catalog = yield* Catalog
    return handlers
      .handle("filials", listOf("PublicApi.reference.filials", Models.Filial, catalog.filials))
      .handle("subjects", listOf("PublicApi.reference.subjects", Models.Subject, catalog.subjects))
      .handle("programs", listOf("PublicApi.reference.programs", Models.Program, catalog.programs))
      .handle("levels", listOf("PublicApi.reference.levels", Models.Level, catalog.levels))
  })
)

/** The three groups of catalog reads, all served by `Catalog`. */
export const CatalogHandlersNoDeps = Layer.mergeAll(GroupsHandlersNoDeps, LessonsHandlersNoDeps, ReferenceHandlersNoDeps)
