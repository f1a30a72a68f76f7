/**
 * The list at scale: GET /students at 10 000 and at 1 000 000 students in
 * one school, all on one API process.
 *
 * - 10k vs 1M, the same request at both sizes: page 1, a deep page (offset
 *   100 000), `updated_since` (about 1% of the school) in the page-number
 *   form (a count of the matches for `meta.total`), and the same
 *   `updated_since` in cursor mode (`starting_after=0`, no count). The traps
 *   are `meta.total` (a count over the whole school, or over every match, on
 *   every page) and deep offsets. At 10 000 students offset 100 000 is past
 *   the end: an empty page with the true total.
 * - A full sync at 1M (docs/integrators.md "Keeping a copy in sync"): the first and the
 *   last page of a cursor walk (`starting_after`, per_page 100), judged on
 *   the database time per page (`Figures.dbMs`), with the deep OFFSET page
 *   (page 10 000 of 100, the last page of the same sync in the page-number
 *   form) beside it for comparison.
 */
import { Effect } from "effect"
import { type BenchDatabase } from "../lib/Database.ts"
import { benchError } from "../lib/Processes.ts"
import { type Figures, figuresOf, httpTarget, ms, ratio, type Scenario, times } from "../lib/Scenario.ts"

const QUERIES = [
  { id: "page-1", label: "page 1", query: () => "page=1&per_page=20" },
  { id: "deep", label: "offset 100k", query: () => "page=5001&per_page=20" },
  {
    id: "since",
    label: "updated_since",
    query: (since: string) => `page=1&per_page=20&updated_since=${encodeURIComponent(since)}`
  },
  {
    id: "since-cursor",
    label: "updated_since, cursor",
    query: (since: string) => `starting_after=0&per_page=20&updated_since=${encodeURIComponent(since)}`
  }
] as const

const SIZES = ["10k", "1M"] as const

/** A sync's page size: the largest a client may ask for. */
const SYNC_PER_PAGE = 100

/** The cursor of the last page of a walk of the school's students: the id `SYNC_PER_PAGE` + 1 from the end. */
const lastPageCursor = (db: BenchDatabase, schoolId: number) =>
  db.sql<{ id: number }>`
    SELECT id FROM students WHERE school_id = ${schoolId} ORDER BY id DESC OFFSET ${SYNC_PER_PAGE} LIMIT 1`.pipe(
    Effect.map((rows) => rows[0]?.id ?? 0),
    Effect.mapError((error) => benchError(`the last page's cursor: ${String(error)}`))
  )

const SYNC = [
  { id: "sync-first", label: "sync, cursor: first page", query: () => `starting_after=0&per_page=${SYNC_PER_PAGE}` },
  { id: "sync-last", label: "sync, cursor: last page", query: (last: number) => `starting_after=${last}&per_page=${SYNC_PER_PAGE}` },
  {
    id: "sync-offset-last",
    label: "sync, page-number: last page",
    query: (_: number, students: number) => `page=${Math.ceil(students / SYNC_PER_PAGE)}&per_page=${SYNC_PER_PAGE}`
  }
] as const

const dbMs = (f: Figures) => (f.dbMs === undefined ? "n/a" : `${f.dbMs.toFixed(2)} ms`)

export const scale: Scenario = {
  id: "scale",
  title: "GET /students at 10k and 1M students in one school",
  datasets: ["10k", "1M"],
  sameBody: false,
  setup: (context) =>
    Effect.gen(function*() {
      const { connections, largeStudents } = context.settings
      const api = yield* context.start.api()
      const large = context.dataset("1M")
      const largeLabel = largeStudents !== 1_000_000 ? `${largeStudents / 1000}k` : "1M"
      const last = yield* lastPageCursor(context.db, large.schoolId)
      const bySize = QUERIES.flatMap((q) =>
        SIZES.map((size) => {
          const data = context.dataset(size)
          const sizeLabel = size === "1M" ? largeLabel : size
          return httpTarget({
            id: `${size}/${q.id}`,
            label: `${sizeLabel}: ${q.label}`,
            server: api,
            load: { paths: [`/api/public/v1/students?${q.query(data.updatedSince)}`], keys: data.keys },
            connections,
            api: true
          })
        })
      )
      const sync = SYNC.map((q) =>
        httpTarget({
          id: `1M/${q.id}`,
          label: `${largeLabel}: ${q.label}`,
          server: api,
          load: { paths: [`/api/public/v1/students?${q.query(last, largeStudents)}`], keys: large.keys },
          connections,
          api: true
        })
      )
      return [...bySize, ...sync]
    }),
  ratios: [
    ...QUERIES.map((q) => [`1M/${q.id}`, `10k/${q.id}`] as const),
    ["1M/sync-last", "1M/sync-first"],
    ["1M/sync-offset-last", "1M/sync-first"]
  ],
  goals: (figures) => {
    const bySize = QUERIES.map((q) => {
      const large = figuresOf(figures, `1M/${q.id}`)
      const small = figuresOf(figures, `10k/${q.id}`)
      const value = ratio(large.rps, small.rps)
      return {
        goal: `${q.label}: 1M within 2x of 10k (throughput ≥ 0.5x)`,
        measured: `${times(value)} (p99 ${ms(large.p99)} vs ${ms(small.p99)})`,
        pass: value >= 0.5
      }
    })
    const first = figuresOf(figures, "1M/sync-first")
    const last = figuresOf(figures, "1M/sync-last")
    const offset = figuresOf(figures, "1M/sync-offset-last")
    const syncRatio = ratio(last.dbMs, first.dbMs)
    return [
      ...bySize,
      {
        goal: "full sync at 1M, cursor: database time per page, last page vs first ≤ 2x",
        measured: first.dbMs === undefined
          ? "not measured (pg_stat_statements not tracked)"
          : `${times(syncRatio)} (${dbMs(last)} vs ${dbMs(first)} per page; the page-number form's last page ${dbMs(offset)}, ${
            times(ratio(offset.dbMs, first.dbMs))
          })`,
        pass: syncRatio <= 2
      }
    ]
  }
}
