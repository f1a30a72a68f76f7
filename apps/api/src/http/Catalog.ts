/** GET /groups, /lessons, /filials, /subjects, /programs, /levels. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { type Ids, LessonWindow, Pagination } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
import { Catalog } from "@school/persistence/Catalog"

/** A paginated list of one school: the whole handler (its span `name`), given which catalog list to read. */
const listOf = <A extends { readonly id: number }>(
  name: string,
  read: (schoolId: Ids.SchoolId, page: Pagination.ListRequest) => Effect.Effect<Pagination.ListResult<A>>
) =>
  Effect.fn(name)(function*({ query }: { readonly query: Pagination.ListQuery }) {
    const { schoolId } = yield* CurrentKey
    return Pagination.listBody(yield* read(schoolId, Pagination.listRequest(query)))
  })

export const GroupsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "groups",
  Effect.fnUntraced(function*(handlers) {
    const catalog = yield* Catalog
    return handlers.handle("list", listOf("PublicApi.groups.list", catalog.groups))
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
      return Pagination.listBody(yield* catalog.lessons(schoolId, window.success, Pagination.listRequest(query)))
    }))
  })
)

export const ReferenceHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "reference",
  Effect.fnUntraced(function*(handlers) {
    const catalog = yield* Catalog
    return handlers
      .handle("filials", listOf("PublicApi.reference.filials", catalog.filials))
      .handle("subjects", listOf("PublicApi.reference.subjects", catalog.subjects))
      .handle("programs", listOf("PublicApi.reference.programs", catalog.programs))
      .handle("levels", listOf("PublicApi.reference.levels", catalog.levels))
  })
)

/** The three groups of catalog reads, all served by `Catalog`. */
export const CatalogHandlersNoDeps = Layer.mergeAll(GroupsHandlersNoDeps, LessonsHandlersNoDeps, ReferenceHandlersNoDeps)
