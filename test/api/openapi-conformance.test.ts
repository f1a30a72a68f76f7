/**
 * Real answers match the public OpenAPI document (docs/integrators.md
 * "The OpenAPI documents"):
 * every operation is driven over HTTP through its success and each error
 * status it documents, and every answer (status, documented headers such as
 * Retry-After, Idempotent-Replayed and X-Request-Id, and the body) is checked
 * against the served document's schema for that operation and status (ajv,
 * JSON Schema 2020-12, standard formats). Every documented (operation,
 * status) is exercised at least once, or is on NOT_PRODUCIBLE, and that list
 * is exact. A mutated answer is refused (the check can fail).
 *
 * One server, one database: a school on the `pro` plan for the calls, and a
 * school whose budget is one request per window for the 429s.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option } from "effect"
import { OPENAPI_PATH } from "@school/api/Server"
import { MAX_BODY_BYTES } from "@school/api/Server"
import { type RawReply, type RawRequest, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { openApiDocument } from "../support/OpenApiDocument.ts"
import { holdLock, waitForBlockedSession } from "../support/Locks.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

/** The limited school's plan and budget: one request per window, so its second one is a 429. */
const LIMITED_PLAN = "basic"

const Env = TestServer.layer({
  settings: { IDEMPOTENCY_WAIT: "300ms" },
  rateLimit: { budgets: Option.some({ byPlan: { [LIMITED_PLAN]: 1 }, fallback: 100_000 }) }
}).pipe(Layer.provideMerge(TestDatabase.layer))

/**
 * The documented answers no test can cause over HTTP against a healthy
 * server: 500 internal_error (an unexpected failure; the envelope is
 * tested by test/api/hardening-*.test.ts through a route made to fail) and
 * 503 service_unavailable (the database away: test/ops). Every operation
 * documents both.
 */
const NOT_PRODUCIBLE = (operation: string) => [`${operation} 500`, `${operation} 503`]

const READS = ["/students", "/payments", "/groups", "/enrollments", "/lessons?from=2026-01-01&to=2026-01-31", "/filials", "/subjects", "/programs", "/levels"]

/** Holds an exclusive lock on `leads` until `release`, so a lead's write waits inside its operation. */
let keys = 0
const freshKey = () => `conformance-${Date.now()}-${keys++}`

