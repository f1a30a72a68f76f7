/**
 * Timestamps on the wire. Every instant the API takes (`updated_since`,
 * `starts_at`; docs/integrators.md "Keeping a copy in sync", docs/decisions.md "Lists", "Requests and
 * responses") is ISO 8601 with an explicit offset (`Z`, `±HH:MM` or
 * `±HHMM`), an offset from -14:00 to +14:00, and an INSTANT from
 * 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z: the range is checked
 * on the instant, not on the text, so `9999-12-31T23:00:00-05:00` (year 10000
 * in UTC) is refused. An accepted value decodes to its UTC spelling
 * (`YYYY-MM-DDTHH:MM:SS.ffffffZ`), which PostgreSQL always reads and which
 * keeps the microseconds (a JS Date would keep only milliseconds).
 * Responses: UTC with microseconds and `Z`, as the database formats them
 * (docs/decisions.md "Resources").
 */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

const ISO_WITH_OFFSET =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|([+-])(\d{2}):?(\d{2}))$/

/** The widest offset accepted, in minutes (docs/decisions.md "Lists"): ±14:00 holds every zone in use. */
export const MAX_OFFSET_MINUTES = 14 * 60

const SECONDS_PER_DAY = 86_400

/** Days from 1970-01-01 to the proleptic Gregorian date (year ≥ 1), by integer arithmetic alone. */
export const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const mp = (month + 9) % 12
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146_097 + doe - 719_468
}

/** The date of a day number (the inverse of `daysFromCivil`). */
export const civilFromDays = (days: number): { readonly year: number; readonly month: number; readonly day: number } => {
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day }
}

const daysInMonth = (year: number, month: number): number =>
  daysFromCivil(month === 12 ? year + 1 : year, month === 12 ? 1 : month + 1, 1) - daysFromCivil(year, month, 1)

/** Seconds since 1970-01-01T00:00:00Z of the first and of the last whole second accepted. */
export const MIN_EPOCH_SECONDS = daysFromCivil(1, 1, 1) * SECONDS_PER_DAY
export const MAX_EPOCH_SECONDS = daysFromCivil(9999, 12, 31) * SECONDS_PER_DAY + SECONDS_PER_DAY - 1

export const RANGE_MESSAGE = "Expected an instant from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"
export const OFFSET_MESSAGE = "Expected an offset from -14:00 to +14:00"
export const FORMAT_MESSAGE =
  "Expected an ISO 8601 date-time with an offset, e.g. 2026-11-22T09:15:03Z or 2026-11-22T12:15:03+03:00"

/** An instant: whole seconds since the epoch (UTC) and the microseconds within that second. */
export interface Instant {
  readonly epochSeconds: number
  readonly micros: number
}

export type Parsed =
  | { readonly _tag: "Instant"; readonly instant: Instant }
  | { readonly _tag: "Invalid"; readonly message: string }

const invalid = (message: string): Parsed => ({ _tag: "Invalid", message })

/** Reads a timestamp as the API accepts it, or says which rule it breaks. */
export const parseInstant = (s: string): Parsed => {
  const m = ISO_WITH_OFFSET.exec(s)
  if (m === null) return invalid(FORMAT_MESSAGE)
  const [, y, mo, d, h, mi, sec, fraction, , sign, oh, om] = m
  const year = Number(y)
  const month = Number(mo)
  const day = Number(d)
  const hour = Number(h)
  const minute = Number(mi)
  const second = Number(sec ?? 0)
  // Year 0 does not exist in PostgreSQL's calendar (1 BC is year 0 in ISO 8601).
  if (
    year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) ||
    hour > 23 || minute > 59 || second > 59
  ) return invalid(FORMAT_MESSAGE)
  const offsetHours = Number(oh ?? 0)
  const offsetMinutes = Number(om ?? 0)
  if (offsetMinutes > 59) return invalid(FORMAT_MESSAGE)
  const offset = offsetHours * 60 + offsetMinutes
  if (offset > MAX_OFFSET_MINUTES) return invalid(OFFSET_MESSAGE)
  const local = daysFromCivil(year, month, day) * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second
  const epochSeconds = local - (sign === "-" ? -offset : offset) * 60
  if (epochSeconds < MIN_EPOCH_SECONDS || epochSeconds > MAX_EPOCH_SECONDS) return invalid(RANGE_MESSAGE)
  return { _tag: "Instant", instant: { epochSeconds, micros: Number((fraction ?? "").padEnd(6, "0")) } }
}

const pad = (n: number, width: number) => String(n).padStart(width, "0")

/** The UTC spelling of an accepted instant: `YYYY-MM-DDTHH:MM:SS.ffffffZ` (what the database also writes). */
export const formatUtc = ({ epochSeconds, micros }: Instant): string => {
  const days = Math.floor(epochSeconds / SECONDS_PER_DAY)
  const secondOfDay = epochSeconds - days * SECONDS_PER_DAY
  const { day, month, year } = civilFromDays(days)
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(Math.floor(secondOfDay / 3600), 2)}:` +
    `${pad(Math.floor(secondOfDay / 60) % 60, 2)}:${pad(secondOfDay % 60, 2)}.${pad(micros, 6)}Z`
}

export const isIsoInstantWithOffset = (s: string): boolean => parseInstant(s)._tag === "Instant"

/** The accepted value in the UTC spelling PostgreSQL always reads; undefined when it is not accepted. */
export const toUtc = (s: string): string | undefined => {
  const parsed = parseInstant(s)
  return parsed._tag === "Instant" ? formatUtc(parsed.instant) : undefined
}

/**
 * A timestamp the API takes: the text is checked (format, offset, instant
 * range) and decodes to its UTC spelling with microseconds, so what reaches
 * SQL is always `YYYY-MM-DDTHH:MM:SS.ffffffZ` of a year from 1 to 9999.
 */
export const IsoInstant = Schema.String.annotate({
  // On the base string, not a check: HttpApi documents a parameter's or a body's string without its checks.
  format: "date-time",
  examples: ["2026-11-22T12:15:03+03:00"]
}).check(
  Schema.makeFilter((s: string) => {
    const parsed = parseInstant(s)
    return parsed._tag === "Instant" ? undefined : parsed.message
  }, { expected: "an ISO 8601 date-time with an offset" })
).pipe(
  Schema.decodeTo(
    Schema.String,
    SchemaTransformation.transform({ decode: (s) => toUtc(s) ?? s, encode: (s) => s })
  )
)

/** A timestamp in a response: ISO 8601 UTC with microseconds and Z, formatted by the database. */
export const Timestamp = Schema.String.annotate({
  description: "ISO 8601 UTC timestamp with microseconds, e.g. 2026-11-22T09:15:03.123456Z",
  format: "date-time",
  examples: ["2026-11-22T09:15:03.123456Z"]
})
