/**
 * The GET /lessons window (docs/integrators.md "Reading"; docs/decisions.md "GET /lessons"):
 * `from` and `to` are inclusive calendar dates from 0001-01-01 to
 * 9999-12-31 compared on the lesson's start in UTC; `to` before `from` is
 * invalid_window, `to - from` over 92 days is window_too_large. The bounds
 * handed to SQL are written here, by integer arithmetic (no JS Date, whose
 * year 10000 is `+010000-…`): the exclusive upper bound after 9999-12-31
 * is `10000-01-01T00:00:00Z`, which PostgreSQL reads.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { InvalidWindow, WindowTooLarge } from "./Errors.ts"
import { civilFromDays, daysFromCivil } from "./Timestamps.ts"

export const MAX_WINDOW_DAYS = 92

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** The day number (days since 1970-01-01) of a `YYYY-MM-DD` naming a real day of years 1..9999; undefined otherwise. */
export const dayNumberOf = (s: string): number | undefined => {
  const m = DATE.exec(s)
  if (m === null) return undefined
  const year = Number(m[1])
  const month = Number(m[2])
  const day = Number(m[3])
  if (year < 1 || month < 1 || month > 12 || day < 1) return undefined
  const days = daysFromCivil(year, month, day)
  // A day past the month's end lands in the next month: compare the round trip.
  const back = civilFromDays(days)
  return back.year === year && back.month === month && back.day === day ? days : undefined
}

/** A `YYYY-MM-DD` string naming a real calendar day from 0001-01-01 to 9999-12-31 (year 0 does not exist in PostgreSQL). */
export const IsoDate = Schema.String.annotate({
  // On the base string, not a check: HttpApi documents a parameter's string without its checks.
  format: "date",
  examples: ["2026-11-22"]
}).check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/, { message: "Expected a date as YYYY-MM-DD" }),
  Schema.makeFilter((s: string) => dayNumberOf(s) !== undefined, {
    message: "Expected a real calendar date from 0001-01-01 to 9999-12-31"
  })
)

export interface LessonWindow {
  /** Inclusive lower bound of `starts_at`, as an ISO instant. */
  readonly startsFrom: string
  /** Exclusive upper bound of `starts_at`: the day after `to`. */
  readonly startsBefore: string
}

const dayNumber = (date: string): number => dayNumberOf(date) ?? Number.NaN

/** Midnight UTC opening a day, as PostgreSQL reads it (the year unpadded beyond 9999). */
const midnight = (days: number): string => {
  const { day, month, year } = civilFromDays(days)
  return `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}T00:00:00Z`
}

/** Days from `from` to `to` (negative when `to` is earlier). */
export const windowDays = (from: string, to: string): number => dayNumber(to) - dayNumber(from)

export const validateWindow = (
  from: string,
  to: string
): Result.Result<LessonWindow, InvalidWindow | WindowTooLarge> => {
  const days = windowDays(from, to)
  if (days < 0) {
    return Result.fail(new InvalidWindow({ message: "'to' is earlier than 'from'." }))
  }
  if (days > MAX_WINDOW_DAYS) {
    return Result.fail(
      new WindowTooLarge({ message: `The window from..to is ${days} days; at most ${MAX_WINDOW_DAYS} are allowed.` })
    )
  }
  return Result.succeed({
    startsFrom: midnight(dayNumber(from)),
    startsBefore: midnight(dayNumber(to) + 1)
  })
}
