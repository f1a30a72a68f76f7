/**
 * List pagination (spec 4.1, docs/decisions.md "Lists"): `page` from 1
 * (default 1), `per_page` 1..100 (default 20, above 100 is an error, never
 * clamped), order by ascending id. A page past the end is empty with the
 * true total.
 */
import * as Schema from "effect/Schema"
import { DecimalIntFromString } from "./Ids.ts"

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
})
