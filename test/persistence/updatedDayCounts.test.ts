/**
 * The day counts behind the page-number `updated_since` total (migration
 * 1500, libs/persistence/src/Paging.ts `updatedSinceTotal`, docs/decisions.md
 * "Cursor pagination"): whatever the
 * rows' last-modified times and whatever the instant asked, the total is
 * the count(*) of the matches, and the kept counts are the rows' days
 * counted afresh, with no day left at 0. Generated: last-modified times
 * around UTC midnights (on them, a microsecond either side, NULL), moved by
 * imports, by real changes and by deletes, and `since` values on and beside
 * them. Then concurrent writers from separate connections (each statement
 * moving two students out of two days, listed in either order; payments
 * beside them), the payments' total, and a TRUNCATE.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Ids } from "@school/domain"
import { Payments } from "@school/persistence/Payments"
import { Students } from "@school/persistence/Students"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const BASE_MS = Date.UTC(2026, 2, 10)
const DAY_MS = 86_400_000

/** An instant near one of five midnights: on it, a microsecond either side, or some minutes away; or NULL. */
const At = Schema.Struct({
  day: Schema.Int.check(Schema.isBetween({ minimum: -2, maximum: 2 })),
  minutes: Schema.Union([Schema.Literals([0]), Schema.Int.check(Schema.isBetween({ minimum: -1500, maximum: 1500 }))]),
  micro: Schema.Literals([-1, 0, 1])
})
const Instant = Schema.NullOr(At)

const text = (instant: typeof At.Type): string => {
  const ms = BASE_MS + instant.day * DAY_MS + instant.minutes * 60_000
  const micros = instant.micro === -1 ? 999_999 : instant.micro
  const at = new Date(instant.micro === -1 ? ms - 1 : ms).toISOString().slice(0, 19)
  return `${at}.${String(micros).padStart(6, "0")}Z`
}

const Case = Schema.Struct({
  initial: Schema.Array(Instant).check(Schema.isMaxLength(40)),
  /** Imports: row i (mod the rows) gets this instant. */
  imported: Schema.Array(Instant).check(Schema.isMaxLength(10)),
  /** Real changes: row i (mod the rows) is touched (its trigger moves it to now). */
  touched: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 39 }))).check(Schema.isMaxLength(5)),
  deleted: Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 39 }))).check(Schema.isMaxLength(8)),
  since: Schema.Array(At).check(Schema.isMinLength(1), Schema.isMaxLength(4))
})

const Total = Schema.Struct({ total: Schema.Number })
const decodeTotal = Schema.decodeUnknownEffect(Schema.Array(Total))
const Drift = Schema.Struct({ school_id: Schema.Number, table_name: Schema.String, day: Schema.String, kept: Schema.Number, actual: Schema.Number })
const decodeDrift = Schema.decodeUnknownEffect(Schema.Array(Drift))

/** The kept day counts of `schoolId` that differ from the rows counted afresh (none: in step), a day at 0 included. */
const drift = (schoolId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql`
      WITH actual AS (
        SELECT school_id, 'students' AS table_name, (updated_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n
        FROM students WHERE school_id = ${schoolId} AND updated_at IS NOT NULL GROUP BY 1, 2, 3
        UNION ALL
        SELECT school_id, 'payments', (updated_at AT TIME ZONE 'UTC')::date, count(*)
        FROM payments WHERE school_id = ${schoolId} GROUP BY 1, 2, 3
      ), kept AS (SELECT school_id, table_name, day, n FROM updated_day_counts WHERE school_id = ${schoolId})
      SELECT coalesce(k.school_id, a.school_id) AS school_id, coalesce(k.table_name, a.table_name) AS table_name,
             coalesce(k.day, a.day)::text AS day, coalesce(k.n, 0)::int AS kept, coalesce(a.n, 0)::int AS actual
      FROM kept k FULL JOIN actual a USING (school_id, table_name, day)
      WHERE k.n IS DISTINCT FROM a.n`.pipe(Effect.flatMap(decodeDrift), Effect.orDie)
  })

const totalOf = (schoolId: number, since: string, table: "students" | "payments" = "students") =>
  Effect.gen(function*() {
    const request = { page: { page: 1, perPage: 1 }, updatedSince: since }
    const result = table === "students"
      ? yield* (yield* Students).list(schoolId as Ids.SchoolId, request)
      : yield* (yield* Payments).list(schoolId as Ids.SchoolId, request)
    assert.strictEqual(result._tag, "Page")
    return result._tag === "Page" ? result.total : -1
  })

