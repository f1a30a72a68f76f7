/**
 * The list at scale: GET /students page 1, a deep page (offset 100 000) and
 * `updated_since` (about 1% of the school), at 10 000 and at 1 000 000
 * students in one school, all on one API process. The traps are `meta.total`
 * (a count over the whole school on every page) and deep offsets. At 10 000
 * students offset 100 000 is past the end: an empty page with the true total.
 */
import { Effect } from "effect"
import { figuresOf, httpTarget, ms, ratio, type Scenario, times } from "../lib/Scenario.ts"

const QUERIES = [
  { id: "page-1", label: "page 1", query: () => "page=1&per_page=20" },
  { id: "deep", label: "offset 100k", query: () => "page=5001&per_page=20" },
  {
    id: "since",
    label: "updated_since",
    query: (since: string) => `page=1&per_page=20&updated_since=${encodeURIComponent(since)}`
  }
] as const

const SIZES = ["10k", "1M"] as const

export const scale: Scenario = {
  id: "scale",
  title: "GET /students at 10k and 1M students in one school",
  datasets: ["10k", "1M"],
  sameBody: false,
  setup: (context) =>
    Effect.gen(function*() {
      const { connections, largeStudents } = context.settings
      const api = yield* context.start.api()
      return QUERIES.flatMap((q) =>
        SIZES.map((size) => {
          const data = context.dataset(size)
          const sizeLabel = size === "1M" && largeStudents !== 1_000_000 ? `${largeStudents / 1000}k` : size
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
    }),
  ratios: QUERIES.map((q) => [`1M/${q.id}`, `10k/${q.id}`] as const),
  goals: (figures) =>
    QUERIES.map((q) => {
      const large = figuresOf(figures, `1M/${q.id}`)
      const small = figuresOf(figures, `10k/${q.id}`)
      const value = ratio(large.rps, small.rps)
      return {
        goal: `${q.label}: 1M within 2x of 10k (throughput ≥ 0.5x)`,
        measured: `${times(value)} (p99 ${ms(large.p99)} vs ${ms(small.p99)})`,
        pass: value >= 0.5
      }
    })
}
