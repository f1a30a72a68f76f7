/**
 * The bounds of what the API takes (input the validators would accept but
 * the database rejects), as property tests over generated inputs at and
 * beyond each bound (docs/decisions.md "Lists", "GET /lessons", "Requests
 * and responses"):
 * - timestamps: offsets from -14:00 to +14:00, instants from
 *   0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z, checked on the
 *   instant, decoded to their UTC spelling with the microseconds kept;
 * - the lesson window: dates 0001-01-01..9999-12-31, its exclusive upper
 *   bound always a timestamp PostgreSQL reads;
 * - integers in paths and queries: plain decimals only.
 * The oracles are independent of the code under test (JS Date arithmetic).
 */
import { assert, describe, it } from "@effect/vitest"
import { Exit, Result, Schema } from "effect"
import { Ids, LessonWindow, Pagination, Timestamps } from "@school/domain"

const MIN_MS = Date.parse("0001-01-01T00:00:00Z")
const MAX_MS = Date.parse("9999-12-31T23:59:59.999Z")

const pad = (n: number, width: number) => String(n).padStart(width, "0")

/** Milliseconds of a wall-clock time read as UTC; Date.UTC would take years 0-99 as 1900-1999. */
const utcMillis = (year: number, month: number, day: number, hour: number, minute: number, second: number) => {
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, 0)
  return date.getTime()
}

const formatOffset = (minutes: number, compact: boolean) => {
  const abs = Math.abs(minutes)
  return `${minutes < 0 ? "-" : "+"}${pad(Math.trunc(abs / 60), 2)}${compact ? "" : ":"}${pad(abs % 60, 2)}`
}

const int = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

/** A wall-clock time written with an offset; years near both ends are drawn often. */
const LocalTime = Schema.Struct({
  year: Schema.Union([int(1, 9999), int(1, 3), int(9997, 9999)]),
  month: int(1, 12),
  day: int(1, 28),
  hour: int(0, 23),
  minute: int(0, 59),
  second: int(0, 59),
  fraction: Schema.String.check(Schema.isPattern(/^\d{1,6}$/)),
  /** Any two-digit offset: -99:59..+99:59, including every one PostgreSQL refuses (beyond ±15:59). */
  offset: Schema.Union([int(-(99 * 60 + 59), 99 * 60 + 59), int(-16 * 60, 16 * 60), int(-841, -839), int(839, 841)]),
  compact: Schema.Boolean,
  zulu: Schema.Boolean
})

const render = (t: typeof LocalTime.Type) =>
  `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}T${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}` +
  `.${t.fraction}${t.zulu ? "Z" : formatOffset(t.offset, t.compact)}`