const matches = (schoolId: number, since: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT count(*)::int AS total FROM students
                            WHERE school_id = ${schoolId} AND updated_at >= ${since}::timestamptz`.pipe(
      Effect.flatMap(decodeTotal),
      Effect.orDie
    )
    return rows[0]?.total ?? -1
  })

layer(Layer.merge(Students.layer, Payments.layer).pipe(Layer.provideMerge(TestDatabase.layer)), { excludeTestServices: true })("updated_since day counts", (it) => {
  it.effect.prop(
    "the page-number total is the count of the matches, and the kept days are the rows' days, through imports, changes and deletes",
    [Case],
    ([c]) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { schoolId, filialId } = yield* Fixtures.school("pro", "Days")
        const ids = c.initial.length === 0 ? [] : (yield* sql<{ id: number }>`
          INSERT INTO students (school_id, fio, filial_id, updated_at)
          SELECT ${schoolId}, 'S ' || i, ${filialId}, nullif(u, '')::timestamptz
          FROM unnest(${c.initial.map((i) => (i === null ? "" : text(i)))}::text[]) WITH ORDINALITY AS t (u, i)
          RETURNING id`.pipe(Effect.orDie)).map((row) => row.id)
        if (ids.length > 0) {
          for (const [i, instant] of c.imported.entries()) {
            yield* sql`UPDATE students SET updated_at = ${instant === null ? null : text(instant)}::timestamptz
                       WHERE id = ${ids[i % ids.length]!}`.pipe(Effect.orDie)
          }
          const touched = c.touched.map((i) => ids[i % ids.length]!)
          if (touched.length > 0) {
            yield* sql`UPDATE students SET fio = fio || '.' WHERE id = ANY(${touched})`.pipe(Effect.orDie)
          }
          const deleted = c.deleted.map((i) => ids[i % ids.length]!)
          if (deleted.length > 0) yield* sql`DELETE FROM students WHERE id = ANY(${deleted})`.pipe(Effect.orDie)
        }
        assert.deepStrictEqual(yield* drift(schoolId), [])
        for (const since of c.since.map(text)) {
          assert.strictEqual(yield* totalOf(schoolId, since), yield* matches(schoolId, since), since)
        }
      }),
    { timeout: 120_000, arbitrary: { runs: 60 } }
  )

  it.effect("concurrent writers keep the counts exact, without deadlocks; payments are counted; TRUNCATE forgets", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { schoolId, filialId } = yield* Fixtures.school("pro", "Concurrent days")
      const ids = yield* Fixtures.students(schoolId, filialId, 80, "C")
      // Two old days, alternating: students 0, 2, 4… last modified on day A, 1, 3, 5… on day B.
      yield* sql`UPDATE students SET updated_at = CASE WHEN id % 2 = 0 THEN '2026-01-05T10:00:00Z'::timestamptz
                                                       ELSE '2026-01-07T10:00:00Z'::timestamptz END
                 WHERE school_id = ${schoolId}`
      // 40 statements of two students each, one from each day, listed in either order, 10 at a time on their own connections:
      // each moves both to today, so each takes the rows of both old days and of today.
      yield* Effect.forEach(
        Array.from({ length: 40 }, (_, i) => i),
        (i) => {
          const pair = i % 2 === 0 ? [ids[2 * i]!, ids[2 * i + 1]!] : [ids[2 * i + 1]!, ids[2 * i]!]
          return sql`UPDATE students SET fio = fio || '!' WHERE school_id = ${schoolId} AND id = ANY(${pair})`
        },
        { concurrency: 10 }
      )
      // Payments beside them, each moving its student (the balance) and adding a payment to today.
      yield* Effect.forEach(ids.slice(0, 20), (id) => Fixtures.payment(schoolId, id, filialId, 100, "cash"), { concurrency: 10 })
      assert.deepStrictEqual(yield* drift(schoolId), [])
      const today = yield* sql<{ day: string; n: number }>`
        SELECT day::text AS day, n::int AS n FROM updated_day_counts
        WHERE school_id = ${schoolId} AND table_name = 'students'`
      // Both old days are emptied and gone; every student is today's.
      assert.strictEqual(today.length, 1)
      assert.strictEqual(today[0]?.n, 80)
      assert.strictEqual(yield* totalOf(schoolId, "2026-01-06T00:00:00Z"), 80)
      assert.strictEqual(yield* totalOf(schoolId, "2026-01-06T00:00:00Z", "payments"), 20)
      assert.strictEqual(yield* totalOf(schoolId, "2999-01-01T00:00:00Z", "payments"), 0)

      yield* sql`TRUNCATE payments`
      const paymentDays = yield* sql`SELECT 1 FROM updated_day_counts WHERE table_name = 'payments'`
      assert.strictEqual(paymentDays.length, 0)
      assert.deepStrictEqual(yield* drift(schoolId), [])
    }))
})
