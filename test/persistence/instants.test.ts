/**
 * Every timestamp the API accepts reaches PostgreSQL in a form it reads
 * (docs/decisions.md "Lists"): the decoded `Timestamps.IsoInstant`
 * value cast to `timestamptz` never errors, and formatted back in UTC it is
 * the same instant to the microsecond. Generated instants cover both ends of
 * the range (years 1 and 9999) and every accepted offset. The bounds of a
 * GET /lessons window at the ends of its date range are read by PostgreSQL
 * too (the day after 9999-12-31 included).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { LessonWindow, Timestamps } from "@school/domain"
import { TestDatabase } from "../support/TestDatabase.ts"

const pad = (n: number, width: number) => String(n).padStart(width, "0")
const int = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

/** Wall-clock times with offsets, the years near both bounds drawn often; the test keeps the accepted ones. */
const Candidate = Schema.Struct({
  year: Schema.Union([int(1, 9999), int(1, 2), int(9998, 9999)]),
  month: int(1, 12),
  day: int(1, 28),
  hour: int(0, 23),
  minute: int(0, 59),
  second: int(0, 59),
  fraction: Schema.String.check(Schema.isPattern(/^\d{1,6}$/)),
  offset: Schema.Union([int(-14 * 60, 14 * 60), int(-16 * 60, 16 * 60)])
})

const render = (c: typeof Candidate.Type) => {
  const abs = Math.abs(c.offset)
  return `${pad(c.year, 4)}-${pad(c.month, 2)}-${pad(c.day, 2)}T${pad(c.hour, 2)}:${pad(c.minute, 2)}:${pad(c.second, 2)}` +
    `.${c.fraction}${c.offset < 0 ? "-" : "+"}${pad(Math.trunc(abs / 60), 2)}:${pad(abs % 60, 2)}`
}

const Formatted = Schema.Struct({ utc: Schema.String })
const decodeFormatted = Schema.decodeUnknownEffect(Schema.Array(Formatted))

layer(TestDatabase.layer, { excludeTestServices: true })("accepted instants in PostgreSQL", (it) => {
  const roundTrip = (text: string) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const decoded = Schema.decodeUnknownOption(Timestamps.IsoInstant)(text)
      if (decoded._tag === "None") return false
      const rows = yield* sql`
        SELECT to_char(${decoded.value}::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS utc
      `.pipe(Effect.flatMap(decodeFormatted), Effect.orDie)
      assert.strictEqual(rows[0]?.utc, decoded.value, text)
      return true
    })

  it.effect.prop(
    "every accepted value casts to timestamptz and formats back to the same instant, microseconds included",
    [Candidate],
    ([candidate]) => roundTrip(render(candidate)).pipe(Effect.asVoid),
    { timeout: 120_000, arbitrary: { runs: 300 } }
  )

  it.effect("the bounds themselves and the probe's neighbours round-trip", () =>
    Effect.gen(function*() {
      for (
        const text of [
          "0001-01-01T00:00:00Z",
          "0001-01-01T00:00:00-14:00",
          "9999-12-31T23:59:59.999999Z",
          "9999-12-31T09:59:59.999999-14:00",
          "2026-01-01T00:00:00+14:00",
          "2026-01-01T00:00:00.000001-1400"
        ]
      ) {
        assert.isTrue(yield* roundTrip(text), text)
      }
      // What the probe sent is refused before SQL (it used to reach it and fail there).
      for (const text of ["2026-01-01T00:00:00-23:59", "2026-01-01T00:00:00+16:00", "9999-12-31T23:00:00-05:00"]) {
        assert.isFalse(yield* roundTrip(text), text)
      }
    }))

  it.effect.prop(
    "the bounds of every valid window at the ends of the date range are timestamps PostgreSQL reads",
    [Schema.Union([int(0, 400), int(3_652_059 - 400, 3_652_059)]), int(0, 92)],
    ([offset, length]) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Day numbers counted from 0001-01-01 (0) to 9999-12-31 (3 652 058).
        const first = Date.parse("0001-01-01T00:00:00Z")
        const dateOf = (n: number) => new Date(first + n * 86_400_000).toISOString().slice(0, 10)
        const from = Math.min(offset, 3_652_058)
        const to = Math.min(from + length, 3_652_058)
        const window = LessonWindow.validateWindow(dateOf(from), dateOf(to))
        if (window._tag === "Failure") return assert.fail(`${dateOf(from)}..${dateOf(to)} refused`)
        const rows = yield* sql`
          SELECT (${window.success.startsBefore}::timestamptz - ${window.success.startsFrom}::timestamptz) = ${`${to - from + 1} days`}::interval AS ok
        `.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ ok: Schema.Boolean })))), Effect.orDie)
        assert.isTrue(rows[0]?.ok, `${dateOf(from)}..${dateOf(to)}`)
      }),
    { timeout: 120_000, arbitrary: { runs: 200 } }
  )
})