describe("timestamps (updated_since, starts_at): one range, checked on the instant", () => {
  it.prop("accepted exactly when the offset is within ±14:00 and the instant within years 1..9999 in UTC", [LocalTime], ([t]) => {
    const text = render(t)
    const offset = t.zulu ? 0 : t.offset
    const ms = utcMillis(t.year, t.month, t.day, t.hour, t.minute, t.second) - offset * 60_000
    const expected = Math.abs(offset) <= 14 * 60 && ms >= MIN_MS && ms <= MAX_MS
    const decoded = Schema.decodeUnknownExit(Timestamps.IsoInstant)(text)
    assert.strictEqual(Exit.isSuccess(decoded), expected, text)
    assert.strictEqual(Timestamps.isIsoInstantWithOffset(text), expected, text)
    if (Exit.isSuccess(decoded)) {
      // The UTC spelling of the same instant, microseconds kept, a four-digit year.
      const iso = new Date(ms).toISOString()
      assert.strictEqual(decoded.value, `${iso.slice(0, 19)}.${t.fraction.padEnd(6, "0")}Z`, text)
    }
  })

  it("the examples of the probe are refused, their neighbours inside are accepted", () => {
    const refused = [
      "2026-01-01T00:00:00-23:59",
      "2026-01-01T00:00:00+16:00",
      "2026-01-01T00:00:00+14:01",
      "2026-01-01T00:00:00-1401",
      "9999-12-31T23:00:00-05:00",
      "0001-01-01T00:30:00+01:00",
      "0000-12-31T23:00:00-05:00"
    ]
    for (const s of refused) assert.isFalse(Timestamps.isIsoInstantWithOffset(s), s)
    const accepted: ReadonlyArray<readonly [string, string]> = [
      ["2026-01-01T00:00:00-14:00", "2026-01-01T14:00:00.000000Z"],
      ["2026-01-01T00:00:00+1400", "2025-12-31T10:00:00.000000Z"],
      ["9999-12-31T18:59:59.999999-05:00", "9999-12-31T23:59:59.999999Z"],
      ["0001-01-01T01:00:00+01:00", "0001-01-01T00:00:00.000000Z"],
      ["0001-01-01T00:00:00-05:00", "0001-01-01T05:00:00.000000Z"]
    ]
    for (const [s, utc] of accepted) assert.strictEqual(Schema.decodeUnknownSync(Timestamps.IsoInstant)(s), utc, s)
  })

  it.prop("never a crash; anything accepted is an instant Date reads, within the range", [Schema.String], ([s]) => {
    const utc = Timestamps.toUtc(s)
    if (utc === undefined) return
    const ms = Date.parse(s)
    assert.isFalse(Number.isNaN(ms), s)
    assert.isTrue(ms >= MIN_MS && ms <= MAX_MS + 1, s)
    assert.strictEqual(Date.parse(utc), ms, s)
  })
})

/** Day numbers (days since 1970-01-01) of 0001-01-01 and 9999-12-31, read by Date. */
const FIRST_DAY = Date.parse("0001-01-01T00:00:00Z") / 86_400_000
const LAST_DAY = Date.parse("9999-12-31T00:00:00Z") / 86_400_000

/** `YYYY-MM-DD` of a day number, by Date (years 0 and 10000 included, as `0000` and `10000`). */
const dateOf = (day: number) => {
  const iso = new Date(day * 86_400_000).toISOString()
  return iso.replace(/^\+0/, "").split("T")[0] ?? iso
}

/** Days around both ends of the accepted range, year 0 and year 10000 included. */
const EdgeDay = Schema.Union([int(FIRST_DAY - 400, FIRST_DAY + 400), int(LAST_DAY - 400, LAST_DAY + 400)])

describe("GET /lessons from/to: dates 0001-01-01..9999-12-31 (docs/decisions.md \"GET /lessons\")", () => {
  it.prop("IsoDate accepts a day exactly when it lies in years 1..9999", [EdgeDay], ([day]) => {
    const text = dateOf(day)
    assert.strictEqual(Schema.is(LessonWindow.IsoDate)(text), day >= FIRST_DAY && day <= LAST_DAY, text)
  })

  it.prop("a valid window's bounds are midnight UTC of from and of the day after to, as PostgreSQL reads them", [
    EdgeDay,
    int(0, 92)
  ], ([day, length]) => {
    const from = Math.max(FIRST_DAY, Math.min(LAST_DAY, day))
    const to = Math.min(LAST_DAY, from + length)
    const result = LessonWindow.validateWindow(dateOf(from), dateOf(to))
    assert.isTrue(Result.isSuccess(result))
    if (Result.isSuccess(result)) {
      assert.strictEqual(result.success.startsFrom, `${dateOf(from)}T00:00:00Z`)
      // Year 10000 is written 10000-01-01, never JavaScript's +010000-01-01.
      assert.strictEqual(result.success.startsBefore, `${dateOf(to + 1)}T00:00:00Z`)
      assert.match(result.success.startsBefore, /^\d{4,5}-\d{2}-\d{2}T00:00:00Z$/)
    }
  })

  it("the probe's windows: 9999-12-31..9999-12-31 is one day; year 0 is refused", () => {
    const last = LessonWindow.validateWindow("9999-12-31", "9999-12-31")
    assert.deepStrictEqual(
      Result.isSuccess(last) ? last.success : undefined,
      { startsFrom: "9999-12-31T00:00:00Z", startsBefore: "10000-01-01T00:00:00Z" }
    )
    assert.isFalse(Schema.is(LessonWindow.IsoDate)("0000-01-01"))
    assert.isFalse(Schema.is(LessonWindow.IsoDate)("0000-12-31"))
    assert.isTrue(Schema.is(LessonWindow.IsoDate)("0001-01-01"))
    assert.isFalse(Schema.is(LessonWindow.IsoDate)("2023-02-29"))
    assert.isTrue(Schema.is(LessonWindow.IsoDate)("2024-02-29"))
  })
})

