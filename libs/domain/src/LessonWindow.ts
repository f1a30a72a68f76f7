/**
 * The GET /lessons window (spec 4.2, 8; docs/decisions.md "GET /lessons"):
 * `from` and `to` are inclusive calendar dates compared on the lesson's
 * start in UTC; `to` before `from` is invalid_window, `to - from` over 92
 * days is window_too_large.
 */
import { Result, Schema } from "effect"
import { InvalidWindow, WindowTooLarge } from "./Errors.ts"

export const MAX_WINDOW_DAYS = 92
const DAY_MS = 86_400_000

const isCalendarDate = (s: string): boolean => {
  const ms = Date.parse(`${s}T00:00:00Z`)
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === s
}

/** A `YYYY-MM-DD` string naming a real calendar day. */
export const IsoDate = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/, { message: "Expected a date as YYYY-MM-DD" }),
  Schema.makeFilter(isCalendarDate, { message: "Expected a real calendar date" })
)

export interface LessonWindow {
  /** Inclusive lower bound of `starts_at`, as an ISO instant. */
  readonly startsFrom: string
  /** Exclusive upper bound of `starts_at`: the day after `to`. */
  readonly startsBefore: string
}

const dayNumber = (date: string): number => Date.parse(`${date}T00:00:00Z`) / DAY_MS

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
    startsFrom: `${from}T00:00:00Z`,
    startsBefore: new Date((dayNumber(to) + 1) * DAY_MS).toISOString()
  })
}
