/**
 * Idempotency of the write endpoints against a real database over a real
 * socket (docs/integrators.md "Writing"; docs/decisions.md "Idempotency"):
 * the header's absence and format, byte-identical replays, the scope
 * (school, key, method + path) shared by every key of a school, 24-hour
 * expiry, the wait and 409 while a first attempt runs (a real blocked
 * request, not a simulation), take-over of a stale claim, a rolled-back
 * attempt (5xx) that leaves no lead, no event and no record, and the purge.
 * IDEMPOTENCY_WAIT is 400 ms in this file.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Fiber, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Enrollments, Leads } from "@school/domain"
import { IdempotencyPurge, IdempotencyStore } from "@school/persistence/IdempotencyStore"
import { dataOf, expectError, type RawReply, type RawRequest, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, funnel } from "../support/Fixtures.ts"
import * as Logs from "../support/Logs.ts"
import { holdLock, waitForBlockedSession } from "../support/Locks.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const WAIT_MS = 400

class World extends Context.Service<World, {
  readonly schoolA: number
  readonly schoolB: number
  readonly writeKey: string
  readonly writeKey2: string
  readonly readKey: string
  readonly keyB: string
  readonly students: ReadonlyArray<number>
  readonly groupId: number
}>()("test/api/idempotency/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const a = yield* Fixtures.school("pro", "School A")
      const b = yield* Fixtures.school("pro", "School B")
      yield* funnel(a.schoolId, "Main", true, [["Incoming", 10]])
      yield* funnel(b.schoolId, "Main", true, [["Incoming", 10]])
      const students = yield* Fixtures.students(a.schoolId, a.filialId, 4, "Student")
      const groupId = yield* Fixtures.group(a.schoolId, a.filialId, "Chess", 50)
      return World.of({
        schoolA: a.schoolId,
        schoolB: b.schoolId,
        writeKey: yield* Fixtures.key(a.schoolId, { scope: "write" }),
        writeKey2: yield* Fixtures.key(a.schoolId, { scope: "write" }),
        readKey: yield* Fixtures.key(a.schoolId, { scope: "read" }),
        keyB: yield* Fixtures.key(b.schoolId, { scope: "write" }),
        students,
        groupId
      })
    })
  )
}

const Env = World.layer.pipe(
  Layer.provideMerge(TestServer.layer({ settings: { IDEMPOTENCY_WAIT: `${WAIT_MS}ms` } })),
  Layer.provideMerge(TestDatabase.layer)
)

let n = 0
const freshKey = () => `idem-${++n}-${Math.random().toString(36).slice(2)}`

const post = (path: string, options: Omit<RawRequest, "method">) =>
  Effect.flatMap(TestServer, (server) => server.raw.post(`${V1}${path}`, options))

const sameBytes = (a: RawReply, b: RawReply) => assert.strictEqual(Buffer.compare(a.bytes, b.bytes), 0, `${a.text}\n!=\n${b.text}`)

const leadCount = Effect.flatMap(World, (world) => count("leads", world.schoolA))
const eventCount = Effect.flatMap(World, (world) => count("outbox_events", world.schoolA))

layer(Env, { excludeTestServices: true })("idempotency", (it) => {
  describe("the header", () => {
    it.effect("absent: 422 missing_idempotency_key with fields['Idempotency-Key'] on every write; nothing runs", () =>
      Effect.gen(function*() {
        const world = yield* World
        const before = yield* Effect.all([
          leadCount,
          count("enrollments", world.schoolA),
          count("demo_lessons", world.schoolA),
          count("idempotency_keys", world.schoolA)
        ])
        const writes: ReadonlyArray<readonly [string, unknown]> = [
          ["/leads", { phone: "12345" }],
          ["/demo-lessons", { user_id: world.students[0]!, group_id: world.groupId }],
          [`/students/${world.students[0]!}/groups`, { group_id: world.groupId }]
        ]
        for (const [path, body] of writes) {
          const error = expectError(yield* post(path, { key: world.writeKey, body }), 422, "missing_idempotency_key")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["Idempotency-Key"])
          // Before validation: an invalid body without the header is still missing_idempotency_key.
          expectError(yield* post(path, { key: world.writeKey, body: "{oops" }), 422, "missing_idempotency_key")
        }
        const after = yield* Effect.all([
          leadCount,
          count("enrollments", world.schoolA),
          count("demo_lessons", world.schoolA),
          count("idempotency_keys", world.schoolA)
        ])
        assert.deepStrictEqual(after, before)
      }))

    it.effect("malformed (empty, 256 characters, not printable ASCII): 422 validation_failed on the header; nothing stored", () =>
      Effect.gen(function*() {
        const world = yield* World
        const records = yield* count("idempotency_keys", world.schoolA)
        const leads = yield* leadCount
        // UTF-8 bytes on the wire (as a client sending "ключ" would), a Latin-1 byte, a tab.
        const utf8 = Buffer.from("ключ", "utf8").toString("latin1")
        for (const bad of ["", "k".repeat(256), utf8, "caf\u00e9", "tab\there"]) {
          const error = expectError(
            yield* post("/leads", { key: world.writeKey, idempotencyKey: bad, body: { phone: "12345" } }),
            422,
            "validation_failed"
          )
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["Idempotency-Key"], JSON.stringify(bad))
        }
        assert.strictEqual(yield* count("idempotency_keys", world.schoolA), records)
        assert.strictEqual(yield* leadCount, leads)
      }))

    it.effect("255 printable ASCII characters, spaces inside included, are a key", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = ("a b~!" + freshKey()).padEnd(255, "z")
        const reply = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(reply.status, 201, reply.text)
      }))
  })

  describe("replay", () => {
    it.effect("the same key again: the stored status and byte-identical body, Idempotent-Replayed: true, nothing runs again", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        const leads = yield* leadCount
        const events = yield* eventCount
        const first = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345", name: "First" } })
        assert.strictEqual(first.status, 201)
        assert.isNull(first.headers.get("idempotent-replayed"))
        // Even with another body: the stored result of the first execution is returned.
        for (const body of [{ phone: "12345", name: "First" }, { phone: "99999", name: "Other" }]) {
          const again = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body })
          assert.strictEqual(again.status, 201)
          assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
          assert.strictEqual(again.headers.get("content-type"), "application/json; charset=utf-8")
          sameBytes(again, first)
        }
        assert.strictEqual(yield* leadCount, leads + 1)
        assert.strictEqual(yield* eventCount, events + 1)
      }))

    it.effect("the operation's 4xx is stored and replayed too (validation_failed)", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        const first = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12" } })
        expectError(first, 422, "validation_failed")
        const fixed = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(fixed.status, 422)
        assert.strictEqual(fixed.headers.get("idempotent-replayed"), "true")
        sameBytes(fixed, first)
      }))

    it.effect("a stored group_full is replayed even after a place frees up", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const filial = yield* sql<{ id: number }>`SELECT id FROM filials WHERE school_id = ${world.schoolA} LIMIT 1`
        const group = yield* Fixtures.group(world.schoolA, filial[0]!.id, "Full", 0)
        const key = freshKey()
        const path = `/students/${world.students[0]!}/groups`
        const first = yield* post(path, { key: world.writeKey, idempotencyKey: key, body: { group_id: group } })
        expectError(first, 409, "group_full")
        yield* sql`UPDATE groups SET capacity = 5 WHERE school_id = ${world.schoolA} AND id = ${group}`
        const again = yield* post(path, { key: world.writeKey, idempotencyKey: key, body: { group_id: group } })
        assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
        sameBytes(again, first)
        // A fresh key runs the operation.
        const fresh = yield* post(path, { key: world.writeKey, idempotencyKey: freshKey(), body: { group_id: group } })
        assert.strictEqual(fresh.status, 201, fresh.text)
      }))

    it.effect("auth, scope and header errors are not stored: the same key still runs once they are fixed", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        expectError(yield* post("/leads", { key: world.readKey, idempotencyKey: key, body: { phone: "12345" } }), 403, "insufficient_scope")
        expectError(yield* post("/leads", { idempotencyKey: key, body: { phone: "12345" } }), 401, "unauthorized")
        const reply = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(reply.status, 201)
        assert.isNull(reply.headers.get("idempotent-replayed"))
      }))
  })

  describe("scope: (school, key, method + path), 24 hours (docs/decisions.md \"Idempotency\")", () => {
    it.effect("the same key on /students/5/groups and /students/6/groups is two operations", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        const [s1, s2] = [world.students[1]!, world.students[2]!]
        const one = yield* post(`/students/${s1}/groups`, { key: world.writeKey, idempotencyKey: key, body: { group_id: world.groupId } })
        const two = yield* post(`/students/${s2}/groups`, { key: world.writeKey, idempotencyKey: key, body: { group_id: world.groupId } })
        assert.strictEqual(one.status, 201, one.text)
        assert.strictEqual(two.status, 201, two.text)
        assert.isNull(two.headers.get("idempotent-replayed"))
        const a = dataOf(Enrollments.Enrollment, one)
        const b = dataOf(Enrollments.Enrollment, two)
        assert.deepStrictEqual([a.student_id, b.student_id], [s1, s2])
        assert.notStrictEqual(a.id, b.id)
      }))

    it.effect("the path as sent names the operation: /students/05/groups is not /students/5/groups", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        const student = world.students[3]!
        const padded = yield* post(`/students/0${student}/groups`, { key: world.writeKey, idempotencyKey: key, body: { group_id: world.groupId } })
        const plain = yield* post(`/students/${student}/groups`, { key: world.writeKey, idempotencyKey: key, body: { group_id: world.groupId } })
        // 05 is not a plain decimal (docs/decisions.md "Requests and responses"): the operation's answer is a 422 on id…
        assert.deepStrictEqual(Object.keys(expectError(padded, 422, "validation_failed").fields ?? {}), ["id"])
        // …stored under POST /students/05/groups. Not a replay of it: /students/5/groups is another operation, and ran.
        assert.strictEqual(plain.status, 201, plain.text)
        assert.isNull(plain.headers.get("idempotent-replayed"))
        const again = yield* post(`/students/0${student}/groups`, { key: world.writeKey, idempotencyKey: key, body: { group_id: world.groupId } })
        assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
        sameBytes(again, padded)
      }))

    it.effect("the same key on /leads and /demo-lessons is two operations", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        const lead = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        const demo = yield* post("/demo-lessons", {
          key: world.writeKey,
          idempotencyKey: key,
          body: { user_id: world.students[0]!, group_id: world.groupId }
        })
        assert.deepStrictEqual([lead.status, demo.status], [201, 201])
      }))

    it.effect("two API keys of one school share the scope; another school's same key is its own", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        const first = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        const second = yield* post("/leads", { key: world.writeKey2, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(second.headers.get("idempotent-replayed"), "true")
        sameBytes(second, first)
        const leadsB = yield* count("leads", world.schoolB)
        const other = yield* post("/leads", { key: world.keyB, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(other.status, 201)
        assert.isNull(other.headers.get("idempotent-replayed"))
        assert.notStrictEqual(dataOf(Leads.Lead, other).id, dataOf(Leads.Lead, first).id)
        assert.strictEqual(yield* count("leads", world.schoolB), leadsB + 1)
      }))

    it.effect("a record older than 24 hours is ignored: the key runs again, and the new result is what replays", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const key = freshKey()
        const first = dataOf(Leads.Lead, yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } }))
        yield* sql`UPDATE idempotency_keys SET claimed_at = now() - interval '24 hours 1 second'
                   WHERE school_id = ${world.schoolA} AND key = ${key}`
        const rerun = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(rerun.status, 201)
        assert.isNull(rerun.headers.get("idempotent-replayed"))
        const second = dataOf(Leads.Lead, rerun)
        assert.notStrictEqual(second.id, first.id)
        const replay = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
        sameBytes(replay, rerun)
        // 23 hours 59 minutes old still replays.
        yield* sql`UPDATE idempotency_keys SET claimed_at = now() - interval '23 hours 59 minutes'
                   WHERE school_id = ${world.schoolA} AND key = ${key}`
        const still = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(still.headers.get("idempotent-replayed"), "true")
        sameBytes(still, rerun)
      }))
  })

  describe("a first attempt still running (IDEMPOTENCY_WAIT, 60 s: docs/decisions.md \"Idempotency\")", () => {
    it.effect("a repeat waits IDEMPOTENCY_WAIT, then 409 idempotency_in_progress without fields; the first then completes and replays", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        const leads = yield* leadCount
        const release = yield* Deferred.make<void>()
        const lock = yield* holdLock("leads", release)
        const first = yield* Effect.forkChild(post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } }))
        yield* waitForBlockedSession(200)
        const started = Date.now()
        const repeat = yield* post("/leads", { key: world.writeKey2, idempotencyKey: key, body: { phone: "12345" } })
        const waited = Date.now() - started
        const error = expectError(repeat, 409, "idempotency_in_progress")
        assert.isUndefined(error.fields)
        assert.isNull(repeat.headers.get("idempotent-replayed"))
        assert.isAtLeast(waited, WAIT_MS - 20)
        assert.isBelow(waited, WAIT_MS + 1500)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(lock)
        const done = yield* Fiber.join(first)
        assert.strictEqual(done.status, 201, done.text)
        const replay = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
        sameBytes(replay, done)
        assert.strictEqual(yield* leadCount, leads + 1)
      }))

    it.effect("a repeat that arrives while the first runs gets its result if it finishes within the wait", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        const release = yield* Deferred.make<void>()
        const lock = yield* holdLock("leads", release)
        const first = yield* Effect.forkChild(post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } }))
        yield* waitForBlockedSession(200)
        const repeat = yield* Effect.forkChild(post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } }))
        yield* Effect.sleep(Duration.millis(WAIT_MS / 4))
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(lock)
        const [a, b] = [yield* Fiber.join(first), yield* Fiber.join(repeat)]
        assert.deepStrictEqual([a.status, b.status], [201, 201])
        assert.strictEqual(b.headers.get("idempotent-replayed"), "true")
        sameBytes(a, b)
      }))

    it.effect("a client that goes away after its key is claimed: the write still completes and is stored for its retry", () =>
      Effect.gen(function*() {
        const world = yield* World
        const key = freshKey()
        const leads = yield* leadCount
        const release = yield* Deferred.make<void>()
        const lock = yield* holdLock("leads", release)
        const abort = new AbortController()
        const gone = post("/leads", {
          key: world.writeKey,
          idempotencyKey: key,
          body: { phone: "12345", name: "Gone" },
          signal: abort.signal
        }).pipe(Effect.match({ onSuccess: () => "answered", onFailure: () => "aborted" }))
        const first = yield* Effect.forkChild(gone)
        yield* waitForBlockedSession(200)
        abort.abort()
        assert.strictEqual(yield* Fiber.join(first), "aborted")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(lock)
        // The retry finds the stored result (after waiting for it, if the write is still finishing).
        const retry = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345", name: "Gone" } })
        assert.strictEqual(retry.status, 201, retry.text)
        assert.strictEqual(retry.headers.get("idempotent-replayed"), "true")
        assert.strictEqual(dataOf(Leads.Lead, retry).name, "Gone")
        assert.strictEqual(yield* leadCount, leads + 1)
      }))

    it.effect("a claim younger than 60 s with nobody behind it (a crashed attempt) holds the key: 409 after the wait", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const key = freshKey()
        yield* sql`INSERT INTO idempotency_keys (school_id, key, operation, token, claimed_at)
                   VALUES (${world.schoolA}, ${key}, ${"POST " + V1 + "/leads"}, gen_random_uuid(), now() - interval '59 seconds')`
        const leads = yield* leadCount
        expectError(yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } }), 409, "idempotency_in_progress")
        assert.strictEqual(yield* leadCount, leads)
      }))

    it.effect("a claim older than 60 s is taken over: the request runs", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const key = freshKey()
        yield* sql`INSERT INTO idempotency_keys (school_id, key, operation, token, claimed_at)
                   VALUES (${world.schoolA}, ${key}, ${"POST " + V1 + "/leads"}, gen_random_uuid(), now() - interval '61 seconds')`
        const leads = yield* leadCount
        const started = Date.now()
        const reply = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(reply.status, 201, reply.text)
        assert.isBelow(Date.now() - started, WAIT_MS, "no waiting on a stale claim")
        assert.strictEqual(yield* leadCount, leads + 1)
      }))

    it.effect("an attempt whose claim was taken over meanwhile rolls back: one lead, one event, the first gets 409", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const key = freshKey()
        const leads = yield* leadCount
        const events = yield* eventCount
        const release = yield* Deferred.make<void>()
        const lock = yield* holdLock("leads", release)
        const first = yield* Effect.forkChild(post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "11111" } }))
        yield* waitForBlockedSession(200)
        // The first attempt is now "older than 60 s".
        yield* sql`UPDATE idempotency_keys SET claimed_at = now() - interval '61 seconds'
                   WHERE school_id = ${world.schoolA} AND key = ${key}`
        const second = yield* Effect.forkChild(post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "22222" } }))
        // Both are blocked on the lock now.
        for (let i = 0; i < 200; i++) {
          const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
                                                 WHERE datname = current_database() AND wait_event_type = 'Lock'`
          if ((rows[0]?.n ?? 0) >= 2) break
          yield* Effect.sleep(Duration.millis(10))
        }
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(lock)
        const [a, b] = [yield* Fiber.join(first), yield* Fiber.join(second)]
        expectError(a, 409, "idempotency_in_progress")
        assert.strictEqual(b.status, 201, b.text)
        assert.strictEqual(dataOf(Leads.Lead, b).phone, "22222")
        assert.strictEqual(yield* leadCount, leads + 1)
        assert.strictEqual(yield* eventCount, events + 1)
      }))
  })

  describe("a failed attempt (5xx) is not stored (docs/decisions.md \"Idempotency\")", () => {
    it.effect("the operation, its event and the record commit together: a failure at the last step leaves none; a retry runs", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const key = freshKey()
        const leads = yield* leadCount
        const events = yield* eventCount
        // Storing the response (the last statement of the transaction) now fails.
        yield* sql`ALTER TABLE idempotency_keys ADD CONSTRAINT test_refuse_completion CHECK (completed_at IS NULL) NOT VALID`
        const server = yield* TestServer
        const [failed, logged] = yield* server.expectingLogs(
          post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        ).pipe(Effect.ensuring(sql`ALTER TABLE idempotency_keys DROP CONSTRAINT test_refuse_completion`.pipe(Effect.orDie)))
        const error = expectError(failed, 500, "internal_error")
        // The cause is in the server's log, not in the response.
        assert.deepStrictEqual(logged.map((entry) => [entry.level, entry.message]), [["Error", "request failed"]])
        assert.include(logged[0]?.cause, "test_refuse_completion")
        assert.isUndefined(error.fields)
        assert.notMatch(failed.text, /constraint|SQL|test_refuse/i)
        assert.strictEqual(yield* leadCount, leads)
        assert.strictEqual(yield* eventCount, events)
        const records = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_keys
                                                  WHERE school_id = ${world.schoolA} AND key = ${key}`
        assert.strictEqual(records[0]?.n, 0)
        const retry = yield* post("/leads", { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(retry.status, 201, retry.text)
        assert.isNull(retry.headers.get("idempotent-replayed"))
        assert.strictEqual(yield* leadCount, leads + 1)
        assert.strictEqual(yield* eventCount, events + 1)
      }))
  })

  describe("purge (docs/decisions.md \"Idempotency\": records older than 24 hours are purged)", () => {
    const Row = Schema.Struct({ key: Schema.String })
    it.effect("the store deletes records older than 24 hours and keeps the rest", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const prefix = freshKey()
        yield* sql`INSERT INTO idempotency_keys (school_id, key, operation, token, claimed_at)
                   SELECT ${world.schoolB}, ${prefix} || '-' || g, 'POST /x', gen_random_uuid(),
                          now() - CASE WHEN g % 2 = 0 THEN interval '25 hours' ELSE interval '23 hours' END
                   FROM generate_series(1, 10) g`
        const store = yield* IdempotencyStore
        const purged = yield* store.purge
        assert.isAtLeast(purged, 5)
        const left = yield* sql`SELECT key FROM idempotency_keys WHERE key LIKE ${prefix + "-%"} ORDER BY key`
        const keys = left.map((row) => Schema.decodeUnknownSync(Row)(row).key)
        assert.deepStrictEqual(keys, [1, 3, 5, 7, 9].map((g) => `${prefix}-${g}`).sort())
      }).pipe(Effect.provide(IdempotencyStore.layer)))

    it.effect("the API process's purge job runs at start", () =>
      Effect.gen(function*() {
        const world = yield* World
        const sql = yield* SqlClient.SqlClient
        const key = freshKey()
        yield* sql`INSERT INTO idempotency_keys (school_id, key, operation, token, claimed_at)
                   VALUES (${world.schoolB}, ${key}, 'POST /x', gen_random_uuid(), now() - interval '2 days')`
        const [, logged] = yield* Logs.collect(Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(IdempotencyPurge)
          for (let i = 0; i < 100; i++) {
            const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = ${key}`
            if (rows[0]?.n === 0) return
            yield* Effect.sleep(Duration.millis(20))
          }
          assert.fail("the purge job did not delete the expired record")
        })))
        const purged = logged.filter((entry) => entry.message.startsWith("purged expired idempotency records"))
        assert.deepStrictEqual(purged.map((entry) => entry.level), ["Info"], JSON.stringify(logged))
      }))
  })
})
