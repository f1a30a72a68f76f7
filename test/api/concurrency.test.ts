/**
 * Concurrency with real parallel HTTP requests against a listening server:
 * 50 identical POST /leads with one Idempotency-Key at once
 * create one lead and one lead.created event, and every answer is the stored
 * 201 or 409 idempotency_in_progress; N parallel enrollments of different
 * students into a group with k free places give exactly k successes and N-k
 * group_full, never more than capacity; one student enrolled by parallel
 * requests with different keys is enrolled once. IDEMPOTENCY_WAIT is the
 * default 2 s; the server's pool has 10 connections, as in production.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Enrollments, Leads } from "@school/domain"
import { dataOf, errorOf, type RawReply, type RawRequestError, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, funnel } from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly schoolA: number
  readonly filialA: number
  readonly writeKeys: ReadonlyArray<string>
  readonly students: ReadonlyArray<number>
}>()("test/api/concurrency/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const a = yield* Fixtures.school("pro", "School A")
      yield* funnel(a.schoolId, "Main", true, [["Incoming", 10], ["Won", 20]])
      const writeKeys: Array<string> = []
      for (let i = 0; i < 3; i++) writeKeys.push(yield* Fixtures.key(a.schoolId, { scope: "write" }))
      return World.of({
        schoolA: a.schoolId,
        filialA: a.filialId,
        writeKeys,
        students: yield* Fixtures.students(a.schoolId, a.filialId, 40, "Student")
      })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

/** Sends all at once (real sockets, real concurrency) and collects the replies. */
const all = (requests: ReadonlyArray<Effect.Effect<RawReply, RawRequestError>>) =>
  Effect.all(requests, { concurrency: "unbounded" })

const groupCounts = Effect.fnUntraced(function*(schoolId: number, groupId: number) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ capacity: number; enrolled_count: number; active: number; events: number }>`
    SELECT g.capacity, g.enrolled_count,
           (SELECT count(*)::int FROM enrollments e
            WHERE e.school_id = g.school_id AND e.group_id = g.id AND e.ended_at IS NULL) AS active,
           (SELECT count(*)::int FROM outbox_events o
            WHERE o.school_id = g.school_id AND o.event = 'group.enrolled'
              AND (o.payload->>'group_id')::int = g.id) AS events
    FROM groups g WHERE g.school_id = ${schoolId} AND g.id = ${groupId}`
  return rows[0]!
}, Effect.orDie)

