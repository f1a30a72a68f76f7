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
 * failures are defects: the service speaks only domain errors. Decoded by
 * hand, not through `SqlSchema`: the rows are of two shapes (an empty page
 * is one row of the total and NULLs) and the statement is the caller's.
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

/** The window a list's page fragment is built on: an id lower bound (a fragment over `id`), a limit and an offset. */
export interface ListWindow {
  /** `id > <cursor>` in cursor mode, `TRUE` in page mode: AND it into the WHERE. */
  readonly after: Statement.Fragment
  readonly limit: number
  readonly offset: number
}

/**
 * A reader of a public list in either mode (libs/domain Pagination), built
 * once per repository. Page mode runs the count and the page in one round
 * trip (`pageReader`). Cursor mode runs the page alone over `id > cursor`
 * with one row more than the page (`has_more`) and no OFFSET: no count, and
 * the same cost at the millionth row as at the first. `page` builds the
 * page's statement from its window; it must order by id and apply `after`,
 * `limit` and `offset`. `count` is a thunk, built only in page mode.
 */
export const listReader = <S extends Schema.Constraint>(sql: SqlClient.SqlClient, row: S) => {
  const readPage = pageReader(sql, row)
  const decodeItems = Schema.decodeUnknownEffect(Schema.Array(row))
  return (
    request: Pagination.ListRequest,
    count: () => Statement.Fragment,
    page: (window: ListWindow) => Statement.Fragment
  ): Effect.Effect<Pagination.ListResult<S["Type"]>, never, S["DecodingServices"]> => {
    if (Pagination.isCursor(request)) {
      const { after, limit } = Pagination.toCursorWindow(request)
      return sql`${page({ after: sql`id > ${after}`, limit, offset: 0 })}`.pipe(
        Effect.flatMap(decodeItems),
        Effect.map((rows) => ({ _tag: "Cursor" as const, request, ...Pagination.cursorPage(request, rows) })),
        Effect.orDie
      )
    }
    const { limit, offset } = Pagination.toWindow(request)
    return readPage(count(), page({ after: sql`TRUE`, limit, offset })).pipe(
      Effect.map(({ items, total }) => ({ _tag: "Page" as const, request, items, total }))
    )
  }
}

/**
 * The `count` fragment of an unfiltered list of a counted table (students,
 * payments; migration 0300): the school's row count, read in O(1).
 */
export const countedTotal = (sql: SqlClient.SqlClient, table: "students" | "payments", schoolId: Ids.SchoolId) =>
  sql`SELECT coalesce((SELECT n::int FROM row_counts WHERE school_id = ${schoolId} AND table_name = ${table}), 0) AS total`

/**
 * The `count` fragment of a counted table's list filtered by `updated_since`
 * (migration 1500): the kept counts of the UTC days after since's day
 * (`updated_days_after`), plus a count of the matches within that day alone
 * (an index range over `(school_id, updated_at)`), so the cost is bounded by
 * one day's changes, not by every match. `filter` is `updatedSinceFilter`'s.
 * Both are scalar subqueries, so each runs once for the whole page: a
 * function in the select list of the joined subquery is pulled up into the
 * join and runs once per page row. The boundary day's count stays in this
 * statement: with the whole total in one function, PostgreSQL soon planned
 * the list's statement generically, and the generic page walks the primary
 * key (1.1 ms at 10k students instead of 0.25; docs/performance.md "Scale").
 */
export const updatedSinceTotal = (
  sql: SqlClient.SqlClient,
  table: "students" | "payments",
  schoolId: Ids.SchoolId,
  updatedSince: string,
  filter: Statement.Fragment
) => {
  const day = sql`(${updatedSince}::timestamptz AT TIME ZONE 'UTC')::date`
  return sql`SELECT (
      (SELECT updated_days_after(${schoolId}, ${table}, ${day}))
      + (SELECT count(*) FROM ${sql(table)} WHERE ${filter} AND updated_at < ((${day} + 1)::timestamp AT TIME ZONE 'UTC'))
    )::int AS total`
}

/**
 * The WHERE of a school's list with an optional `updated_since`
 * (docs/integrators.md "Keeping a copy in sync"): `>=` the instant, passed to Postgres as the UTC text the request
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

/** A list request of a table clients sync from (docs/integrators.md "Keeping a copy in sync"): a page or a cursor, and `updated_since` when given. */
export interface SyncedListRequest {
  readonly page: Pagination.ListRequest
  /** An instant already validated by the API (libs/domain Timestamps). */
  readonly updatedSince?: string | undefined
}

/**
 * A reader of a school's `table` in id order, optionally filtered by
 * `updated_since` (students, payments). Page mode: the total is the kept row
 * count when unfiltered, else the kept day counts and the boundary day's
 * matches (`updatedSinceTotal`); the page is a deferred
 * join, so the offset walks ids only (an index-only scan) and `columns`
 * (over the alias `t`) are formatted for the page's rows alone. Cursor mode:
 * the same join over `id > cursor`, no count: with `updated_since` the
 * matches are still read in id order, so a walk is exact and stable while
 * rows change (a row updated during the walk is either met ahead of the
 * cursor or caught by the next run's `updated_since`).
 */
export const syncedListReader = <S extends Schema.Constraint>(
  sql: SqlClient.SqlClient,
  row: S,
  table: "students" | "payments",
  columns: Statement.Fragment
) => {
  const read = listReader(sql, row)
  const from = sql(table)
  return (schoolId: Ids.SchoolId, { page, updatedSince }: SyncedListRequest) => {
    const filter = updatedSinceFilter(sql, schoolId, updatedSince)
    return read(
      page,
      () =>
        updatedSince === undefined
          ? countedTotal(sql, table, schoolId)
          : updatedSinceTotal(sql, table, schoolId, updatedSince, filter),
      ({ after, limit, offset }) =>
        sql`SELECT ${columns}
            FROM (SELECT id FROM ${from} WHERE ${filter} AND ${after} ORDER BY id LIMIT ${limit} OFFSET ${offset}) ids
            JOIN ${from} t ON t.school_id = ${schoolId} AND t.id = ids.id
            ORDER BY t.id`
    )
  }
}