/** Every integer of a path or a query, decoded as the API decodes it (any safe integer, no range). */
const AnyInt = Ids.DecimalIntFromString(Schema.Int)

/** Spellings of numbers: signs, leading zeros, fractions, exponents, hex, spaces around. */
const Spelling = Schema.Struct({
  sign: Schema.Literals(["", "", "", "+", "-"]),
  zeros: Schema.Literals(["", "", "", "0", "00"]),
  digits: Schema.String.check(Schema.isPattern(/^[0-9]{1,12}$/)),
  fraction: Schema.Literals(["", "", "", ".", ".0", ".5"]),
  exponent: Schema.Literals(["", "", "", "e1", "E+2", "e-1"]),
  prefix: Schema.Literals(["", "", "", "0x", " ", "\t"]),
  suffix: Schema.Literals(["", "", "", " ", "n", "%20"])
})

describe("integers in paths and queries: plain decimals only (docs/decisions.md \"Requests and responses\")", () => {
  it.prop("every string accepted is the canonical decimal of its value", [Schema.String], ([s]) => {
    const decoded = Schema.decodeUnknownExit(AnyInt)(s)
    if (Exit.isSuccess(decoded)) assert.strictEqual(String(decoded.value), s)
  })

  it.prop("generated spellings: accepted exactly when canonical, and then to that number", [Spelling], ([p]) => {
    const s = `${p.prefix}${p.sign}${p.zeros}${p.digits}${p.fraction}${p.exponent}${p.suffix}`
    const canonical = /^(?:0|-?[1-9][0-9]*)$/.test(s) && String(Number(s)) === s
    const decoded = Schema.decodeUnknownExit(AnyInt)(s)
    assert.strictEqual(Exit.isSuccess(decoded), canonical, JSON.stringify(s))
    if (Exit.isSuccess(decoded)) assert.strictEqual(decoded.value, Number(s))
  })

  it.prop("every canonical decimal in range is accepted: ids, page, per_page", [
    int(1, Ids.MAX_ID),
    int(1, Pagination.MAX_PAGE),
    int(1, Pagination.MAX_PER_PAGE)
  ], ([id, page, perPage]) => {
    assert.strictEqual(Schema.decodeUnknownSync(Ids.StudentIdFromPath)(String(id)), id)
    assert.strictEqual(Schema.decodeUnknownSync(Pagination.Page)(String(page)), page)
    assert.strictEqual(Schema.decodeUnknownSync(Pagination.PerPage)(String(perPage)), perPage)
  })

  it.prop("out of range, the canonical decimal is still refused", [int(-1_000_000, 0), int(Ids.MAX_ID + 1, Number.MAX_SAFE_INTEGER)], ([low, high]) => {
    for (const n of [low, high]) assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Ids.StudentIdFromPath)(String(n))), String(n))
    assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Pagination.PerPage)(String(Pagination.MAX_PER_PAGE + 1))))
  })

  it("the probe's spellings are refused", () => {
    for (const s of ["1e3", "+5", "5.0", "007", "1.0", "1e1", " 5", "5 ", "0x10", "", "-0", "1_000", "\u0665", "Infinity", "NaN"]) {
      assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Ids.StudentIdFromPath)(s)), JSON.stringify(s))
      assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Pagination.PerPage)(s)), JSON.stringify(s))
      assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(Pagination.Page)(s)), JSON.stringify(s))
    }
  })
})