layer(Env, { excludeTestServices: true })("concurrency", (it) => {
  describe("one Idempotency-Key, 50 requests at once", () => {
    it.effect("one lead, one lead.created; every answer the stored 201 (byte-identical) or 409", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { raw } = yield* TestServer
        const leads = yield* count("leads", world.schoolA)
        const events = yield* count("outbox_events", world.schoolA)
        const key = `burst-${Math.random()}`
        const replies = yield* all(Array.from({ length: 50 }, (_, i) =>
          raw.post(`${V1}/leads`, {
            // The three API keys of the school share the key's scope.
            key: world.writeKeys[i % 3]!,
            idempotencyKey: key,
            body: { phone: "+7 999 000-00-01", name: `Caller ${i}` }
          })))
        const created = replies.filter((r) => r.status === 201)
        const inProgress = replies.filter((r) => r.status === 409)
        assert.strictEqual(created.length + inProgress.length, 50, replies.map((r) => `${r.status} ${r.text}`).join("\n"))
        for (const reply of inProgress) {
          const error = errorOf(reply)
          assert.strictEqual(error.code, "idempotency_in_progress")
          assert.isUndefined(error.fields)
        }
        assert.isAtLeast(created.length, 1)
        // Exactly one ran the operation; the others replayed its bytes.
        assert.strictEqual(created.filter((r) => r.headers.get("idempotent-replayed") === null).length, 1)
        for (const reply of created) assert.strictEqual(Buffer.compare(reply.bytes, created[0]!.bytes), 0)
        assert.strictEqual(yield* count("leads", world.schoolA), leads + 1)
        assert.strictEqual(yield* count("outbox_events", world.schoolA), events + 1)
        const lead = dataOf(Leads.Lead, created[0]!)
        assert.match(lead.name, /^Caller \d+$/)
      }), { timeout: 60_000 })

    it.effect("50 different keys at once: 50 leads, 50 events, no 409", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { raw } = yield* TestServer
        const leads = yield* count("leads", world.schoolA)
        const replies = yield* all(Array.from({ length: 50 }, (_, i) =>
          raw.post(`${V1}/leads`, { key: world.writeKeys[0]!, idempotencyKey: `many-${i}-${Math.random()}`, body: { phone: "12345" } })))
        assert.deepStrictEqual([...new Set(replies.map((r) => r.status))], [201])
        assert.strictEqual(new Set(replies.map((r) => dataOf(Leads.Lead, r).id)).size, 50)
        assert.strictEqual(yield* count("leads", world.schoolA), leads + 50)
      }), { timeout: 60_000 })
  })

  describe("capacity (N parallel enrollments into k free places)", () => {
    for (const [capacity, taken, students] of [[5, 0, 30], [8, 3, 35], [1, 0, 20]] as const) {
      const free = capacity - taken
      it.effect(`capacity ${capacity}, ${taken} taken, ${students} at once: exactly ${free} enrolled, ${students - free} group_full`, () =>
        Effect.gen(function*() {
          const world = yield* World
          const { raw } = yield* TestServer
          const group = yield* Fixtures.group(world.schoolA, world.filialA, `Race ${capacity}/${taken}`, capacity)
          const pool = world.students.slice(0, taken + students)
          for (const student of pool.slice(0, taken)) yield* Fixtures.enroll(world.schoolA, student, group)
          const racers = pool.slice(taken)
          const replies = yield* all(racers.map((student, i) =>
            raw.post(`${V1}/students/${student}/groups`, {
              key: world.writeKeys[i % 3]!,
              idempotencyKey: `race-${group}-${student}`,
              body: { group_id: group }
            })))
          const ok = replies.filter((r) => r.status === 201)
          const full = replies.filter((r) => r.status === 409)
          assert.strictEqual(ok.length, free, replies.map((r) => `${r.status} ${r.text}`).join("\n"))
          assert.strictEqual(full.length, students - free)
          for (const reply of full) assert.strictEqual(errorOf(reply).code, "group_full")
          const enrolled = ok.map((r) => dataOf(Enrollments.Enrollment, r))
          assert.strictEqual(new Set(enrolled.map((e) => e.student_id)).size, free)
          const counts = yield* groupCounts(world.schoolA, group)
          assert.deepStrictEqual(counts, { capacity, enrolled_count: capacity, active: capacity, events: free })
        }), { timeout: 60_000 })
    }

    it.effect("one student, one group, 10 requests with different keys at once: enrolled once, the rest already_enrolled", () =>
      Effect.gen(function*() {
        const world = yield* World
        const { raw } = yield* TestServer
        const group = yield* Fixtures.group(world.schoolA, world.filialA, "Same student", 10)
        const student = world.students[39]!
        const replies = yield* all(Array.from({ length: 10 }, (_, i) =>
          raw.post(`${V1}/students/${student}/groups`, {
            key: world.writeKeys[0]!,
            idempotencyKey: `same-${group}-${i}`,
            body: { group_id: group }
          })))
        assert.strictEqual(replies.filter((r) => r.status === 201).length, 1, replies.map((r) => r.text).join("\n"))
        for (const reply of replies.filter((r) => r.status !== 201)) {
          assert.strictEqual(reply.status, 422)
          assert.strictEqual(errorOf(reply).code, "already_enrolled")
        }
        const counts = yield* groupCounts(world.schoolA, group)
        assert.deepStrictEqual(counts, { capacity: 10, enrolled_count: 1, active: 1, events: 1 })
      }), { timeout: 60_000 })
  })
})
