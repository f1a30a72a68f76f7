/**
 * The row counts behind `meta.total` (migration 0300) stay equal to the real
 * count(*) of each school's students and payments: bulk inserts, concurrent
 * inserts from separate connections, deletes, and a rolled-back insert.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { totalOf } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const counts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ school_id: number; table_name: string; counted: number; actual: number }>`
    SELECT c.school_id, c.table_name, c.n::int AS counted,
           CASE c.table_name
             WHEN 'students' THEN (SELECT count(*)::int FROM students s WHERE s.school_id = c.school_id)
             ELSE (SELECT count(*)::int FROM payments p WHERE p.school_id = c.school_id)
           END AS actual
    FROM row_counts c ORDER BY c.school_id, c.table_name`
})

layer(TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer)), { excludeTestServices: true })("row counts", (it) => {
  it.effect("match count(*) through bulk, concurrent, deleted and rolled-back writes, and feed meta.total", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const a = yield* Fixtures.school("pro", "A")
      const b = yield* Fixtures.school("basic", "B")
      const ids = yield* Fixtures.students(a.schoolId, a.filialId, 500, "Bulk")
      yield* Fixtures.students(b.schoolId, b.filialId, 7, "Other")
      // 20 concurrent single-row inserts over the pool's connections.
      yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => i),
        (i) => sql`INSERT INTO students (school_id, fio, filial_id) VALUES (${a.schoolId}, ${`C ${i}`}, ${a.filialId})`,
        { concurrency: 5 }
      )
      yield* Fixtures.payment(a.schoolId, ids[0]!, a.filialId, 1_000, "card")
      yield* Fixtures.payment(a.schoolId, ids[1]!, a.filialId, 2_000, "cash")
      yield* sql`DELETE FROM students WHERE school_id = ${a.schoolId} AND id = ANY(${ids.slice(400, 450)})`
      // A rolled-back insert leaves the count alone.
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO students (school_id, fio, filial_id) VALUES (${a.schoolId}, 'Gone', ${a.filialId})`
        return yield* Effect.fail("rollback")
      })).pipe(Effect.ignore)

      const rows = yield* counts
      for (const row of rows) assert.strictEqual(row.counted, row.actual, JSON.stringify(row))
      const students = rows.find((r) => r.school_id === a.schoolId && r.table_name === "students")
      assert.strictEqual(students?.counted, 500 + 20 - 50)

      const server = yield* TestServer
      const api = yield* server.client(yield* Fixtures.key(a.schoolId, { scope: "read" }))
      const list = yield* api.students.list({ query: { per_page: 1, page: 3 } })
      assert.deepStrictEqual(list.meta, { page: 3, per_page: 1, total: 470 })
      const payments = yield* api.payments.list({ query: {} })
      assert.strictEqual(totalOf(payments.meta), 2)
      // A school with no counted rows yet has a total of 0, not an error.
      const empty = yield* Fixtures.school("pro", "Empty")
      const none = yield* (yield* server.client(yield* Fixtures.key(empty.schoolId, { scope: "read" }))).payments.list({ query: {} })
      assert.deepStrictEqual(none, { data: [], meta: { page: 1, per_page: 20, total: 0 } })
    }))
})
