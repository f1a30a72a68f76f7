/**
 * Small, explicit test data written with SQL: a school with a plan, a filial,
 * students, groups, enrollments, payments, lessons, funnels with statuses and
 * API keys in any state (revoked, expired). Each helper returns the ids it
 * created. And what the write tests read back: a school's outbox rows and
 * row counts.
 */
import * as Ids from "@school/domain/Ids"
import { issueApiKey } from "@school/persistence/Schools"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const one = <A>(rows: ReadonlyArray<A>): A => {
  const row = rows[0]
  if (row === undefined) throw new Error("expected one row")
  return row
}

export const school = Effect.fnUntraced(function*(plan: string | null, name: string) {
  const sql = yield* SqlClient.SqlClient
  const { id } = one(yield* sql<{ id: number }>`INSERT INTO schools (name, plan) VALUES (${name}, ${plan}) RETURNING id`)
  const filial = one(
    yield* sql<{ id: number }>`INSERT INTO filials (school_id, name, address) VALUES (${id}, 'Main', 'Main street 1') RETURNING id`
  )
  return { schoolId: id, filialId: filial.id }
}, Effect.orDie)

export interface KeyOptions {
  readonly scope?: "read" | "write"
  readonly revoked?: boolean
  readonly expired?: boolean
}

/** Issues a key (as the operator does) in the given state and returns the whole `svc_…` string. */
export const key = Effect.fnUntraced(function*(schoolId: number, options: KeyOptions = {}) {
  const sql = yield* SqlClient.SqlClient
  const issued = yield* issueApiKey(Ids.SchoolId.make(schoolId), {
    name: "test",
    scope: options.scope ?? "read",
    expiresAt: options.expired === true ? new Date(Date.now() - 60_000).toISOString() : null
  })
  if (options.revoked === true) {
    yield* sql`UPDATE api_keys SET revoked_at = now() WHERE school_id = ${schoolId} AND id = ${issued.id}`
  }
  return issued.key
}, Effect.orDie)

/** `count` students named `<prefix> n`, balance n*100 kopecks; returns their ids in order. */
export const students = Effect.fnUntraced(function*(schoolId: number, filialId: number, count: number, prefix: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: number }>`
    INSERT INTO students (school_id, fio, phone, email, filial_id, balance_kopecks)
    SELECT ${schoolId}, ${prefix} || ' ' || g, '+7 900 000-00-' || lpad(g::text, 2, '0'), 's' || g || '@example.com',
           ${filialId}, g * 100
    FROM generate_series(1, ${count}) g ORDER BY g
    RETURNING id`
  return rows.map((row) => row.id)
}, Effect.orDie)

export const group = Effect.fnUntraced(function*(schoolId: number, filialId: number, name: string, capacity: number) {
  const sql = yield* SqlClient.SqlClient
  return one(yield* sql<{ id: number }>`
    INSERT INTO groups (school_id, name, filial_id, capacity) VALUES (${schoolId}, ${name}, ${filialId}, ${capacity})
    RETURNING id`).id
}, Effect.orDie)

export const enroll = Effect.fnUntraced(function*(schoolId: number, studentId: number, groupId: number) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE groups SET enrolled_count = enrolled_count + 1 WHERE school_id = ${schoolId} AND id = ${groupId}`
  return one(yield* sql<{ id: number }>`
    INSERT INTO enrollments (school_id, student_id, group_id) VALUES (${schoolId}, ${studentId}, ${groupId})
    RETURNING id`).id
}, Effect.orDie)

export const lesson = Effect.fnUntraced(function*(schoolId: number, groupId: number, filialId: number, startsAt: string) {
  const sql = yield* SqlClient.SqlClient
  return one(yield* sql<{ id: number }>`
    INSERT INTO lessons (school_id, group_id, filial_id, starts_at, ends_at, topic)
    VALUES (${schoolId}, ${groupId}, ${filialId}, ${startsAt}::timestamptz, ${startsAt}::timestamptz + interval '90 minutes', 'Topic')
    RETURNING id`).id
}, Effect.orDie)

export const payment = Effect.fnUntraced(function*(
  schoolId: number,
  studentId: number,
  filialId: number,
  amountKopecks: number,
  paymentType: string
) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE students SET balance_kopecks = balance_kopecks + ${amountKopecks}
             WHERE school_id = ${schoolId} AND id = ${studentId}`
  return one(yield* sql<{ id: number }>`
    INSERT INTO payments (school_id, student_id, amount_kopecks, payment_type, filial_id)
    VALUES (${schoolId}, ${studentId}, ${amountKopecks}, ${paymentType}, ${filialId}) RETURNING id`).id
}, Effect.orDie)

/** A funnel with statuses (name, priority) in the given order; returns its id and the status ids in that order. */
export const funnel = Effect.fnUntraced(function*(
  schoolId: number,
  name: string,
  isMain: boolean,
  statuses: ReadonlyArray<readonly [name: string, priority: number]>
) {
  const sql = yield* SqlClient.SqlClient
  const { id } = one(
    yield* sql<{ id: number }>`INSERT INTO funnels (school_id, name, is_main) VALUES (${schoolId}, ${name}, ${isMain}) RETURNING id`
  )
  const statusIds: Array<number> = []
  for (const [statusName, priority] of statuses) {
    statusIds.push(one(yield* sql<{ id: number }>`
      INSERT INTO pipeline_statuses (school_id, funnel_id, name, priority)
      VALUES (${schoolId}, ${id}, ${statusName}, ${priority}) RETURNING id`).id)
  }
  return { funnelId: id, statusIds }
}, Effect.orDie)

export interface OutboxRow {
  readonly event: string
  readonly payload: string
  readonly created_at: string
}

/** The school's outbox rows in order, payload as the exact stored json text. */
export const outbox = Effect.fnUntraced(function*(schoolId: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<OutboxRow>`
    SELECT event, payload::text AS payload, api_ts(created_at) AS created_at
    FROM outbox_events WHERE school_id = ${schoolId} ORDER BY id`
}, Effect.orDie)

/** How many rows of `table` the school has. */
export const count = Effect.fnUntraced(function*(
  table: "leads" | "demo_lessons" | "enrollments" | "outbox_events" | "idempotency_keys",
  schoolId: number
) {
  const sql = yield* SqlClient.SqlClient
  return one(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE school_id = ${schoolId}`).n
}, Effect.orDie)

/** Every row of the limiter's tables with its version: equal snapshots mean nothing was written. */
export const limiterSnapshot = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ key_id: number; version: string }>`
    SELECT key_id, 'head ' || xmin::text || '/' || ctid::text AS version FROM rate_limits
    UNION ALL
    SELECT key_id, 'chunk ' || chunk || ' ' || xmin::text || '/' || ctid::text FROM rate_limit_slots
    ORDER BY 1, 2`.pipe(Effect.orDie)
})
