/**
 * One round trip for a page and its total (ARCHITECTURE "Performance
 * habits"): the count and the page are joined laterally, so an empty page
 * still brings back the true total.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Statement } from "effect/sql"

export interface PageResult<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
}

interface TotalRow {
  readonly total: number
  readonly id: number | null
}

/**
 * Runs `SELECT t.total, p.* FROM (<count>) t LEFT JOIN LATERAL (<page>) p`.
 * `count` must select one `total` column (`count(*)::int`); `page` must order
 * and window its rows. Rows decode with `row`; SQL and decode failures are
 * defects: the service speaks only domain errors.
 */
export const listPage = <S extends Schema.Constraint>(
  row: S,
  count: Statement.Fragment,
  page: Statement.Fragment
): Effect.Effect<PageResult<S["Type"]>, never, SqlClient.SqlClient | S["DecodingServices"]> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<TotalRow>`SELECT t.total, p.* FROM (${count}) t LEFT JOIN LATERAL (${page}) p ON true`
    const total = rows[0]?.total ?? 0
    const present = rows[0]?.id === null ? [] : rows
    const items = yield* Schema.decodeUnknownEffect(Schema.Array(row))(present.map(withoutTotal))
    return { items, total }
  }).pipe(Effect.orDie)

const withoutTotal = ({ total: _total, ...rest }: TotalRow) => rest

/**
 * The `count` fragment of an unfiltered list of a counted table (students,
 * payments; migration 0300): the school's row count, read in O(1).
 */
export const countedTotal = (sql: SqlClient.SqlClient, table: "students" | "payments", schoolId: number) =>
  sql`SELECT coalesce((SELECT n::int FROM row_counts WHERE school_id = ${schoolId} AND table_name = ${table}), 0) AS total`

/**
 * The WHERE of a school's list with an optional `updated_since` (spec 4.3
 * rule 4): `>=` the instant, passed to Postgres as validated text so its
 * microseconds survive; legacy rows (updated_at NULL) never match.
 */
export const updatedSinceFilter = (sql: SqlClient.SqlClient, schoolId: number, updatedSince: string | undefined) =>
  updatedSince === undefined
    ? sql`school_id = ${schoolId}`
    : sql`school_id = ${schoolId} AND updated_at >= ${updatedSince}::timestamptz`
