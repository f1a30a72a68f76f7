/**
 * List pagination (docs/integrators.md "Lists and pagination", docs/decisions.md "Lists"): `page` from 1
 * (default 1), `per_page` 1..100 (default 20, above 100 is an error, never
 * clamped), order by ascending id. A page past the end is empty with the
 * true total.
 *
 * Cursor mode (docs/decisions.md "Cursor pagination"): `starting_after=<id>`
 * asks for the `per_page` items with an id above it, in id order. Its cost
 * does not grow with the position in the list (an index range, no OFFSET),
 * and its meta has no total (no count per page): `has_more` and
 * `next_starting_after` say where the next page starts.
 */
import * as Schema from "effect/Schema"
import { DecimalIntFromString, MAX_ID } from "./Ids.ts"

export const DEFAULT_PER_PAGE = 20
export const MAX_PER_PAGE = 100
/** Pages beyond this would overflow an SQL offset; nobody pages that far. */
export const MAX_PAGE = 1_000_000_000

/**
 * The query parameters, written as plain decimals (`DecimalIntFromString`:
 * `1e1`, `1.0`, `+5`, `007` are validation_failed, docs/decisions.md
 * "Requests and responses"); decoded, they are integers in range.
 */
export const Page = DecimalIntFromString(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_PAGE })))
export const PerPage = DecimalIntFromString(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_PER_PAGE })))

/**
 * `starting_after`: an id, 0 to MAX_ID. 0 is before every id, so
 * `starting_after=0` is the first page of a cursor walk.
 */
export const StartingAfter = DecimalIntFromString(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: MAX_ID })))

export interface PageRequest {
  readonly page: number
  readonly perPage: number
}

export interface Window {
  readonly limit: number
  readonly offset: number
}

export const pageRequest = (query: { readonly page?: number | undefined; readonly per_page?: number | undefined }): PageRequest => ({
  page: query.page ?? 1,
  perPage: query.per_page ?? DEFAULT_PER_PAGE
})

/** The SQL window of a page. */
export const toWindow = ({ page, perPage }: PageRequest): Window => ({
  limit: perPage,
  offset: (page - 1) * perPage
})

export interface Meta {
  readonly page: number
  readonly per_page: number
  readonly total: number
}

export const meta = ({ page, perPage }: PageRequest, total: number): Meta => ({ page, per_page: perPage, total })

/** How many items the given page holds out of `total`. */
export const itemsOnPage = (request: PageRequest, total: number): number => {
  const { limit, offset } = toWindow(request)
  return Math.max(0, Math.min(limit, total - offset))
}

export const Meta = Schema.Struct({
  page: Schema.Int,
  per_page: Schema.Int,
  total: Schema.Int
}).annotate({ examples: [{ page: 1, per_page: 20, total: 1 }] })

/** A page in cursor mode: the `perPage` items with an id above `startingAfter`. */
export interface CursorRequest {
  readonly startingAfter: number
  readonly perPage: number
}

/** What a public list asks for: a page number, or a cursor. */
export type ListRequest = PageRequest | CursorRequest

export const isCursor = (request: ListRequest): request is CursorRequest => "startingAfter" in request

/** The decoded list query: `starting_after` present selects cursor mode. */
export interface ListQuery {
  readonly page?: number | undefined
  readonly per_page?: number | undefined
  readonly starting_after?: number | undefined
}

export const listRequest = (query: ListQuery): ListRequest =>
  query.starting_after === undefined
    ? pageRequest(query)
    : { startingAfter: query.starting_after, perPage: query.per_page ?? DEFAULT_PER_PAGE }

export const PAGE_WITH_CURSOR_MESSAGE =
  "page cannot be combined with starting_after: a cursor page is always the one right after the given id (omit page, or send page=1)"

/**
 * The one rule across the list parameters: `page` above 1 with
 * `starting_after` is validation_failed on `page` (both name a position; the
 * request would be ambiguous). `page=1`, the default, is accepted and means
 * nothing more in cursor mode.
 */
export const pageWithCursorRule = Schema.makeFilter<ListQuery>(
  (query) =>
    query.starting_after !== undefined && query.page !== undefined && query.page > 1
      ? { path: ["page"], issue: PAGE_WITH_CURSOR_MESSAGE }
      : undefined,
  { expected: "page omitted or 1 when starting_after is given" }
)

/**
 * The SQL window of a cursor page: ids above `after`, in id order, one row
 * more than the page, so the row past the page says whether there is more.
 */
export const toCursorWindow = ({ perPage, startingAfter }: CursorRequest): { readonly after: number; readonly limit: number } => ({
  after: startingAfter,
  limit: perPage + 1
})

export interface CursorPage<A> {
  readonly items: ReadonlyArray<A>
  readonly hasMore: boolean
}

/** The page out of the rows its window read (at most `perPage + 1`, in id order). */
export const cursorPage = <A>({ perPage }: CursorRequest, rows: ReadonlyArray<A>): CursorPage<A> => ({
  items: rows.length > perPage ? rows.slice(0, perPage) : rows,
  hasMore: rows.length > perPage
})

export interface CursorMeta {
  readonly per_page: number
  readonly starting_after: number
  readonly has_more: boolean
  readonly next_starting_after: number | null
}

/** A cursor page's meta: the request, whether more items follow, and the cursor of the next page (its last id) when they do. */
export const cursorMeta = (
  { perPage, startingAfter }: CursorRequest,
  { hasMore, items }: CursorPage<{ readonly id: number }>
): CursorMeta => ({
  per_page: perPage,
  starting_after: startingAfter,
  has_more: hasMore,
  next_starting_after: hasMore ? items[items.length - 1]!.id : null
})

export const CursorMeta = Schema.Struct({
  per_page: Schema.Int,
  starting_after: Schema.Int.annotate({ description: "The cursor this page was asked with" }),
  has_more: Schema.Boolean.annotate({ description: "Whether items with a larger id follow this page" }),
  next_starting_after: Schema.NullOr(Schema.Int).annotate({
    description: "The starting_after of the next page (this page's last id); null when has_more is false"
  })
}).annotate({ description: "The meta of a cursor page (starting_after given): no page and no total" })

/** The meta of a public list: a page's (with its total), or a cursor page's. */
export const ListMeta = Schema.Union([Meta, CursorMeta])

/** What a repository returns for a list request, with the request it answers: a page with its total, or a cursor page. */
export type ListResult<A> =
  | { readonly _tag: "Page"; readonly request: PageRequest; readonly items: ReadonlyArray<A>; readonly total: number }
  | { readonly _tag: "Cursor"; readonly request: CursorRequest; readonly items: ReadonlyArray<A>; readonly hasMore: boolean }

/** The response body of a public list: its items and the meta of the mode it was asked in. */
export const listBody = <A extends { readonly id: number }>(result: ListResult<A>): {
  readonly data: ReadonlyArray<A>
  readonly meta: Meta | CursorMeta
} => ({
  data: result.items,
  meta: result._tag === "Page" ? meta(result.request, result.total) : cursorMeta(result.request, result)
})