layer(Env, { excludeTestServices: true })("the public API answers as its OpenAPI document says", (it) => {
  it.effect("every operation, success and each error, matches its documented status, headers and body", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const document = openApiDocument((yield* server.raw.get(OPENAPI_PATH)).json)
      const exercised = new Set<string>()
      const problems: Array<string> = []
      const replies: Array<{ readonly method: string; readonly path: string; readonly reply: RawReply }> = []
      const call = (path: string, request: RawRequest = {}) =>
        Effect.gen(function*() {
          const method = request.method ?? "GET"
          const reply = yield* server.raw.request(`${V1}${path}`, request)
          const operation = document.operationOf(method, `${V1}${path}`)
          assert.isDefined(operation, `${method} ${path}`)
          exercised.add(`${operation} ${reply.status}`)
          problems.push(...document.check(method, `${V1}${path}`, reply))
          replies.push({ method, path: `${V1}${path}`, reply })
          return reply
        })
      const expect = (status: number, path: string, request: RawRequest = {}) =>
        Effect.map(call(path, request), (reply) => {
          assert.strictEqual(reply.status, status, `${request.method ?? "GET"} ${path}: ${reply.text.slice(0, 300)}`)
          return reply
        })

      // The data: a pro school with a student, a payment, groups (one full), a lesson, and keys.
      const { filialId, schoolId } = yield* Fixtures.school("pro", "Conformance")
      const [studentId = 0, other = 0] = yield* Fixtures.students(schoolId, filialId, 2, "Student")
      const groupId = yield* Fixtures.group(schoolId, filialId, "Open", 10)
      const fullId = yield* Fixtures.group(schoolId, filialId, "Full", 1)
      yield* Fixtures.enroll(schoolId, other, fullId)
      yield* Fixtures.lesson(schoolId, groupId, filialId, "2026-01-10T10:00:00Z")
      yield* Fixtures.payment(schoolId, studentId, filialId, 150_000, "card")
      const read = yield* Fixtures.key(schoolId)
      const write = yield* Fixtures.key(schoolId, { scope: "write" })
      const limited = yield* Fixtures.school(LIMITED_PLAN, "Conformance limited")
      const limitedKey = yield* Fixtures.key(limited.schoolId, { scope: "write" })
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10], ["Won", 20]])
      const lead = yield* expect(201, "/leads", { method: "POST", key: write, idempotencyKey: freshKey(), body: { phone: "+7 900 111-22-33" } })
      const leadId = Number((lead.json as { data: { id: number } }).data.id)

      // Reads: 200, 401 (each reason), 422, 404, 429.
      for (const path of READS) {
        yield* expect(200, path, { key: read })
        yield* expect(401, path)
        yield* expect(422, `${path}${path.includes("?") ? "&" : "?"}page=1.5`, { key: read })
        // Cursor mode (docs/decisions.md "Cursor pagination"): its meta, the first page and past the end; its 422s.
        const and = path.includes("?") ? "&" : "?"
        yield* expect(200, `${path}${and}starting_after=0&per_page=1`, { key: read })
        yield* expect(200, `${path}${and}starting_after=2147483647`, { key: read })
        yield* expect(422, `${path}${and}starting_after=-1`, { key: read })
        yield* expect(422, `${path}${and}starting_after=0&page=2`, { key: read })
      }
      yield* expect(200, `/students/${studentId}`, { key: read })
      yield* expect(401, `/students/${studentId}`, { key: `${read}x` })
      yield* expect(401, `/students/${studentId}`, { key: yield* Fixtures.key(schoolId, { revoked: true }) })
      yield* expect(401, `/students/${studentId}`, { key: yield* Fixtures.key(schoolId, { expired: true }) })
      yield* expect(422, "/students/1.5", { key: read })
      yield* expect(404, "/students/2147483647", { key: read })
      yield* expect(200, "/students?updated_since=2020-01-01T00:00:00Z&per_page=1", { key: read })
      yield* expect(422, "/lessons?from=2026-02-01&to=2026-01-01", { key: read })
      yield* expect(422, "/lessons?from=2026-01-01&to=2026-12-31", { key: read })

      // Writes: 201 (and its replay), 401, 403, 413, 415, 422 (each kind), 409.
      const writes = [
        { path: "/leads", body: { phone: "+7 900 123-45-67", name: "Anna" } },
        { path: "/demo-lessons", body: { lead_id: leadId, group_id: groupId } },
        { path: `/students/${studentId}/groups`, body: { group_id: groupId } }
      ]
      for (const { body, path } of writes) {
        const idempotencyKey = freshKey()
        yield* expect(201, path, { method: "POST", key: write, idempotencyKey, body })
        const replay = yield* expect(201, path, { method: "POST", key: write, idempotencyKey, body })
        assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
        yield* expect(401, path, { method: "POST", idempotencyKey: freshKey(), body })
        yield* expect(403, path, { method: "POST", key: read, idempotencyKey: freshKey(), body })
        yield* expect(422, path, { method: "POST", key: write, body })
        yield* expect(422, path, { method: "POST", key: write, idempotencyKey: freshKey(), body: { phone: 5, group_id: "x" } })
        yield* expect(415, path, {
          method: "POST",
          key: write,
          idempotencyKey: freshKey(),
          body: "phone=1",
          headers: { "content-type": "text/plain" }
        })
        yield* expect(413, path, { method: "POST", key: write, idempotencyKey: freshKey(), body: { pad: "x".repeat(MAX_BODY_BYTES) } })
      }
      yield* expect(422, "/leads", { method: "POST", key: write, idempotencyKey: freshKey(), body: { phone: "12345", funnel_id: 2147483647 } })
      yield* expect(409, "/demo-lessons", { method: "POST", key: write, idempotencyKey: freshKey(), body: { user_id: studentId, group_id: fullId } })
      yield* expect(422, "/demo-lessons", { method: "POST", key: write, idempotencyKey: freshKey(), body: { user_id: studentId, group_id: 2147483647 } })
      yield* expect(409, `/students/${studentId}/groups`, { method: "POST", key: write, idempotencyKey: freshKey(), body: { group_id: fullId } })
      const stored = yield* expect(422, `/students/${studentId}/groups`, {
        method: "POST",
        key: write,
        idempotencyKey: "already-enrolled",
        body: { group_id: groupId }
      })
      const storedReplay = yield* expect(422, `/students/${studentId}/groups`, {
        method: "POST",
        key: write,
        idempotencyKey: "already-enrolled",
        body: { group_id: groupId }
      })
      assert.strictEqual(storedReplay.headers.get("idempotent-replayed"), "true")
      assert.strictEqual(storedReplay.text, stored.text)
      yield* expect(422, "/students/2147483647/groups", { method: "POST", key: write, idempotencyKey: freshKey(), body: { group_id: groupId } })
      // 409 idempotency_in_progress on /leads: the first request holds its key while the table is locked.
      {
        const idempotencyKey = freshKey()
        const release = yield* Deferred.make<void>()
        const lock = yield* holdLock("leads", release)
        const first = yield* Effect.forkChild(server.raw.post(`${V1}/leads`, { key: write, idempotencyKey, body: { phone: "12345" } }))
        yield* waitForBlockedSession(300)
        yield* expect(409, "/leads", { method: "POST", key: write, idempotencyKey, body: { phone: "12345" } })
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(lock)
        assert.strictEqual((yield* Fiber.join(first)).status, 201)
      }

      // 429 on every operation: the limited school's first request spends its budget.
      yield* expect(200, "/filials", { key: limitedKey })
      for (const path of [...READS, `/students/${studentId}`]) yield* expect(429, path, { key: limitedKey })
      for (const { body, path } of writes) {
        const reply = yield* expect(429, path, { method: "POST", key: limitedKey, idempotencyKey: freshKey(), body })
        assert.match(reply.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/)
      }

      assert.deepStrictEqual(problems, [])
      // Every documented answer was seen, except exactly the ones no test can cause.
      const notProducible = document.operations.flatMap(NOT_PRODUCIBLE).sort()
      const missing = document.responses.filter((response) => !exercised.has(response)).sort()
      assert.deepStrictEqual(missing, notProducible)
      for (const response of notProducible) assert.include(document.responses, response)

      // Negative controls: the same check refuses a mutated body, a missing header and an undocumented status.
      const card = replies.find(({ path, reply }) => path === `${V1}/students/${studentId}` && reply.status === 200)
      assert.isDefined(card)
      if (card !== undefined) {
        const mutated = { ...card.reply, text: card.reply.text.replace(`"id":${studentId}`, `"id":"${studentId}"`) }
        assert.notStrictEqual(mutated.text, card.reply.text)
        assert.isNotEmpty(document.check("GET", card.path, mutated))
        const extra = { ...card.reply, text: card.reply.text.replace(/^\{/, "{\"extra\":1,") }
        assert.isNotEmpty(document.check("GET", card.path, extra))
        const headers = new Headers(card.reply.headers)
        headers.delete("x-request-id")
        assert.isNotEmpty(document.check("GET", card.path, { ...card.reply, headers }))
        assert.isNotEmpty(document.check("GET", card.path, { ...card.reply, status: 418 }))
        const badReplay = new Headers(card.reply.headers)
        badReplay.set("idempotent-replayed", "yes")
        const created = replies.find(({ reply }) => reply.status === 201)
        assert.isDefined(created)
        if (created !== undefined) {
          assert.isNotEmpty(document.check("POST", created.path, { ...created.reply, headers: badReplay, text: created.reply.text }))
        }
      }
    }), { timeout: 60_000 })
})
