/**
 * The public API's read side against a real database: every
 * endpoint's success shape, every error it can return (status, code,
 * fields), pagination edges, updated_since with offsets and the legacy
 * placeholder, the 92-day window, and tenant isolation on every endpoint.
 * Success bodies and declared errors go through the contract's client;
 * what the client cannot send (malformed queries, odd paths and methods) and
 * the envelope as sent go through the raw one.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Errors, Ids, Models } from "@school/domain"
import { expectError, failsWith, JSON_CONTENT_TYPE, pageOf, type RawReply, totalOf, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly schoolA: number
  readonly schoolB: number
  readonly readKey: string
  readonly writeKey: string
  readonly keyB: string
  readonly revokedKey: string
  readonly expiredKey: string
  readonly revokedExpiredKey: string
  readonly studentIds: ReadonlyArray<number>
  readonly legacyId: number
  readonly studentOfB: number
  readonly groupId: number
  readonly enrollmentId: number
  readonly lessonIds: { readonly first: number; readonly lastDay: number; readonly afterWindow: number }
}>()("test/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const a = yield* Fixtures.school("pro", "School A")
      const b = yield* Fixtures.school("basic", "School B")
      const studentIds = yield* Fixtures.students(a.schoolId, a.filialId, 45, "Student")
      const [studentOfB] = yield* Fixtures.students(b.schoolId, b.filialId, 3, "Other")
      const legacyId = studentIds[2]!
      yield* sql`UPDATE students SET updated_at = NULL WHERE school_id = ${a.schoolId} AND id = ${legacyId}`
      yield* sql`UPDATE students SET updated_at = '2026-01-10T12:00:00.123456Z'
                 WHERE school_id = ${a.schoolId} AND id <> ${legacyId}`
      yield* sql`UPDATE students SET updated_at = '2026-03-01T09:00:00.000001Z'
                 WHERE school_id = ${a.schoolId} AND id = ANY(${[studentIds[10]!, studentIds[11]!]})`
      const groupId = yield* Fixtures.group(a.schoolId, a.filialId, "Chess A1", 12)
      const groupOfB = yield* Fixtures.group(b.schoolId, b.filialId, "Other group", 5)
      const enrollmentId = yield* Fixtures.enroll(a.schoolId, studentIds[0]!, groupId)
      yield* Fixtures.payment(a.schoolId, studentIds[0]!, a.filialId, 150_050, "cash")
      yield* Fixtures.payment(b.schoolId, studentOfB!, b.filialId, 999, "card")
      const first = yield* Fixtures.lesson(a.schoolId, groupId, a.filialId, "2026-01-01T00:00:00Z")
      const lastDay = yield* Fixtures.lesson(a.schoolId, groupId, a.filialId, "2026-04-03T23:59:59Z")
      const afterWindow = yield* Fixtures.lesson(a.schoolId, groupId, a.filialId, "2026-04-04T00:00:00Z")
      yield* Fixtures.lesson(b.schoolId, groupOfB, b.filialId, "2026-01-02T10:00:00Z")
      yield* sql`INSERT INTO subjects (school_id, name) VALUES (${a.schoolId}, 'Chess'), (${b.schoolId}, 'Go')`
      yield* sql`INSERT INTO programs (school_id, name) VALUES (${a.schoolId}, 'Beginners'), (${b.schoolId}, 'Pros')`
      yield* sql`INSERT INTO levels (school_id, name) VALUES (${a.schoolId}, 'A1'), (${b.schoolId}, 'B2')`
      return World.of({
        schoolA: a.schoolId,
        schoolB: b.schoolId,
        readKey: yield* Fixtures.key(a.schoolId, { scope: "read" }),
        writeKey: yield* Fixtures.key(a.schoolId, { scope: "write" }),
        keyB: yield* Fixtures.key(b.schoolId, { scope: "write" }),
        revokedKey: yield* Fixtures.key(a.schoolId, { revoked: true }),
        expiredKey: yield* Fixtures.key(a.schoolId, { expired: true }),
        revokedExpiredKey: yield* Fixtures.key(a.schoolId, { revoked: true, expired: true }),
        studentIds,
        legacyId,
        studentOfB: studentOfB!,
        groupId,
        enrollmentId,
        lessonIds: { first, lastDay, afterWindow }
      })
    }).pipe(Effect.orDie)
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

/** GET `${V1}${path}` as bytes. */
const get = (path: string, key?: string) => Effect.flatMap(TestServer, (server) => server.raw.get(`${V1}${path}`, key))

