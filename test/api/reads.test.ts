/**
 * The public API's read side against a real database (issue 2): every
 * endpoint's success shape, every error it can return (status, code,
 * fields), pagination edges, updated_since with offsets and the legacy
 * placeholder, the 92-day window, and tenant isolation on every endpoint.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Fixtures from "../support/Fixtures.ts"
import { TestApi } from "../support/TestApi.ts"

const V1 = "/api/public/v1"

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

const Env = World.layer.pipe(Layer.provideMerge(TestApi.layer))

const get = (path: string, key?: string) =>
  Effect.flatMap(TestApi, (api) => api.request(`${V1}${path}`, key === undefined ? {} : { key }))

const assertError = (
  res: { status: number; body: any; headers: Headers },
  status: number,
  code: string,
  fields?: Record<string, unknown>
) => {
  assert.strictEqual(res.status, status, JSON.stringify(res.body))
  assert.strictEqual(res.headers.get("content-type"), "application/json; charset=utf-8")
  assert.strictEqual(res.body.error.code, code)
  assert.isString(res.body.error.message)
  assert.isAbove(res.body.error.message.length, 0)
  if (fields === undefined) {
    assert.isUndefined(res.body.error.fields)
  } else {
    assert.deepStrictEqual(Object.keys(res.body.error.fields).sort(), Object.keys(fields).sort())
    for (const [name, expected] of Object.entries(fields)) {
      if (expected !== true) assert.deepStrictEqual(res.body.error.fields[name], expected)
    }
  }
}

const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

layer(Env)("public API, read side", (it) => {
  describe("GET /students", () => {
    it.effect("lists students in id order with meta and the list item shape", () =>
      Effect.gen(function*() {
        const w = yield* World
        const res = yield* get("/students", w.readKey)
        assert.strictEqual(res.status, 200)
        assert.strictEqual(res.headers.get("content-type"), "application/json; charset=utf-8")
        assert.deepStrictEqual(res.body.meta, { page: 1, per_page: 20, total: 45 })
        assert.strictEqual(res.body.data.length, 20)
        assert.deepStrictEqual(res.body.data.map((s: any) => s.id), w.studentIds.slice(0, 20))
        const first = res.body.data[0]
        assert.deepStrictEqual(Object.keys(first).sort(), [
          "active_groups", "balance_kopecks", "created_at", "email", "filial_id", "fio", "id", "phone", "updated_at"
        ])
        assert.strictEqual(first.active_groups, null)
        assert.strictEqual(first.fio, "Student 1")
        assert.strictEqual(first.balance_kopecks, 100 + 150_050)
        assert.isTrue(Number.isInteger(first.balance_kopecks))
        assert.match(first.created_at, TS)
        assert.strictEqual(res.body.data[1].updated_at, "2026-01-10T12:00:00.123456Z")
        // The payment moved student 1's balance, so its last-modified time moved too (DECISIONS "Lists").
        assert.match(first.updated_at, TS)
        assert.isAbove(Date.parse(first.updated_at), Date.parse("2026-03-01T09:00:00Z"))
      }))

    it.effect("pagination edges: per_page 1 and 100, the last page, a page past the end", () =>
      Effect.gen(function*() {
        const w = yield* World
        const one = yield* get("/students?per_page=1&page=2", w.readKey)
        assert.deepStrictEqual(one.body.meta, { page: 2, per_page: 1, total: 45 })
        assert.deepStrictEqual(one.body.data.map((s: any) => s.id), [w.studentIds[1]])
        const hundred = yield* get("/students?per_page=100", w.readKey)
        assert.strictEqual(hundred.body.data.length, 45)
        const last = yield* get("/students?per_page=20&page=3", w.readKey)
        assert.deepStrictEqual(last.body.data.map((s: any) => s.id), w.studentIds.slice(40))
        const past = yield* get("/students?per_page=20&page=4", w.readKey)
        assert.strictEqual(past.status, 200)
        assert.deepStrictEqual(past.body, { data: [], meta: { page: 4, per_page: 20, total: 45 } })
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
        const all = yield* get("/students?updated_since=2000-01-01T00:00:00Z&per_page=100", w.readKey)
        assert.strictEqual(all.body.meta.total, 44)
        assert.isFalse(all.body.data.some((s: any) => s.id === w.legacyId))
        // Student 1 was modified by its payment (now); students 11 and 12 at 09:00:00.000001Z.
        const moved = [w.studentIds[0], w.studentIds[10], w.studentIds[11]]
        const exact = yield* get("/students?updated_since=2026-03-01T09:00:00.000001Z", w.readKey)
        assert.deepStrictEqual(exact.body.data.map((s: any) => s.id), moved)
        const afterByAMicro = yield* get("/students?updated_since=2026-03-01T09:00:00.000002Z", w.readKey)
        assert.deepStrictEqual(afterByAMicro.body.data.map((s: any) => s.id), [w.studentIds[0]])
        // 12:00:00+03:00 is 09:00:00Z: the same students; 12:00:00+02:00 is an hour later.
        const offset = yield* get(`/students?updated_since=${encodeURIComponent("2026-03-01T12:00:00+03:00")}`, w.readKey)
        assert.deepStrictEqual(offset.body.data.map((s: any) => s.id), moved)
        const later = yield* get(`/students?updated_since=${encodeURIComponent("2026-03-01T12:00:00+02:00")}`, w.readKey)
        assert.deepStrictEqual(later.body.data.map((s: any) => s.id), [w.studentIds[0]])
        // The legacy student is in the unfiltered list.
        const full = yield* get("/students?per_page=100", w.readKey)
        assert.isTrue(full.body.data.some((s: any) => s.id === w.legacyId && s.updated_at === null))
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
        assert.strictEqual(res.body.data.id, w.studentIds[0])
        assert.strictEqual(res.body.data.balance_kopecks, 150_150)
        assert.strictEqual(res.body.data.active_groups.length, 1)
        const [g] = res.body.data.active_groups
        assert.strictEqual(g.group_id, w.groupId)
        assert.strictEqual(g.group_name, "Chess A1")
        assert.strictEqual(g.enrollment_id, w.enrollmentId)
        assert.isNumber(g.filial_id)
        assert.match(g.enrolled_at, TS)
        const none = yield* get(`/students/${w.studentIds[1]}`, w.readKey)
        assert.deepStrictEqual(none.body.data.active_groups, [])
      }))

    it.effect("a missing student and another school's student are the same not_found", () =>
      Effect.gen(function*() {
        const w = yield* World
        const missing = yield* get("/students/2147483647", w.readKey)
        assertError(missing, 404, "not_found")
        const foreign = yield* get(`/students/${w.studentOfB}`, w.readKey)
        assertError(foreign, 404, "not_found")
        assert.notInclude(foreign.text, "Other")
      }))

    it.effect("a malformed id is validation_failed on id", () =>
      Effect.gen(function*() {
        const w = yield* World
        for (const id of ["abc", "0", "-1", "1.5", "2147483648"]) {
          assertError(yield* get(`/students/${id}`, w.readKey), 422, "validation_failed", { id: true })
        }
      }))
  })

  describe("authentication (spec 5.1)", () => {
    it.effect("every fields.reason, revoked before expired, write keys read", () =>
      Effect.gen(function*() {
        const w = yield* World
        const api = yield* TestApi
        const withHeader = (authorization: string) =>
          api.request(`${V1}/students`, { headers: { authorization } })
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
        assert.strictEqual((yield* get("/students", w.writeKey)).status, 200)
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
        assert.strictEqual(res.body.meta.total, 1)
        const [p] = res.body.data
        assert.strictEqual(p.amount_kopecks, 150_050)
        assert.strictEqual(p.payment_type, "cash")
        assert.strictEqual(p.group_id, null)
        assert.strictEqual(p.student_id, w.studentIds[0])
        for (const field of ["paid_at", "created_at", "updated_at"]) assert.match(p[field], TS)
        const later = yield* get("/payments?updated_since=2999-01-01T00:00:00%2B03:00", w.readKey)
        assert.deepStrictEqual(later.body, { data: [], meta: { page: 1, per_page: 20, total: 0 } })
        assertError(yield* get("/payments?updated_since=2026", w.readKey), 422, "validation_failed", {
          updated_since: true
        })
        const b = yield* get("/payments", w.keyB)
        assert.deepStrictEqual(b.body.data.map((x: any) => x.amount_kopecks), [999])
      }))

    it.effect("groups show capacity, enrolled_count and free_places", () =>
      Effect.gen(function*() {
        const w = yield* World
        const res = yield* get("/groups", w.readKey)
        assert.strictEqual(res.status, 200)
        assert.deepStrictEqual(res.body.data, [{
          id: w.groupId,
          name: "Chess A1",
          filial_id: res.body.data[0].filial_id,
          subject_id: null,
          program_id: null,
          level_id: null,
          teacher_id: null,
          capacity: 12,
          enrolled_count: 1,
          free_places: 11
        }])
        assertError(yield* get("/groups?per_page=101", w.readKey), 422, "validation_failed", { per_page: true })
      }))

    it.effect("filials, subjects, programs and levels list the school's own rows", () =>
      Effect.gen(function*() {
        const w = yield* World
        const filials = yield* get("/filials", w.readKey)
        assert.deepStrictEqual(filials.body.data.map((f: any) => [f.name, f.address]), [["Main", "Main street 1"]])
        const subjects = yield* get("/subjects", w.readKey)
        assert.deepStrictEqual(subjects.body.data.map((s: any) => s.name), ["Chess"])
        const programs = yield* get("/programs", w.readKey)
        assert.deepStrictEqual(programs.body.data.map((p: any) => [p.name, p.subject_id]), [["Beginners", null]])
        const levels = yield* get("/levels", w.readKey)
        assert.deepStrictEqual(levels.body.data.map((l: any) => [l.name, l.program_id]), [["A1", null]])
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
        assert.deepStrictEqual(res.body.data.map((l: any) => l.id), [w.lessonIds.first, w.lessonIds.lastDay])
        assert.deepStrictEqual(Object.keys(res.body.data[0]).sort(), [
          "ends_at", "filial_id", "group_id", "id", "starts_at", "teacher_id", "topic"
        ])
        assert.strictEqual(res.body.data[1].starts_at, "2026-04-03T23:59:59.000000Z")
        const oneDay = yield* get("/lessons?from=2026-04-04&to=2026-04-04", w.readKey)
        assert.deepStrictEqual(oneDay.body.data.map((l: any) => l.id), [w.lessonIds.afterWindow])
      }))

    it.effect("93 days is window_too_large; to before from is invalid_window", () =>
      Effect.gen(function*() {
        const w = yield* World
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
        const students = yield* get("/students?per_page=100", w.keyB)
        assert.deepStrictEqual(students.body.data.map((s: any) => s.fio), ["Other 1", "Other 2", "Other 3"])
        assertError(yield* get(`/students/${w.studentIds[0]}`, w.keyB), 404, "not_found")
        const groups = yield* get("/groups", w.keyB)
        assert.deepStrictEqual(groups.body.data.map((g: any) => g.name), ["Other group"])
        const lessons = yield* get("/lessons?from=2026-01-01&to=2026-04-03", w.keyB)
        assert.strictEqual(lessons.body.meta.total, 1)
        assert.notInclude(lessons.body.data.map((l: any) => l.id), w.lessonIds.first)
        for (const [path, name] of [["/filials", "Main"], ["/subjects", "Go"], ["/programs", "Pros"], ["/levels", "B2"]]) {
          const res = yield* get(path!, w.keyB)
          assert.deepStrictEqual(res.body.data.map((x: any) => x.name), [name])
        }
      }))
  })

  describe("everything else speaks the envelope", () => {
    it.effect("unknown routes and versions are 404 not_found; a known path with another method is 405 with Allow", () =>
      Effect.gen(function*() {
        const w = yield* World
        const api = yield* TestApi
        assertError(yield* get("/nope", w.readKey), 404, "not_found")
        assertError(yield* api.request("/api/public/v2/students", { key: w.readKey }), 404, "not_found")
        const wrongMethod = yield* api.request(`${V1}/students`, { method: "DELETE", key: w.readKey })
        assertError(wrongMethod, 405, "method_not_allowed")
        assert.strictEqual(wrongMethod.headers.get("allow"), "GET")
        const put = yield* api.request(`${V1}/students/1`, { method: "PUT", key: w.readKey, body: "{}" })
        assertError(put, 405, "method_not_allowed")
      }))

    it.effect("health: live and ready", () =>
      Effect.gen(function*() {
        const api = yield* TestApi
        const live = yield* api.request("/health/live")
        assert.deepStrictEqual([live.status, live.body], [200, { status: "ok" }])
        const ready = yield* api.request("/health/ready")
        assert.deepStrictEqual([ready.status, ready.body], [200, { status: "ready" }])
      }))

    it.effect("the OpenAPI 3.1 document shows the envelope and every error per endpoint, and the docs page loads", () =>
      Effect.gen(function*() {
        const api = yield* TestApi
        const res = yield* api.request(`${V1}/openapi.json`)
        assert.strictEqual(res.status, 200)
        const doc = res.body
        assert.match(doc.openapi, /^3\.1/)
        const statuses = (path: string) => Object.keys(doc.paths[path].get.responses).sort()
        assert.deepStrictEqual(statuses(`${V1}/students`), ["200", "401", "422", "429"])
        assert.deepStrictEqual(statuses(`${V1}/students/{id}`), ["200", "401", "404", "422", "429"])
        assert.deepStrictEqual(statuses(`${V1}/lessons`), ["200", "401", "422", "429"])
        const lessons422 = JSON.stringify(doc.paths[`${V1}/lessons`].get.responses["422"])
        for (const code of ["validation_failed", "invalid_window", "window_too_large"]) {
          assert.include(JSON.stringify(doc.components.schemas) + lessons422, code)
        }
        const unauthorized = doc.components.schemas["UnauthorizedEncoded"]
        assert.deepStrictEqual(unauthorized.required, ["error"])
        assert.deepStrictEqual(unauthorized.properties.error.required.sort(), ["code", "message"])
        assert.notInclude(JSON.stringify(doc), "HttpApiSchemaError")
        const tooMany = doc.paths[`${V1}/students`].get.responses["429"]
        // Declared by the contract: HttpApi names response headers in lower case and documents an
        // integer header as its text (as it does `page` and `{id}`): whole seconds, at least 1.
        assert.isTrue(tooMany.headers["retry-after"].required)
        assert.deepStrictEqual(
          [tooMany.headers["retry-after"].schema.type, tooMany.headers["retry-after"].schema.pattern],
          ["string", "^[1-9][0-9]*$"]
        )
        // Unknown body fields are ignored (DECISIONS), so no request body may claim otherwise.
        const bodies = Object.values(doc.paths).flatMap((ops: any) =>
          Object.values(ops).flatMap((op: any) => Object.values(op.requestBody?.content ?? {}))
        )
        assert.isAtLeast(bodies.length, 3)
        for (const media of bodies as Array<any>) {
          const ref: string | undefined = media.schema.$ref
          const schema = ref === undefined ? media.schema : doc.components.schemas[ref.split("/").pop()!]
          assert.notStrictEqual(schema.additionalProperties, false, JSON.stringify(schema))
        }
        const docs = yield* api.request(`${V1}/docs`)
        assert.strictEqual(docs.status, 200)
        assert.include(docs.text, "<html")
      }))
  })
})

layer(Env)("unexpected failures", (it) => {
  it.effect("a database failure is 500 internal_error with no SQL or driver text", () =>
    Effect.gen(function*() {
      const w = yield* World
      const sql = yield* SqlClient.SqlClient
      yield* sql`ALTER TABLE filials RENAME TO filials_moved`
      const res = yield* get("/filials", w.readKey)
      assertError(res, 500, "internal_error")
      assert.notMatch(res.text, /filials_moved|relation|SqlError|at .*\.ts/)
      yield* sql`ALTER TABLE filials_moved RENAME TO filials`
    }))
})
