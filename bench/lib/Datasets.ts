/**
 * The bench data sets, loaded once per run with set-based SQL
 * (`generate_series`, no per-row round trips): one school per size, each on
 * the `pro` plan, with filials, groups, students and read keys. The content is
 * deterministic (fixed instants, hashes of the row number), so two runs
 * measure the same data.
 *
 * - Students: 5% have the legacy last-modified placeholder (NULL); the others
 *   were modified at a pseudo-random instant in the year before `BASE`
 *   (uncorrelated with the id), so `updated_since = BASE - 3.65 days` matches
 *   about 1% of the school at any size.
 * - Enrollments (when asked): three students in four have one or two active
 *   groups, and one in ten an ended enrollment as well.
 * - Keys: many read keys per school. Requests rotate over them, so no key
 *   comes near its plan's budget (pro: 600 per 60 s) however fast the API
 *   answers: the rate limiter runs on every request but never says 429.
 */
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { ApiKey } from "@school/domain"
import type { BenchDatabase } from "./Database.ts"
import { benchError } from "./Processes.ts"

export interface DatasetSpec {
  readonly name: string
  readonly students: number
  readonly enrollments: boolean
}

export interface Dataset {
  readonly spec: DatasetSpec
  readonly schoolId: number
  /** Whole `svc_…` keys, read scope. */
  readonly keys: ReadonlyArray<string>
  /** Students with at least one active group (up to 1000), for the card. */
  readonly cardStudentIds: ReadonlyArray<number>
  /** An `updated_since` value matching about 1% of the students. */
  readonly updatedSince: string
  readonly loadSeconds: number
}

/** The instant the data set is built around (fixed: runs are comparable). */
export const BASE = "2026-06-01T00:00:00Z"
const UPDATED_SINCE = "2026-05-28T08:24:00Z" // BASE - 3.65 days
const FILIALS = 5
const GROUPS = 50
/** Requests per key per minute stay under 120 (the smallest budget) up to ~8 000 req/s per target. */
export const KEYS_PER_SCHOOL = 4096

const describe = (error: unknown) => error instanceof Error ? error.message : String(error)

const issueKeys = (db: BenchDatabase, schoolId: number, count: number) =>
  Effect.gen(function*() {
    const keys = Array.from({ length: count }, () => ApiKey.generateApiKey((n) => randomBytes(n)))
    const prefixes = keys.map((key) => key.prefix).join(",")
    const hashes = keys.map((key) => createHash("sha256").update(key.secret).digest("hex")).join(",")
    yield* db.sql`
      WITH k AS (
        INSERT INTO api_keys (school_id, name, prefix, secret_hash, scope)
        SELECT ${schoolId}, 'bench ' || prefix, prefix, decode(hash, 'hex'), 'read'
        FROM unnest(string_to_array(${prefixes}, ','), string_to_array(${hashes}, ',')) AS t(prefix, hash)
        RETURNING school_id, prefix
      )
      INSERT INTO api_key_prefixes (prefix, school_id) SELECT prefix, school_id FROM k`
    return keys.map(ApiKey.formatApiKey)
  })

export const load = (db: BenchDatabase, spec: DatasetSpec) =>
  Effect.gen(function*() {
    const started = Date.now()
    const sql = db.sql
    const [school] = yield* sql<{ id: number }>`
      INSERT INTO schools (name, plan) VALUES (${`bench ${spec.name}`}, 'pro') RETURNING id`
    if (school === undefined) return yield* benchError("no school id")
    const schoolId = school.id
    yield* sql`
      INSERT INTO filials (school_id, name, address)
      SELECT ${schoolId}, 'Filial ' || f, 'Street ' || f FROM generate_series(1, ${FILIALS}) f`
    yield* sql`
      INSERT INTO groups (school_id, name, filial_id, capacity)
      SELECT ${schoolId}, 'Group ' || g, fl.ids[1 + g % ${FILIALS}], 100000
      FROM generate_series(1, ${GROUPS}) g,
           (SELECT array_agg(id ORDER BY id) AS ids FROM filials WHERE school_id = ${schoolId}) fl`
    // One statement. Triggers stay on: the schema's own (row counts and day
    // counts for meta.total, foreign keys) must see the rows as they would any insert.
    yield* sql`
      INSERT INTO students (school_id, fio, phone, email, filial_id, balance_kopecks, created_at, updated_at)
      SELECT ${schoolId}, 'Student ' || i, '+7900' || lpad(i::text, 7, '0'), 'student' || i || '@example.test',
             fl.ids[1 + i % ${FILIALS}], (i % 1000) * 100,
             ${BASE}::timestamptz - make_interval(days => 366 + i % 700),
             CASE WHEN i % 20 = 0 THEN NULL
                  ELSE ${BASE}::timestamptz - make_interval(secs => (hashint4(i) & 2147483647) % 31536000) END
      FROM generate_series(1, ${spec.students}) i,
           (SELECT array_agg(id ORDER BY id) AS ids FROM filials WHERE school_id = ${schoolId}) fl`
    if (spec.enrollments) {
      yield* sql`
        INSERT INTO enrollments (school_id, student_id, group_id, enrolled_at, ended_at)
        SELECT s.school_id, s.id, gr.ids[1 + (s.id + e.k * 17) % ${GROUPS}],
               ${BASE}::timestamptz - make_interval(days => 30 + (s.id + e.k) % 300),
               CASE WHEN e.k = 2 THEN ${BASE}::timestamptz - make_interval(days => 10) END
        FROM students s
        CROSS JOIN (SELECT array_agg(id ORDER BY id) AS ids FROM groups WHERE school_id = ${schoolId}) gr
        JOIN LATERAL (
          SELECT k FROM generate_series(0, 2) k
          WHERE (k = 0 AND s.id % 4 <> 0) OR (k = 1 AND s.id % 4 <> 0 AND s.id % 3 = 0) OR (k = 2 AND s.id % 10 = 0)
        ) e ON true
        WHERE s.school_id = ${schoolId}`
      yield* sql`
        UPDATE groups g SET enrolled_count = c.n
        FROM (SELECT group_id, count(*)::int AS n FROM enrollments
              WHERE school_id = ${schoolId} AND ended_at IS NULL GROUP BY group_id) c
        WHERE g.school_id = ${schoolId} AND g.id = c.group_id`
    }
    const cardStudentIds = spec.enrollments
      ? (yield* sql<{ id: number }>`
          SELECT DISTINCT student_id AS id FROM enrollments
          WHERE school_id = ${schoolId} AND ended_at IS NULL ORDER BY student_id LIMIT 1000`).map((row) => row.id)
      : []
    const keys = yield* issueKeys(db, schoolId, KEYS_PER_SCHOOL)
    return {
      spec,
      schoolId,
      keys,
      cardStudentIds,
      updatedSince: UPDATED_SINCE,
      loadSeconds: (Date.now() - started) / 1000
    } satisfies Dataset
  }).pipe(Effect.mapError((error) => benchError(`loading data set ${spec.name} failed: ${describe(error)}`)))

/** Visibility map and statistics, as autovacuum would leave a settled table. */
export const settle = (db: BenchDatabase) =>
  db.sql.unsafe("VACUUM (ANALYZE)").pipe(
    Effect.mapError((error) => benchError(`VACUUM failed: ${describe(error)}`))
  )