/** The contract's client with this key. */
const client = (key: string) => Effect.flatMap(TestServer, (server) => server.client(key))

/** An error reply (status, JSON content type, code, message), with exactly these `fields` (`true`: whatever value), or none. */
const assertError = (reply: RawReply, status: number, code: string, fields?: Record<string, unknown>) => {
  const error = expectError(reply, status, code)
  if (fields === undefined) {
    assert.isUndefined(error.fields)
  } else {
    assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), Object.keys(fields).sort())
    for (const [name, expected] of Object.entries(fields)) {
      if (expected !== true) assert.deepStrictEqual(error.fields?.[name], expected)
    }
  }
}

/** The keys of each item of a list as sent. */
const itemKeys = (reply: RawReply): ReadonlyArray<ReadonlyArray<string>> =>
  Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)) }))(reply.json)
    .data.map((item) => Object.keys(item).sort())

const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

layer(Env, { excludeTestServices: true })("public API, read side", (it) => {
  describe("GET /students", () => {
    it.effect("lists students in id order with meta and the list item shape", () =>
      Effect.gen(function*() {
        const w = yield* World
        const res = yield* get("/students", w.readKey)
        assert.strictEqual(res.status, 200)
        assert.strictEqual(res.headers.get("content-type"), JSON_CONTENT_TYPE)
        // As sent: exactly the list item's fields, every item.
        const wire = pageOf(Models.StudentListItem, res)
        assert.deepStrictEqual(itemKeys(res)[0], [
          "active_groups", "balance_kopecks", "created_at", "email", "filial_id", "fio", "id", "phone", "updated_at"
        ])
        const api = yield* client(w.readKey)
        const page = yield* api.students.list({ query: {} })
        assert.deepStrictEqual(page, wire)
        assert.deepStrictEqual(page.meta, { page: 1, per_page: 20, total: 45 })
        assert.strictEqual(page.data.length, 20)
        assert.deepStrictEqual(page.data.map((s) => s.id), w.studentIds.slice(0, 20))
        const first = page.data[0]!
        assert.strictEqual(first.active_groups, null)
        assert.strictEqual(first.fio, "Student 1")
        assert.strictEqual(first.balance_kopecks, 100 + 150_050)
        assert.isTrue(Number.isInteger(first.balance_kopecks))
        assert.match(first.created_at, TS)
        assert.strictEqual(page.data[1]?.updated_at, "2026-01-10T12:00:00.123456Z")
        // The payment moved student 1's balance, so its last-modified time moved too (docs/decisions.md "Lists").
        assert.match(first.updated_at ?? "", TS)
        assert.isAbove(Date.parse(first.updated_at ?? ""), Date.parse("2026-03-01T09:00:00Z"))
      }))

    it.effect("pagination edges: per_page 1 and 100, the last page, a page past the end", () =>
      Effect.gen(function*() {
        const w = yield* World
        const api = yield* client(w.readKey)
        const one = yield* api.students.list({ query: { per_page: 1, page: 2 } })
        assert.deepStrictEqual(one.meta, { page: 2, per_page: 1, total: 45 })
        assert.deepStrictEqual(one.data.map((s) => s.id), [w.studentIds[1]])
        const hundred = yield* api.students.list({ query: { per_page: 100 } })
        assert.strictEqual(hundred.data.length, 45)
        const last = yield* api.students.list({ query: { per_page: 20, page: 3 } })
        assert.deepStrictEqual(last.data.map((s) => s.id), w.studentIds.slice(40))
        const past = yield* get("/students?per_page=20&page=4", w.readKey)
        assert.strictEqual(past.status, 200)
        assert.deepStrictEqual(past.json, { data: [], meta: { page: 4, per_page: 20, total: 45 } })
      }))

    it.effect("rejects per_page 101, per_page 0, page 0 and non-numbers with fields naming each", () =>
      Effect.gen(function*() {
        const w = yield* World
        assertError(yield* get("/students?per_page=101", w.readKey), 422, "validation_failed", { per_page: true })
        assertError(yield* get("/students?per_page=0", w.readKey), 422, "validation_failed", { per_page: true })
        assertError(yield* get("/students?page=0&per_page=abc", w.readKey), 422, "validation_failed", {
          page: true,
          per_page: true
        })
        assertError(yield* get("/students?page=1.5", w.readKey), 422, "validation_failed", { page: true })
      }))

    it.effect("updated_since with Z and +03:00 is >= the instant, and never returns legacy students", () =>
      Effect.gen(function*() {
        const w = yield* World
        const api = yield* client(w.readKey)
        const ids = (path: string) => Effect.map(get(path, w.readKey), (reply) => pageOf(Models.StudentListItem, reply).data.map((s) => s.id))
        const all = yield* api.students.list({ query: { updated_since: "2000-01-01T00:00:00.000000Z", per_page: 100 } })
        assert.strictEqual(totalOf(all.meta), 44)
        assert.isFalse(all.data.some((s) => s.id === w.legacyId))
        // Student 1 was modified by its payment (now); students 11 and 12 at 09:00:00.000001Z.
        const moved = [w.studentIds[0], w.studentIds[10], w.studentIds[11]]
        const exact = yield* api.students.list({ query: { updated_since: "2026-03-01T09:00:00.000001Z" } })
        assert.deepStrictEqual(exact.data.map((s) => s.id), moved)
        const afterByAMicro = yield* api.students.list({ query: { updated_since: "2026-03-01T09:00:00.000002Z" } })
        assert.deepStrictEqual(afterByAMicro.data.map((s) => s.id), [w.studentIds[0]])
        // As integrators write it: 12:00:00+03:00 is 09:00:00Z, the same students; 12:00:00+02:00 is an hour later.
        assert.deepStrictEqual(yield* ids(`/students?updated_since=2000-01-01T00:00:00Z&per_page=100`), all.data.map((s) => s.id))
        assert.deepStrictEqual(yield* ids(`/students?updated_since=${encodeURIComponent("2026-03-01T12:00:00+03:00")}`), moved)
        assert.deepStrictEqual(yield* ids(`/students?updated_since=${encodeURIComponent("2026-03-01T12:00:00+02:00")}`), [
          w.studentIds[0]
        ])
        // The legacy student is in the unfiltered list.
        const full = yield* api.students.list({ query: { per_page: 100 } })
        assert.isTrue(full.data.some((s) => s.id === w.legacyId && s.updated_at === null))
      }))

    it.effect("rejects updated_since without an offset, or not a date at all", () =>
      Effect.gen(function*() {
        const w = yield* World
        for (const value of ["2026-03-01T09:00:00", "2026-03-01", "yesterday", "2026-13-01T00:00:00Z", "0000-01-01T00:00:00Z"]) {
          assertError(yield* get(`/students?updated_since=${encodeURIComponent(value)}`, w.readKey), 422, "validation_failed", {
            updated_since: true
          })
        }
        // An unencoded '+' arrives as a space: a clear validation error, not a wrong result.
        assertError(yield* get("/students?updated_since=2026-03-01T12:00:00+03:00", w.readKey), 422, "validation_failed", {
          updated_since: true
        })
      }))
  })

  describe("GET /students/{id}", () => {
    it.effect("returns the card with active groups", () =>
      Effect.gen(function*() {
        const w = yield* World
        const res = yield* get(`/students/${w.studentIds[0]}`, w.readKey)
        assert.strictEqual(res.status, 200)
        const api = yield* client(w.readKey)
        const { data: card } = yield* api.students.get({ params: { id: Ids.StudentId.make(w.studentIds[0]!) } })
        assert.deepStrictEqual({ data: card }, Schema.decodeUnknownSync(Schema.Struct({ data: Models.StudentCard }))(res.json, {
          onExcessProperty: "error"
        }))
        assert.strictEqual(card.id, w.studentIds[0])
        assert.strictEqual(card.balance_kopecks, 150_150)
        assert.strictEqual(card.active_groups.length, 1)
        const [g] = card.active_groups
        assert.strictEqual(g?.group_id, w.groupId)
        assert.strictEqual(g?.group_name, "Chess A1")
        assert.strictEqual(g?.enrollment_id, w.enrollmentId)
        assert.isNumber(g?.filial_id)
        assert.match(g?.enrolled_at ?? "", TS)
        const none = yield* api.students.get({ params: { id: Ids.StudentId.make(w.studentIds[1]!) } })
        assert.deepStrictEqual(none.data.active_groups, [])
      }))

    it.effect("a missing student and another school's student are the same not_found", () =>
      Effect.gen(function*() {
        const w = yield* World
        const api = yield* client(w.readKey)
        const missing = yield* api.students.get({ params: { id: Ids.StudentId.make(2_147_483_647) } }).pipe(
          failsWith(Errors.NotFound)
        )
        assert.strictEqual(missing.message, "Student 2147483647 not found.")
        assert.isUndefined(missing.fields)
        const foreign = yield* api.students.get({ params: { id: Ids.StudentId.make(w.studentOfB) } }).pipe(
          failsWith(Errors.NotFound)
        )
        assert.strictEqual(foreign.message, `Student ${w.studentOfB} not found.`)
        // The envelope as sent.
        assertError(yield* get("/students/2147483647", w.readKey), 404, "not_found")
        const wire = yield* get(`/students/${w.studentOfB}`, w.readKey)
        assertError(wire, 404, "not_found")
        assert.notInclude(wire.text, "Other")
      }))

    it.effect("a malformed id is validation_failed on id", () =>
      Effect.gen(function*() {
        const w = yield* World
        for (const id of ["abc", "0", "-1", "1.5", "2147483648"]) {
          assertError(yield* get(`/students/${id}`, w.readKey), 422, "validation_failed", { id: true })
        }
      }))
  })

  describe("authentication", () => {
    it.effect("every fields.reason, revoked before expired, write keys read", () =>
      Effect.gen(function*() {
        const w = yield* World
        const server = yield* TestServer
        const withHeader = (authorization: string) =>
          server.raw.request(`${V1}/students`, { headers: { authorization } })
        assertError(yield* get("/students"), 401, "unauthorized", { reason: "missing_or_malformed_key" })
        assertError(yield* withHeader("Bearer"), 401, "unauthorized", { reason: "missing_or_malformed_key" })
        assertError(yield* withHeader("Basic dXNlcjpwYXNz"), 401, "unauthorized", { reason: "missing_or_malformed_key" })
        assertError(yield* withHeader("Bearer key_abcdefgh_" + "a".repeat(32)), 401, "unauthorized", {
          reason: "missing_or_malformed_key"
        })
        assertError(yield* withHeader("Bearer svc_short_x"), 401, "unauthorized", { reason: "missing_or_malformed_key" })
        assertError(yield* get("/students", "svc_zzzzzzzz_" + "a".repeat(32)), 401, "unauthorized", {
          reason: "unknown_key"
        })
        // A known prefix with a wrong secret is unknown_key too.
        const prefix = w.readKey.slice(0, "svc_".length + 9)
        assertError(yield* get("/students", prefix + "Z".repeat(32)), 401, "unauthorized", { reason: "unknown_key" })
        assertError(yield* get("/students", w.revokedKey), 401, "unauthorized", { reason: "revoked_key" })
        assertError(yield* get("/students", w.expiredKey), 401, "unauthorized", { reason: "expired_key" })
        assertError(yield* get("/students", w.revokedExpiredKey), 401, "unauthorized", { reason: "revoked_key" })
        // The same through the contract's client: Unauthorized with its reason.
        for (const [key, reason, message] of [
          [w.revokedKey, "revoked_key", "The API key has been revoked."],
          [w.expiredKey, "expired_key", "The API key has expired."],
          [w.revokedExpiredKey, "revoked_key", "The API key has been revoked."]
        ] as const) {
          const api = yield* client(key)
          const error = yield* api.students.list({ query: {} }).pipe(failsWith(Errors.Unauthorized))
          assert.deepStrictEqual([error.message, error.fields], [message, { reason }])
        }
        const writer = yield* client(w.writeKey)
        assert.strictEqual(totalOf((yield* writer.students.list({ query: {} })).meta), 45)
      }))

    it.effect("authentication comes before validation", () =>
      Effect.gen(function*() {
        assertError(yield* get("/students?per_page=1000"), 401, "unauthorized", { reason: "missing_or_malformed_key" })
      }))
  })

  describe("GET /payments, /groups, reference data", () => {
    it.effect("payments carry amount_kopecks as integers, filter by updated_since, and stay in their school", () =>
      Effect.gen(function*() {
        const w = yield* World
        const res = yield* get("/payments", w.readKey)
        assert.strictEqual(res.status, 200)
        const page = pageOf(Models.Payment, res)
        assert.strictEqual(page.meta.total, 1)
        const [p] = page.data
        assert.strictEqual(p?.amount_kopecks, 150_050)
        assert.strictEqual(p?.payment_type, "cash")
        assert.strictEqual(p?.group_id, null)
        assert.strictEqual(p?.student_id, w.studentIds[0])
        for (const time of [p?.paid_at, p?.created_at, p?.updated_at]) assert.match(time ?? "", TS)
        const later = yield* get("/payments?updated_since=2999-01-01T00:00:00%2B03:00", w.readKey)
        assert.deepStrictEqual(later.json, { data: [], meta: { page: 1, per_page: 20, total: 0 } })
        assertError(yield* get("/payments?updated_since=2026", w.readKey), 422, "validation_failed", {
          updated_since: true
        })
        const b = yield* (yield* client(w.keyB)).payments.list({ query: {} })
        assert.deepStrictEqual(b.data.map((x) => x.amount_kopecks), [999])
      }))

    it.effect("groups show capacity, enrolled_count and free_places", () =>
      Effect.gen(function*() {
        const w = yield* World
        const res = yield* get("/groups", w.readKey)
        assert.strictEqual(res.status, 200)
        const { data } = pageOf(Models.Group, res)
        assert.deepStrictEqual(data, [{
          id: w.groupId,
          name: "Chess A1",
          filial_id: data[0]?.filial_id ?? 0,
          subject_id: null,
          program_id: null,
          level_id: null,
          teacher_id: null,
          capacity: 12,
          enrolled_count: 1,
          free_places: 11
        }])
        const typed = yield* (yield* client(w.readKey)).groups.list({ query: {} })
        assert.deepStrictEqual(typed.data, data)
        assertError(yield* get("/groups?per_page=101", w.readKey), 422, "validation_failed", { per_page: true })
      }))

    it.effect("filials, subjects, programs and levels list the school's own rows", () =>
      Effect.gen(function*() {
        const w = yield* World
        const api = yield* client(w.readKey)
        const filials = yield* api.reference.filials({ query: {} })
        assert.deepStrictEqual(filials.data.map((f) => [f.name, f.address]), [["Main", "Main street 1"]])
        const subjects = yield* api.reference.subjects({ query: {} })
        assert.deepStrictEqual(subjects.data.map((s) => s.name), ["Chess"])
        const programs = yield* api.reference.programs({ query: {} })
        assert.deepStrictEqual(programs.data.map((p) => [p.name, p.subject_id]), [["Beginners", null]])
        const levels = yield* api.reference.levels({ query: {} })
        assert.deepStrictEqual(levels.data.map((l) => [l.name, l.program_id]), [["A1", null]])
        // As sent: exactly the contract's fields.
        for (const [path, item] of [
          ["/filials", Models.Filial],
          ["/subjects", Models.Subject],
          ["/programs", Models.Program],
          ["/levels", Models.Level]
        ] as const) {
          assert.strictEqual(pageOf(item, yield* get(path, w.readKey)).data.length, 1, path)
        }
        for (const path of ["/filials", "/subjects", "/programs", "/levels"]) {
          assertError(yield* get(`${path}?page=0`, w.readKey), 422, "validation_failed", { page: true })
          assertError(yield* get(path), 401, "unauthorized", { reason: "missing_or_malformed_key" })
        }
      }))
  })

  describe("GET /lessons", () => {
    it.effect("a 92-day window is accepted; both ends are inclusive days in UTC", () =>
      Effect.gen(function*() {
        const w = yield* World
        const res = yield* get("/lessons?from=2026-01-01&to=2026-04-03", w.readKey)
        assert.strictEqual(res.status, 200)
        const page = pageOf(Models.Lesson, res)
        assert.deepStrictEqual(page.data.map((l) => l.id), [w.lessonIds.first, w.lessonIds.lastDay])
        assert.deepStrictEqual(itemKeys(res)[0], ["ends_at", "filial_id", "group_id", "id", "starts_at", "teacher_id", "topic"])
        assert.strictEqual(page.data[1]?.starts_at, "2026-04-03T23:59:59.000000Z")
        const api = yield* client(w.readKey)
        assert.deepStrictEqual(yield* api.lessons.list({ query: { from: "2026-01-01", to: "2026-04-03" } }), page)
        const oneDay = yield* api.lessons.list({ query: { from: "2026-04-04", to: "2026-04-04" } })
        assert.deepStrictEqual(oneDay.data.map((l) => l.id), [w.lessonIds.afterWindow])
      }))

    it.effect("93 days is window_too_large; to before from is invalid_window", () =>
      Effect.gen(function*() {
        const w = yield* World
        const api = yield* client(w.readKey)
        const tooLarge = yield* api.lessons.list({ query: { from: "2026-01-01", to: "2026-04-04" } }).pipe(
          failsWith(Errors.WindowTooLarge)
        )
        assert.strictEqual(tooLarge.message, "The window from..to is 93 days; at most 92 are allowed.")
        assert.isUndefined(tooLarge.fields)
        const inverted = yield* api.lessons.list({ query: { from: "2026-01-02", to: "2026-01-01" } }).pipe(
          failsWith(Errors.InvalidWindow)
        )
        assert.strictEqual(inverted.message, "'to' is earlier than 'from'.")
        assert.isUndefined(inverted.fields)
        // The envelopes as sent.
        assertError(yield* get("/lessons?from=2026-01-01&to=2026-04-04", w.readKey), 422, "window_too_large")
        assertError(yield* get("/lessons?from=2026-01-02&to=2026-01-01", w.readKey), 422, "invalid_window")
      }))

    it.effect("from and to are required real dates", () =>
      Effect.gen(function*() {
        const w = yield* World
        assertError(yield* get("/lessons", w.readKey), 422, "validation_failed", { from: true, to: true })
        assertError(yield* get("/lessons?from=2026-01-01", w.readKey), 422, "validation_failed", { to: true })
        assertError(yield* get("/lessons?from=2026-02-30&to=2026-03-01", w.readKey), 422, "validation_failed", {
          from: true
        })
        assertError(yield* get("/lessons?from=01.01.2026&to=2026-03-01", w.readKey), 422, "validation_failed", {
          from: true
        })
      }))
  })

  describe("tenant isolation", () => {
    it.effect("school B's key sees none of school A's rows on any endpoint", () =>
      Effect.gen(function*() {
        const w = yield* World
        const api = yield* client(w.keyB)
        const students = yield* api.students.list({ query: { per_page: 100 } })
        assert.deepStrictEqual(students.data.map((s) => s.fio), ["Other 1", "Other 2", "Other 3"])
        yield* api.students.get({ params: { id: Ids.StudentId.make(w.studentIds[0]!) } }).pipe(failsWith(Errors.NotFound))
        assertError(yield* get(`/students/${w.studentIds[0]}`, w.keyB), 404, "not_found")
        const groups = yield* api.groups.list({ query: {} })
        assert.deepStrictEqual(groups.data.map((g) => g.name), ["Other group"])
        const lessons = yield* api.lessons.list({ query: { from: "2026-01-01", to: "2026-04-03" } })
        assert.strictEqual(totalOf(lessons.meta), 1)
        assert.notInclude(lessons.data.map((l) => l.id), w.lessonIds.first)
        assert.deepStrictEqual((yield* api.reference.filials({ query: {} })).data.map((x) => x.name), ["Main"])
        assert.deepStrictEqual((yield* api.reference.subjects({ query: {} })).data.map((x) => x.name), ["Go"])
        assert.deepStrictEqual((yield* api.reference.programs({ query: {} })).data.map((x) => x.name), ["Pros"])
        assert.deepStrictEqual((yield* api.reference.levels({ query: {} })).data.map((x) => x.name), ["B2"])
      }))
  })

  describe("everything else speaks the envelope", () => {
    it.effect("unknown routes and versions are 404 not_found; a known path with another method is 405 with Allow", () =>
      Effect.gen(function*() {
        const w = yield* World
        const server = yield* TestServer
        assertError(yield* get("/nope", w.readKey), 404, "not_found")
        assertError(yield* server.raw.get("/api/public/v2/students", w.readKey), 404, "not_found")
        const wrongMethod = yield* server.raw.request(`${V1}/students`, { method: "DELETE", key: w.readKey })
        assertError(wrongMethod, 405, "method_not_allowed")
        assert.strictEqual(wrongMethod.headers.get("allow"), "GET")
        const put = yield* server.raw.request(`${V1}/students/1`, { method: "PUT", key: w.readKey, body: "{}" })
        assertError(put, 405, "method_not_allowed")
      }))

    it.effect("health: live and ready", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const live = yield* server.raw.get("/health/live")
        assert.deepStrictEqual([live.status, live.json], [200, { status: "ok" }])
        const ready = yield* server.raw.get("/health/ready")
        assert.deepStrictEqual([ready.status, ready.json], [200, { status: "ready" }])
      }))
  })
})

layer(Env, { excludeTestServices: true })("unexpected failures", (it) => {
  it.effect("a database failure is 500 internal_error with no SQL or driver text; the cause goes to the log", () =>
    Effect.gen(function*() {
      const w = yield* World
      const sql = yield* SqlClient.SqlClient
      const server = yield* TestServer
      yield* sql`ALTER TABLE filials RENAME TO filials_moved`
      const [res, logged] = yield* server.expectingLogs(get("/filials", w.readKey)).pipe(
        Effect.ensuring(sql`ALTER TABLE filials_moved RENAME TO filials`.pipe(Effect.orDie))
      )
      assertError(res, 500, "internal_error")
      assert.notMatch(res.text, /filials_moved|relation|SqlError|at .*\.ts/)
      assert.deepStrictEqual(logged.map((entry) => [entry.level, entry.message]), [["Error", "request failed"]])
      assert.include(logged[0]?.cause, "relation \"filials\" does not exist")
    }))
})
