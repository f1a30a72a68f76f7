/**
 * The schema's tenant rule (docs/development.md "libs/persistence"): every tenant
 * table has `school_id` in its primary key, in every unique constraint or
 * unique index, and in every foreign key to another tenant table, so the
 * database itself refuses a link across schools. Read from the catalog, so a
 * new migration that breaks the rule fails here.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { TestDatabase } from "../support/TestDatabase.ts"

/** Tables that route a credential to its school: global by design (plus `schools` itself). */
const globalTables = new Set(["schools", "login_emails", "api_key_prefixes", "session_tokens"])

const PgErrorFields = Schema.decodeUnknownSync(Schema.Struct({ code: Schema.String, detail: Schema.String }))

interface TableRow {
  readonly table_name: string
}
interface KeyRow {
  readonly table_name: string
  readonly name: string
  readonly kind: string
  readonly has_school_id: boolean
}
interface ForeignKeyRow {
  readonly table_name: string
  readonly name: string
  readonly referenced: string
  readonly pairs_school_id: boolean
}

/** Every breach of the tenant rule in the public schema, one line each. */
const tenantRuleViolations = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const tenantTables = (yield* sql<TableRow>`
    SELECT c.table_name
    FROM information_schema.columns c
    JOIN information_schema.tables t USING (table_schema, table_name)
    WHERE c.table_schema = 'public' AND c.column_name = 'school_id' AND t.table_type = 'BASE TABLE'
    ORDER BY c.table_name
  `).map((row) => row.table_name).filter((name) => !globalTables.has(name))
  // Not vacuous: the core tables are there.
  for (const name of ["employees", "groups", "students", "enrollments", "payments", "api_keys"]) {
    assert.include(tenantTables, name)
  }

  // Primary keys, unique constraints and unique indexes (partial ones too).
  const keys = yield* sql<KeyRow>`
    SELECT rel.relname AS table_name, idx.relname AS name,
           CASE WHEN i.indisprimary THEN 'primary key' ELSE 'unique index' END AS kind,
           EXISTS (
             SELECT 1 FROM unnest(i.indkey) AS k(attnum)
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
             WHERE a.attname = 'school_id'
           ) AS has_school_id
    FROM pg_index i
    JOIN pg_class rel ON rel.oid = i.indrelid
    JOIN pg_class idx ON idx.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = rel.relnamespace
    WHERE n.nspname = 'public' AND i.indisunique AND rel.relname IN ${sql.in(tenantTables)}
    ORDER BY 1, 2
  `
  const withPrimaryKey = new Set(keys.filter((key) => key.kind === "primary key").map((key) => key.table_name))

  // Foreign keys into a tenant table, from any table: school_id must be
  // one of the pairs, matched to the referenced table's school_id.
  const foreignKeys = yield* sql<ForeignKeyRow>`
    SELECT rel.relname AS table_name, con.conname AS name, ref.relname AS referenced,
           EXISTS (
             SELECT 1 FROM unnest(con.conkey, con.confkey) AS p(attnum, refnum)
             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = p.attnum
             JOIN pg_attribute r ON r.attrelid = con.confrelid AND r.attnum = p.refnum
             WHERE a.attname = 'school_id' AND r.attname = 'school_id'
           ) AS pairs_school_id
    FROM pg_constraint con
    JOIN pg_class rel ON rel.oid = con.conrelid
    JOIN pg_class ref ON ref.oid = con.confrelid
    JOIN pg_namespace n ON n.oid = rel.relnamespace
    WHERE n.nspname = 'public' AND con.contype = 'f' AND ref.relname IN ${sql.in(tenantTables)}
    ORDER BY 1, 2
  `

  const violations = [
    ...tenantTables.filter((name) => !withPrimaryKey.has(name)).map((name) => `${name}: no primary key`),
    ...keys.filter((key) => !key.has_school_id).map((key) =>
      `${key.table_name}: ${key.kind} ${key.name} lacks school_id`
    ),
    ...foreignKeys.filter((fk) => !fk.pairs_school_id).map((fk) =>
      `${fk.table_name}: foreign key ${fk.name} to ${fk.referenced} lacks school_id`
    )
  ]
  return violations
})

layer(TestDatabase.layer, { excludeTestServices: true })("schema", (it) => {
  it.effect("every tenant table keys, uniques and links by school_id", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* tenantRuleViolations, [])
    }))

  it.effect("the check sees a table that breaks the rule", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // Created and rolled back in one transaction.
      const seen = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`CREATE TABLE bad_parent (school_id integer NOT NULL, id integer PRIMARY KEY)`
        yield* sql`CREATE TABLE bad_child (
          school_id integer NOT NULL, id integer, parent_id integer REFERENCES bad_parent (id),
          PRIMARY KEY (school_id, id))`
        const violations = yield* tenantRuleViolations
        return yield* Effect.fail({ _tag: "Rollback" as const, violations })
      })).pipe(Effect.flip, Effect.map((error) => error._tag === "Rollback" ? error.violations : []))
      assert.deepStrictEqual(seen, [
        "bad_parent: primary key bad_parent_pkey lacks school_id",
        "bad_child: foreign key bad_child_parent_id_fkey to bad_parent lacks school_id"
      ])
      const [left] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_class WHERE relname = 'bad_parent'`
      assert.strictEqual(left?.n, 0)
    }))

  it.effect("the database refuses to enroll a student of school A into a group of school B", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [a, b] = yield* sql<{ id: number }>`
        INSERT INTO schools (name, plan) VALUES ('A', 'pro'), ('B', 'pro') RETURNING id
      `
      assert.isDefined(a)
      assert.isDefined(b)
      const [filialA] = yield* sql<{ id: number }>`
        INSERT INTO filials (school_id, name) VALUES (${a.id}, 'A main') RETURNING id
      `
      const [filialB] = yield* sql<{ id: number }>`
        INSERT INTO filials (school_id, name) VALUES (${b.id}, 'B main') RETURNING id
      `
      assert.isDefined(filialA)
      assert.isDefined(filialB)
      const [student] = yield* sql<{ id: number }>`
        INSERT INTO students (school_id, fio, filial_id) VALUES (${a.id}, 'Student of A', ${filialA.id}) RETURNING id
      `
      const [group] = yield* sql<{ id: number }>`
        INSERT INTO groups (school_id, name, filial_id, capacity) VALUES (${b.id}, 'Group of B', ${filialB.id}, 10)
        RETURNING id
      `
      assert.isDefined(student)
      assert.isDefined(group)

      // Whichever school the row claims, one of its two links crosses schools.
      for (const schoolId of [a.id, b.id]) {
        const error = yield* Effect.flip(sql`
          INSERT INTO enrollments (school_id, student_id, group_id) VALUES (${schoolId}, ${student.id}, ${group.id})
        `)
        assert.strictEqual(error.reason._tag, "ConstraintError")
        // 23503 foreign_key_violation, on a key that pairs school_id.
        const pgError = PgErrorFields(error.reason.cause)
        assert.strictEqual(pgError.code, "23503")
        assert.match(pgError.detail, /^Key \(school_id, (student_id|group_id)\)=/)
      }
      const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM enrollments`
      assert.strictEqual(count?.n, 0)
    }))
})
