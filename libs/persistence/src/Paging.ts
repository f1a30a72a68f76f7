/**
 * One round trip for a page and its total (docs/development.md "Performance
 * habits"): the count and the page are joined laterally, so an empty page
 * still brings back the true total.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { type Ids, Pagination } from "@school/domain"
import type { SqlClient, Statement } from "effect/sql"

export interface PageResult<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
}

/** What every row of the join carries: the total, and the page row's id (NULL: the page is empty). */
const Head = Schema.Struct({ total: Schema.Int, id: Schema.NullOr(Schema.Unknown) })
const decodeHead = Schema.decodeUnknownEffect(Head)

/**
 * A reader of pages of `row`s, built once (with its decoder) when the
 * repository is. Each call runs `SELECT t.total, p.* FROM (<count>) t LEFT
 * JOIN LATERAL (<page>) p ON true`: `count` must select one `total` column
 * (`count(*)::int`); `page` must order and window its rows. Rows decode with
 * `row` (the `total` column is dropped as an unknown key); SQL and decode
 * failures are defects: the service speaks only domain errors.
 */
export const pageReader = <S extends Schema.Constraint>(sql: SqlClient.SqlClient, row: S) => {
  const decodeItems = Schema.decodeUnknownEffect(Schema.Array(row))
  return (
    count: Statement.Fragment,
    page: Statement.Fragment
  ): Effect.Effect<PageResult<S["Type"]>, never, S["DecodingServices"]> =>
    Effect.gen(function*() {
      const rows = yield* sql`SELECT t.total, p.* FROM (${count}) t LEFT JOIN LATERAL (${page}) p ON true`
      // The count subquery always yields one row, so there is a first row.
      const { id, total } = yield* decodeHead(rows[0])
      const items = id === null ? [] : yield* decodeItems(rows)
      return { items, total }
    }).pipe(Effect.orDie)
}

/**
 * The `count` fragment of an unfiltered list of a counted table (students,
 * payments; migration 0300): the school's row count, read in O(1).
 */
export const countedTotal = (sql: SqlClient.SqlClient, table: "students" | "payments", schoolId: Ids.SchoolId) =>
  sql`SELECT coalesce((SELECT n::int FROM row_counts WHERE school_id = ${schoolId} AND table_name = ${table}), 0) AS total`

/**
 * The WHERE of a school's list with an optional `updated_since` (spec 4.3
 * rule 4): `>=` the instant, passed to Postgres as the UTC text the request
 * schema decoded it to (`Timestamps.IsoInstant`: `YYYY-MM-DDTHH:MM:SS.ffffffZ`,
 * years 1 to 9999), which PostgreSQL always reads and which keeps the
 * microseconds; legacy rows (updated_at NULL) never match.
 */
export const updatedSinceFilter = (
  sql: SqlClient.SqlClient,
  schoolId: Ids.SchoolId,
  updatedSince: string | undefined
) =>
  updatedSince === undefined
    ? sql`school_id = ${schoolId}`
    : sql`school_id = ${schoolId} AND updated_at >= ${updatedSince}::timestamptz`

/** A list request of a table clients sync from (spec 4.3 rule 4): a page, and `updated_since` when given. */
export interface SyncedListRequest {
  readonly page: Pagination.PageRequest
  /** An instant already validated by the API (libs/domain Timestamps). */
  readonly updatedSince?: string | undefined
}

/**
 * A reader of pages of a school's `table` in id order, optionally filtered
 * by `updated_since` (students, payments): the total is the kept row count
 * when unfiltered, else a count of the matches; the page is a deferred join,
 * so the offset walks ids only (an index-only scan) and `columns` (over the
 * alias `t`) are formatted for the page's rows alone.
 */
export const syncedListReader = <S extends Schema.Constraint>(
  sql: SqlClient.SqlClient,
  row: S,
  table: "students" | "payments",
  columns: Statement.Fragment
) => {
  const readPage = pageReader(sql, row)
  const from = sql(table)
  return (schoolId: Ids.SchoolId, { page, updatedSince }: SyncedListRequest) => {
    const { limit, offset } = Pagination.toWindow(page)
    const filter = updatedSinceFilter(sql, schoolId, updatedSince)
    return readPage(
      updatedSince === undefined
        ? countedTotal(sql, table, schoolId)
        : sql`SELECT count(*)::int AS total FROM ${from} WHERE ${filter}`,
      sql`SELECT ${columns}
          FROM (SELECT id FROM ${from} WHERE ${filter} ORDER BY id LIMIT ${limit} OFFSET ${offset}) ids
          JOIN ${from} t ON t.school_id = ${schoolId} AND t.id = ids.id
          ORDER BY t.id`
    )
  }
}
