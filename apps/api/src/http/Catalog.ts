/** GET /groups, /lessons, /filials, /subjects, /programs, /levels. */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { type Ids, LessonWindow, Pagination } from "@school/domain"
import { CurrentKey } from "@school/domain/api/Middleware"
import { PublicApi } from "@school/domain/api/PublicApi"
import { Catalog } from "@school/persistence/Catalog"

/** A paginated list of one school: the whole handler, given which catalog list to read. */
const listOf = <A extends { readonly id: number }>(
  read: (schoolId: Ids.SchoolId, page: Pagination.ListRequest) => Effect.Effect<Pagination.ListResult<A>>
) =>
  Effect.fnUntraced(function*({ query }: { readonly query: Pagination.ListQuery }) {
    const { schoolId } = yield* CurrentKey
    return Pagination.listBody(yield* read(schoolId, Pagination.listRequest(query)))
  })

export const GroupsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "groups",
  Effect.fnUntraced(function*(handlers) {
    const catalog = yield* Catalog
    return handlers.handle("list", listOf(catalog.groups))
  })
)

export const LessonsHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "lessons",
  Effect.fnUntraced(function*(handlers) {
    const catalog = yield* Catalog
    return handlers.handle("list", Effect.fnUntraced(function*({ query }) {
      // spec 4.2: invalid_window, window_too_large
      const window = LessonWindow.validateWindow(query.from, query.to)
      if (Result.isFailure(window)) return yield* window.failure
      return yield* listOf((schoolId, page) => catalog.lessons(schoolId, window.success, page))({ query })
    }))
  })
)

export const ReferenceHandlersNoDeps = HttpApiBuilder.group(
  PublicApi,
  "reference",
  Effect.fnUntraced(function*(handlers) {
    const catalog = yield* Catalog
    return handlers
      .handle("filials", listOf(catalog.filials))
      .handle("subjects", listOf(catalog.subjects))
      .handle("programs", listOf(catalog.programs))
      .handle("levels", listOf(catalog.levels))
  })
)

/** The three groups of catalog reads, all served by `Catalog`. */
export const CatalogHandlersNoDeps = Layer.mergeAll(GroupsHandlersNoDeps, LessonsHandlersNoDeps, ReferenceHandlersNoDeps)
