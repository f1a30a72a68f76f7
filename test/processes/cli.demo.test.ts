/**
 * `demo seed` (docs/operations.md "Operator CLI"), run as a real process: the JSON it
 * prints, and that the school holds what the contract promises, consistently.
 */
import { assert, layer } from "@effect/vitest"
import * as ApiKey from "@school/domain/ApiKey"
import { verifyPassword } from "@school/runtime/Passwords"
import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { entryPoints, run } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const Demo = Schema.Struct({
  school_id: Schema.Int,
  owner: Schema.Struct({ email: Schema.String, password: Schema.String }),
  keys: Schema.Struct({ read: Schema.String, write: Schema.String })
})
const decodeDemo = Schema.decodeUnknownSync(Schema.fromJsonString(Demo))

const seed = Effect.gen(function*() {
  const database = yield* TestDatabase
  const result = yield* run(entryPoints.cli, ["demo", "seed", "--json"], { DATABASE_URL: database.url })
  assert.strictEqual(result.code, 0, result.stderr)
  const raw: unknown = JSON.parse(result.stdout)
  return { demo: decodeDemo(result.stdout), raw }
})

layer(TestDatabase.layer, { excludeTestServices: true })("cli demo seed", (it) => {
  it.effect("prints the school, owner login and keys; the school has what is promised", () =>
    Effect.gen(function*() {
      const { demo, raw } = yield* seed
      assert.deepStrictEqual(Object.keys(Object(raw)).sort(), ["keys", "owner", "school_id"])
      const school = demo.school_id
      const sql = yield* SqlClient.SqlClient

      const [row] = yield* sql<{ plan: string | null }>`SELECT plan FROM schools WHERE id = ${school}`
      assert.strictEqual(row?.plan, "pro")

      // Owner login works with the printed password.
      const [owner] = yield* sql<{ role: string; password_hash: string }>`
        SELECT e.role, e.password_hash FROM login_emails l
        JOIN employees e ON e.school_id = l.school_id AND e.id = l.employee_id
        WHERE l.email = ${demo.owner.email} AND l.school_id = ${school}`
      assert.strictEqual(owner?.role, "owner")
      assert.isTrue(yield* verifyPassword(demo.owner.password, owner?.password_hash ?? ""))

      const [counts] = yield* sql<Record<string, number>>`
        SELECT
          (SELECT count(*)::int FROM filials WHERE school_id = ${school}) AS filials,
          (SELECT count(*)::int FROM subjects WHERE school_id = ${school}) AS subjects,
          (SELECT count(*)::int FROM programs WHERE school_id = ${school}) AS programs,
          (SELECT count(*)::int FROM levels WHERE school_id = ${school}) AS levels,
          (SELECT count(*)::int FROM employees WHERE school_id = ${school} AND role = 'teacher') AS teachers,
          (SELECT count(*)::int FROM groups WHERE school_id = ${school}) AS groups,
          (SELECT count(*)::int FROM groups WHERE school_id = ${school} AND enrolled_count < capacity) AS groups_with_room,
          (SELECT count(*)::int FROM students WHERE school_id = ${school}) AS students,
          (SELECT count(*)::int FROM students WHERE school_id = ${school} AND updated_at IS NULL) AS legacy,
          (SELECT count(*)::int FROM enrollments WHERE school_id = ${school} AND ended_at IS NULL) AS enrollments,
          (SELECT count(DISTINCT payment_type)::int FROM payments WHERE school_id = ${school}) AS payment_types,
          (SELECT count(*)::int FROM lessons WHERE school_id = ${school}
             AND starts_at BETWEEN now() - interval '31 days' AND now()) AS past_lessons,
          (SELECT count(*)::int FROM lessons WHERE school_id = ${school}
             AND starts_at BETWEEN now() AND now() + interval '8 days') AS next_lessons
      `
      assert.isDefined(counts)
      assert.isAtLeast(counts["filials"] ?? 0, 2)
      assert.isAtLeast(counts["subjects"] ?? 0, 1)
      assert.isAtLeast(counts["programs"] ?? 0, 1)
      assert.isAtLeast(counts["levels"] ?? 0, 1)
      assert.isAtLeast(counts["teachers"] ?? 0, 2)
      assert.isAtLeast(counts["groups"] ?? 0, 6)
      assert.isAtLeast(counts["groups_with_room"] ?? 0, 1)
      assert.isBelow(counts["groups_with_room"] ?? 0, counts["groups"] ?? 0)
      assert.isAtLeast(counts["students"] ?? 0, 200)
      assert.isAtLeast(counts["legacy"] ?? 0, 1)
      assert.isBelow(counts["legacy"] ?? 0, 20)
      assert.isAtLeast(counts["enrollments"] ?? 0, 1)
      assert.strictEqual(counts["payment_types"], 4)
      assert.isAtLeast(counts["past_lessons"] ?? 0, 1)
      assert.isAtLeast(counts["next_lessons"] ?? 0, 1)

      // enrolled_count = active enrollments, for every group.
      const drift = yield* sql`
        SELECT g.id FROM groups g
        WHERE g.school_id = ${school} AND g.enrolled_count <> (
          SELECT count(*) FROM enrollments e
          WHERE e.school_id = g.school_id AND e.group_id = g.id AND e.ended_at IS NULL)`
      assert.deepStrictEqual(drift, [])

      // balance = sum of payments, for every student; payments in whole kopecks > 0.
      const unbalanced = yield* sql`
        SELECT s.id FROM students s
        WHERE s.school_id = ${school} AND s.balance_kopecks <> (
          SELECT coalesce(sum(p.amount_kopecks), 0) FROM payments p
          WHERE p.school_id = s.school_id AND p.student_id = s.id)`
      assert.deepStrictEqual(unbalanced, [])
      const [paid] = yield* sql<{ total: string }>`
        SELECT sum(balance_kopecks)::text AS total FROM students WHERE school_id = ${school}`
      assert.isAbove(Number(paid?.total), 0)
    }))

  it.effect("keys: one read, one write, stored as SHA-256 of the secret only", () =>
    Effect.gen(function*() {
      const { demo } = yield* seed
      const sql = yield* SqlClient.SqlClient
      for (const [scope, key] of [["read", demo.keys.read], ["write", demo.keys.write]] as const) {
        const parsed = ApiKey.parseApiKey(key)
        assert.isTrue(Option.isSome(parsed), key)
        if (Option.isNone(parsed)) continue
        const rows = yield* sql<{ scope: string; secret_hash: Uint8Array; revoked_at: Date | null; row: string }>`
          SELECT k.scope, k.secret_hash, k.revoked_at, k::text AS row
          FROM api_key_prefixes p JOIN api_keys k ON k.school_id = p.school_id AND k.prefix = p.prefix
          WHERE p.prefix = ${parsed.value.prefix} AND p.school_id = ${demo.school_id}`
        const row = rows[0]
        assert.strictEqual(rows.length, 1)
        if (row === undefined) continue
        assert.strictEqual(row.scope, scope)
        assert.isNull(row.revoked_at)
        assert.deepStrictEqual(
          Buffer.from(row.secret_hash),
          createHash("sha256").update(parsed.value.secret).digest()
        )
        // Neither the secret nor the whole key is anywhere in the row.
        assert.notInclude(row.row, parsed.value.secret)
        assert.notInclude(row.row, key)
      }
    }))

  it.effect("each call makes another school with its own owner", () =>
    Effect.gen(function*() {
      const [a, b] = yield* Effect.all([seed, seed], { concurrency: 2 })
      assert.notStrictEqual(a.demo.school_id, b.demo.school_id)
      assert.notStrictEqual(a.demo.owner.email, b.demo.owner.email)
      assert.notStrictEqual(a.demo.keys.read, b.demo.keys.read)
    }))
})
