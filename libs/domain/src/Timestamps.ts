/**
 * Timestamps on the wire. Filters (spec 4.1, docs/decisions.md "Lists"):
 * ISO 8601 with an explicit offset (`Z` or `±HH:MM`); the validated string
 * goes to Postgres unchanged, so microseconds survive (a JS Date would keep
 * only milliseconds). Responses: UTC with microseconds and `Z`, as the
 * database formats them (docs/decisions.md "Resources").
 */
import { Schema } from "effect"

const ISO_WITH_OFFSET =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|[+-](\d{2}):?(\d{2}))$/

export const isIsoInstantWithOffset = (s: string): boolean => {
  const m = ISO_WITH_OFFSET.exec(s)
  if (m === null) return false
  const [, y, mo, d, h, mi, sec, , , oh, om] = m
  const month = Number(mo)
  const day = Number(d)
  const daysInMonth = new Date(Date.UTC(Number(y), month, 0)).getUTCDate()
  // Year 0 does not exist in PostgreSQL's calendar (1 BC is year 0 in ISO 8601).
  return Number(y) >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth &&
    Number(h) <= 23 && Number(mi) <= 59 && Number(sec ?? 0) <= 59 &&
    Number(oh ?? 0) <= 23 && Number(om ?? 0) <= 59
}

export const IsoInstant = Schema.String.check(
  Schema.makeFilter(isIsoInstantWithOffset, {
    message: "Expected an ISO 8601 date-time with an offset, e.g. 2026-11-22T09:15:03Z or 2026-11-22T12:15:03+03:00"
  })
)

/** A timestamp in a response: ISO 8601 UTC with microseconds and Z, formatted by the database. */
export const Timestamp = Schema.String.annotate({
  description: "ISO 8601 UTC timestamp with microseconds, e.g. 2026-11-22T09:15:03.123456Z"
})
