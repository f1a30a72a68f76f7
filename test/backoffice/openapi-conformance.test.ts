/**
 * Real answers match the back office's OpenAPI document, as the public
 * API's do (test/api/openapi-conformance.test.ts): every operation of `/api/crm/v1` is driven over HTTP through its success and each
 * error status it documents, and every answer (status, documented headers
 * such as Retry-After and X-Request-Id, and the body) is checked against the
 * served document's schema for that operation and status (ajv, JSON Schema
 * 2020-12, standard formats; test/support/OpenApiDocument.ts, the helper of
 * test/api/openapi-conformance.test.ts). The coverage check is exact and
 * leaves nothing out: every documented (operation, status) is seen, 500 and
 * 503 included (a table renamed away; statements cancelled while they wait
 * on a lock, as a statement timeout cancels them). The check can fail: a
 * mutated body, a missing or malformed header and an undocumented status are
 * refused.
 *
 * One server, one database: a `pro` school with one employee per role
 * (signed in through the API, by `Authorization: Session <token>`; the
 * `crm_session` cookie where the cross-site request forgery rule needs it),
 * and a `basic` school for TARIFF_TOO_LOW. Webhook deliveries are written
 * with SQL where the dispatcher would write them; the webhook limits
 * (docs/back-office.md "Webhook limits") are reached at their defaults: a
 * subscription's 11th action within a minute (429 with Retry-After) and the
 * school's 21st subscription (409).
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { HostResolver, type Resolve } from "@school/api/http/backoffice/Webhooks"
import { BACK_OFFICE_OPENAPI_PATH, MAX_BODY_BYTES } from "@school/api/Server"
import { COOKIE_PATH, type Role } from "@school/domain/Sessions"
import * as BackOffice from "../support/BackOffice.ts"
import type { RawReply } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { openApiDocument } from "../support/OpenApiDocument.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const CRM = BackOffice.CRM
const HOOK = "https://hooks.example.test/in"
const MISSING_ID = 2_147_483_000

/** A receiver host that resolves to a public address, without asking real DNS. */
const resolve: Resolve = (host) =>
  host === "hooks.example.test" ? Effect.succeed(["93.184.215.14"]) : Effect.fail(`${host} does not resolve`)

const Env = TestServer.layer().pipe(
  Layer.provide(Layer.succeed(HostResolver, resolve)),
  Layer.provideMerge(TestDatabase.layer)
)

/** The document's paths, as far as this test reads them: which operations take a body. */
const Paths = Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Struct({ requestBody: Schema.optional(Schema.Unknown) })))

/** How a request authenticates: a role's session by header or by cookie, a made-up token, or nothing. */
type As =
  | { readonly session: Role }
  | { readonly cookie: Role }
  | { readonly token: string }
  | { readonly tariff: "basic" }
  | undefined

interface Call {
  readonly as?: As
  readonly method?: string
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string>>
}

layer(Env, { excludeTestServices: true })("the back office answers as its OpenAPI document says", (it) => {
  it.effect("every operation, success and each error, matches its documented status, headers and body", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const sql = yield* SqlClient.SqlClient
      const document = openApiDocument((yield* server.raw.get(BACK_OFFICE_OPENAPI_PATH)).json)
      const exercised = new Set<string>()
      const problems: Array<string> = []
      const replies: Array<{ readonly method: string; readonly path: string; readonly reply: RawReply }> = []
      const school = yield* BackOffice.staffSchool("pro")
      const basic = yield* BackOffice.staffSchool("basic")
      const tokens: Partial<Record<Role, string>> = {}
      let basicToken = ""

      const call = (path: string, request: Call = {}) =>
        Effect.gen(function*() {
          const method = request.method ?? "GET"
          const as = request.as
          const headers: Record<string, string> = {}
          if (method !== "GET") headers["content-type"] = "application/json"
          if (as !== undefined) {
            if ("session" in as) headers["authorization"] = `Session ${tokens[as.session] ?? ""}`
            else if ("cookie" in as) headers["cookie"] = `crm_session=${tokens[as.cookie] ?? ""}`
            else if ("token" in as) headers["authorization"] = `Session ${as.token}`
            else headers["authorization"] = `Session ${basicToken}`
          }
          const reply = yield* server.raw.request(`${CRM}${path}`, {
            method,
            headers: { ...headers, ...request.headers },
            ...(request.body === undefined ? {} : { body: request.body })
          })
          const operation = document.operationOf(method, `${CRM}${path}`)
          assert.isDefined(operation, `${method} ${path}`)
          exercised.add(`${operation} ${reply.status}`)
          problems.push(...document.check(method, `${CRM}${path}`, reply))
          replies.push({ method, path: `${CRM}${path}`, reply })
          return reply
        })
      const expect = (status: number, path: string, request: Call = {}) =>
        Effect.map(call(path, request), (reply) => {
          assert.strictEqual(reply.status, status, `${request.method ?? "GET"} ${path}: ${reply.text.slice(0, 300)}`)
          return reply
        })
      /** An error answer: its status and code, and the fields a 422 names. */
      const refused = (status: number, code: string, path: string, request: Call = {}, fields?: ReadonlyArray<string>) =>
        Effect.map(expect(status, path, request), (reply) => {
          const error = BackOffice.expectError(reply, status, code)
          if (fields !== undefined) assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), [...fields].sort(), path)
          return error
        })
      const dataOf = (reply: RawReply): Record<string, unknown> => {
        const data = (reply.json as { data?: unknown }).data
        assert.isObject(data, reply.text)
        return data as Record<string, unknown>
      }
      const idOf = (reply: RawReply) => Number(dataOf(reply)["id"])

      // Sign-in: 201 for each role (the cookie is set too), 401, 422, 429 after the free failures.
      for (const role of BackOffice.ROLES) {
        const reply = yield* expect(201, "/sessions", {
          method: "POST",
          body: { email: school.emails[role], password: BackOffice.PASSWORD }
        })
        tokens[role] = String(dataOf(reply)["token"])
        const cookie = reply.headers.get("set-cookie") ?? ""
        assert.include(cookie, `crm_session=${tokens[role]}`)
        // The cookie is sent on every path of the back office, so the cookie calls below are what a browser sends.
        assert.include(cookie, `Path=${COOKIE_PATH}`)
        assert.isTrue(CRM.startsWith(`${COOKIE_PATH}/`))
      }
      basicToken = String(dataOf(yield* expect(201, "/sessions", {
        method: "POST",
        body: { email: basic.emails.owner, password: BackOffice.PASSWORD }
      }))["token"])
      yield* refused(401, "UNAUTHENTICATED", "/sessions", { method: "POST", body: { email: school.emails.owner, password: "wrong password" } })
      yield* refused(422, "VALIDATION_FAILED", "/sessions", { method: "POST", body: { email: "", password: 5 } }, ["email", "password"])
      {
        const email = `nobody-${Date.now()}@conformance.test`
        for (let i = 0; i < 5; i++) {
          yield* refused(401, "UNAUTHENTICATED", "/sessions", { method: "POST", body: { email, password: "wrong password" } })
        }
        const throttled = yield* refused(429, "TOO_MANY_ATTEMPTS", "/sessions", { method: "POST", body: { email, password: "wrong password" } })
        assert.isString(throttled.message)
      }

      // The records the operations act on.
      const { filialId } = school
      const [studentId = 0, otherId = 0] = yield* Fixtures.students(school.schoolId, filialId, 2, "Conformance")
      const fullId = yield* Fixtures.group(school.schoolId, filialId, "Full", 1)
      yield* Fixtures.enroll(school.schoolId, otherId, fullId)
      const owner = { session: "owner" } as const
      const manager = { session: "manager" } as const
      const teacher = { session: "teacher" } as const

      // Every operation with a session: 401 without one and with an unknown token.
      const unauthenticated = (method: string, path: string, body?: unknown) =>
        Effect.gen(function*() {
          yield* refused(401, "UNAUTHENTICATED", path, { method, ...(body === undefined ? {} : { body }) })
          yield* refused(401, "UNAUTHENTICATED", path, { method, as: { token: "not-a-session" }, ...(body === undefined ? {} : { body }) })
        })

      // The caller's session.
      yield* expect(200, "/sessions/current", { as: owner })
      yield* expect(200, "/sessions/current", { as: { cookie: "owner" } })
      yield* unauthenticated("GET", "/sessions/current")
      yield* unauthenticated("DELETE", "/sessions/current")
      // A state-changing call by cookie without the JSON content type fails the CSRF check.
      yield* refused(403, "FORBIDDEN", "/sessions/current", { method: "DELETE", as: { cookie: "teacher" }, headers: { "content-type": "text/plain" } })

      // Staff.
      const employee = { name: "Nina New", email: `nina-${Date.now()}@conformance.test`, password: "long enough password", role: "teacher" }
      const ninaId = idOf(yield* expect(201, "/employees", { method: "POST", as: owner, body: employee }))
      yield* refused(409, "CONFLICT", "/employees", { method: "POST", as: owner, body: employee })
      yield* refused(422, "VALIDATION_FAILED", "/employees", { method: "POST", as: owner, body: { ...employee, role: "owner", password: "short" } }, ["password", "role"])
      yield* refused(403, "FORBIDDEN", "/employees", { method: "POST", as: manager, body: employee })
      yield* unauthenticated("POST", "/employees", employee)
      yield* expect(200, "/employees?per_page=1", { as: owner })
      yield* refused(422, "VALIDATION_FAILED", "/employees?page=1.5", { as: owner }, ["page"])
      yield* refused(403, "FORBIDDEN", "/employees", { as: teacher })
      yield* unauthenticated("GET", "/employees")
      // Offboarding: a change, ending sessions (docs/back-office.md "Staff").
      yield* expect(200, `/employees/${ninaId}`, { method: "PATCH", as: owner, body: { role: "manager", disabled: false } })
      yield* refused(422, "VALIDATION_FAILED", `/employees/${ninaId}`, { method: "PATCH", as: owner, body: { role: "owner" } }, ["role"])
      yield* refused(403, "FORBIDDEN", `/employees/${ninaId}`, { method: "PATCH", as: manager, body: { disabled: true } })
      yield* refused(404, "NOT_FOUND", "/employees/2147483000", { method: "PATCH", as: owner, body: { disabled: true } })
      yield* unauthenticated("PATCH", `/employees/${ninaId}`, { disabled: true })
      yield* expect(200, `/employees/${ninaId}/sessions`, { method: "DELETE", as: owner })
      yield* refused(403, "FORBIDDEN", `/employees/${ninaId}/sessions`, { method: "DELETE", as: teacher })
      yield* refused(404, "NOT_FOUND", "/employees/2147483000/sessions", { method: "DELETE", as: owner })
      yield* refused(422, "VALIDATION_FAILED", "/employees/x/sessions", { method: "DELETE", as: owner }, ["id"])
      yield* unauthenticated("DELETE", `/employees/${ninaId}/sessions`)
      // The caller's own password (docs/back-office.md "Signing in"): the basic school's owner, whose session stays.
      const newPassword = { current_password: BackOffice.PASSWORD, new_password: "another long password" }
      yield* refused(422, "VALIDATION_FAILED", "/sessions/current/password", {
        method: "POST",
        as: { tariff: "basic" },
        body: { ...newPassword, current_password: "not the password" }
      }, ["current_password"])
      // Wrong current passwords count like failed sign-ins (docs/back-office.md "Signing in"): five, then 429.
      for (let i = 0; i < 5; i++) {
        yield* refused(422, "VALIDATION_FAILED", "/sessions/current/password", {
          method: "POST",
          as: teacher,
          body: { ...newPassword, current_password: `not the password ${i}` }
        }, ["current_password"])
      }
      yield* refused(429, "TOO_MANY_ATTEMPTS", "/sessions/current/password", { method: "POST", as: teacher, body: newPassword })
      yield* refused(403, "FORBIDDEN", "/sessions/current/password", {
        method: "POST",
        as: { cookie: "teacher" },
        body: newPassword,
        headers: { "content-type": "text/plain" }
      })
      yield* unauthenticated("POST", "/sessions/current/password", newPassword)
      yield* expect(200, "/sessions/current/password", { method: "POST", as: { tariff: "basic" }, body: newPassword })

      // API keys.
      const key = yield* expect(201, "/api-keys", { method: "POST", as: owner, body: { name: "site", scope: "read" } })
      const keyId = idOf(key)
      yield* refused(403, "TARIFF_TOO_LOW", "/api-keys", { method: "POST", as: { tariff: "basic" }, body: { name: "site", scope: "read" } })
      yield* refused(403, "FORBIDDEN", "/api-keys", { method: "POST", as: manager, body: { name: "site", scope: "read" } })
      yield* refused(422, "VALIDATION_FAILED", "/api-keys", { method: "POST", as: owner, body: { name: "site", scope: "admin" } }, ["scope"])
      yield* unauthenticated("POST", "/api-keys", { name: "site", scope: "read" })
      yield* expect(200, "/api-keys", { as: owner })
      yield* refused(422, "VALIDATION_FAILED", "/api-keys?per_page=0", { as: owner }, ["per_page"])
      yield* refused(403, "FORBIDDEN", "/api-keys", { as: manager })
      yield* unauthenticated("GET", "/api-keys")
      yield* expect(200, `/api-keys/${keyId}`, { method: "DELETE", as: owner })
      yield* refused(404, "NOT_FOUND", `/api-keys/${MISSING_ID}`, { method: "DELETE", as: owner })
      yield* refused(422, "VALIDATION_FAILED", "/api-keys/x", { method: "DELETE", as: owner }, ["id"])
      yield* refused(403, "FORBIDDEN", `/api-keys/${keyId}`, { method: "DELETE", as: teacher })
      yield* unauthenticated("DELETE", `/api-keys/${keyId}`)

      // Webhooks.
      const subscription = { url: HOOK, events: ["student.created"] }
      const hookId = idOf(yield* expect(201, "/webhooks", { method: "POST", as: owner, body: subscription }))
      const disabledId = idOf(yield* expect(201, "/webhooks", { method: "POST", as: owner, body: subscription }))
      yield* refused(422, "VALIDATION_FAILED", "/webhooks", { method: "POST", as: owner, body: { url: "", events: ["webhook.test"] } }, ["url", "events"])
      yield* refused(403, "FORBIDDEN", "/webhooks", { method: "POST", as: manager, body: subscription })
      yield* unauthenticated("POST", "/webhooks", subscription)
      yield* expect(200, "/webhooks", { as: owner })
      yield* refused(422, "VALIDATION_FAILED", "/webhooks?page=0", { as: owner }, ["page"])
      yield* refused(403, "FORBIDDEN", "/webhooks", { as: teacher })
      yield* unauthenticated("GET", "/webhooks")
      const event = Number((yield* sql<{ id: number }>`
        INSERT INTO outbox_events (school_id, event, payload, fanned_out_at)
        VALUES (${school.schoolId}, 'student.created',
                json_build_object('student_id', 1, 'student_name', 'Ann', 'filial_id', 0), now())
        RETURNING id::float8 AS id`)[0]?.id)
      const delivery = (subscriptionId: number) =>
        Effect.map(
          sql<{ id: number }>`
            INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, body, status, attempts,
                                            response_code, last_attempt_at, finished_at)
            VALUES (${school.schoolId}, ${subscriptionId}, ${event}, 'student.created', '{}', 'failed', 4, 500,
                    '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')
            RETURNING id::float8 AS id`,
          (rows) => Number(rows[0]?.id)
        )
      const deliveryId = yield* delivery(hookId)
      const disabledDelivery = yield* delivery(disabledId)
      yield* sql`
        INSERT INTO webhook_attempts (school_id, delivery_id, attempt, at, response_code, error, duration_ms)
        VALUES (${school.schoolId}, ${deliveryId}::int8, 1, '2026-01-01T00:00:00Z', 500, NULL, 12)`
      yield* expect(200, `/webhooks/${disabledId}/disable`, { method: "POST", as: owner })
      const byId = [
        ["GET", "get", undefined, manager],
        ["PATCH", "update", { events: ["lead.created", "student.created"] }, manager],
        ["POST", "disable", undefined, teacher],
        ["POST", "enable", undefined, manager],
        ["POST", "test", undefined, teacher],
        ["GET", "deliveries", undefined, teacher],
        ["POST", "recover", { since: "2025-12-31T00:00:00Z" }, manager]
      ] as const
      for (const [method, name, body, forbidden] of byId) {
        const path = (id: number | string) => name === "get" || name === "update" ? `/webhooks/${id}` : `/webhooks/${id}/${name}`
        const withBody = body === undefined ? {} : { body }
        yield* expect(name === "test" || name === "recover" ? 202 : 200, path(hookId), { method, as: owner, ...withBody })
        yield* refused(404, "NOT_FOUND", path(MISSING_ID), { method, as: owner, ...withBody })
        yield* refused(422, "VALIDATION_FAILED", path("1.5"), { method, as: owner, ...withBody }, ["id"])
        yield* refused(403, "FORBIDDEN", path(hookId), { method, as: forbidden, ...withBody })
        yield* unauthenticated(method, path(hookId), body)
      }
      yield* refused(422, "VALIDATION_FAILED", `/webhooks/${hookId}`, { method: "PATCH", as: owner, body: {} }, ["url", "events"])
      yield* refused(422, "VALIDATION_FAILED", `/webhooks/${hookId}/recover`, { method: "POST", as: owner, body: { since: "yesterday" } }, ["since"])
      yield* refused(409, "CONFLICT", `/webhooks/${disabledId}/test`, { method: "POST", as: owner })
      yield* refused(409, "CONFLICT", `/webhooks/${disabledId}/recover`, { method: "POST", as: owner, body: { since: "2025-12-31T00:00:00Z" } })
      for (const [method, name, status] of [["GET", "", 200], ["POST", "/resend", 202]] as const) {
        const path = (id: number | string) => `/webhooks/${hookId}/deliveries/${id}${name}`
        yield* expect(status, path(deliveryId), { method, as: owner })
        yield* refused(404, "NOT_FOUND", path(disabledDelivery), { method, as: owner })
        yield* refused(422, "VALIDATION_FAILED", path("0"), { method, as: owner }, ["delivery_id"])
        yield* refused(403, "FORBIDDEN", path(deliveryId), { method, as: manager })
        yield* unauthenticated(method, path(deliveryId))
      }
      yield* refused(409, "CONFLICT", `/webhooks/${disabledId}/deliveries/${disabledDelivery}/resend`, { method: "POST", as: owner })
      yield* refused(422, "VALIDATION_FAILED", `/webhooks/${hookId}/recover`, {
        method: "POST",
        as: owner,
        body: { since: "2025-12-31T00:00:00Z", which: "all" }
      }, ["which"])
      yield* expect(202, `/webhooks/${hookId}/recover`, { method: "POST", as: owner, body: { since: "2025-12-31T00:00:00Z", which: "skipped" } })

      // The limits (docs/back-office.md "Webhook limits"): a subscription's 11th action within a minute is 429 with
      // Retry-After, whichever action it is; the school's 21st subscription is 409.
      const busyId = idOf(yield* expect(201, "/webhooks", { method: "POST", as: owner, body: subscription }))
      const busyDelivery = yield* delivery(busyId)
      for (let i = 0; i < 10; i++) yield* expect(202, `/webhooks/${busyId}/test`, { method: "POST", as: owner })
      yield* refused(429, "TOO_MANY_ATTEMPTS", `/webhooks/${busyId}/test`, { method: "POST", as: owner })
      yield* refused(429, "TOO_MANY_ATTEMPTS", `/webhooks/${busyId}/deliveries/${busyDelivery}/resend`, { method: "POST", as: owner })
      yield* refused(429, "TOO_MANY_ATTEMPTS", `/webhooks/${busyId}/recover`, { method: "POST", as: owner, body: { since: "2025-12-31T00:00:00Z" } })
      const subscriptions = Number((yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM webhook_subscriptions WHERE school_id = ${school.schoolId}`)[0]?.n)
      for (let i = subscriptions; i < 20; i++) yield* expect(201, "/webhooks", { method: "POST", as: owner, body: subscription })
      yield* refused(409, "CONFLICT", "/webhooks", { method: "POST", as: owner, body: subscription })

      // Deletion: 200, then 404; 422 for a bad id; 403 for a manager; 401 without a session.
      yield* expect(200, `/webhooks/${busyId}`, { method: "DELETE", as: owner })
      yield* refused(404, "NOT_FOUND", `/webhooks/${busyId}`, { method: "DELETE", as: owner })
      yield* refused(422, "VALIDATION_FAILED", "/webhooks/1.5", { method: "DELETE", as: owner }, ["id"])
      yield* refused(403, "FORBIDDEN", `/webhooks/${hookId}`, { method: "DELETE", as: manager })
      yield* unauthenticated("DELETE", `/webhooks/${hookId}`)

      // Reference data, groups, lessons, students, payments: each a POST with a body.
      const subjectId = idOf(yield* expect(201, "/subjects", { method: "POST", as: owner, body: { name: "Maths" } }))
      const programId = idOf(yield* expect(201, "/programs", { method: "POST", as: owner, body: { name: "Algebra", subject_id: subjectId } }))
      const levelId = idOf(yield* expect(201, "/levels", { method: "POST", as: owner, body: { name: "A1", program_id: programId } }))
      const groupId = idOf(yield* expect(201, "/groups", {
        method: "POST",
        as: owner,
        body: { name: "Evening", filial_id: filialId, capacity: 10, subject_id: subjectId, level_id: levelId, teacher_id: school.ids.teacher }
      }))
      const lessonId = idOf(yield* expect(201, "/lessons", {
        method: "POST",
        as: owner,
        body: { group_id: groupId, starts_at: "2026-03-01T10:00:00Z", ends_at: "2026-03-01T11:00:00Z", topic: "Fractions" }
      }))
      const creates = [
        ["/filials", { name: "North", address: "North street 2" }, { name: "" }, ["name"], manager],
        ["/subjects", { name: "Physics" }, {}, ["name"], teacher],
        ["/programs", { name: "Mechanics" }, { name: "Optics", subject_id: MISSING_ID }, ["subject_id"], manager],
        ["/levels", { name: "B1" }, { name: "B2", program_id: "x" }, ["program_id"], teacher],
        ["/groups", { name: "Morning", filial_id: filialId, capacity: 5 }, { name: "Noon", filial_id: filialId, capacity: -1 }, ["capacity"], manager],
        [
          "/lessons",
          { group_id: groupId, starts_at: "2026-03-02T10:00:00Z", ends_at: "2026-03-02T11:00:00Z" },
          { group_id: groupId, starts_at: "2026-03-02T10:00:00Z", ends_at: "2026-03-02T09:00:00Z" },
          ["ends_at"],
          manager
        ],
        ["/students", { fio: "Sam Student", filial_id: filialId, phone: "+7 900 000-00-00" }, { fio: "Sam", filial_id: 0 }, ["filial_id"], teacher],
        ["/payments", { student_id: studentId, amount_kopecks: 150_000, payment_type: "card", group_id: groupId }, { student_id: studentId, amount_kopecks: 1, payment_type: "barter" }, ["payment_type"], teacher],
        ["/leads", { phone: "+7 900 111-22-33", name: "Lena", responsible_id: school.ids.manager }, { phone: "1" }, ["phone"], teacher]
      ] as const
      for (const [path, body, bad, fields, forbidden] of creates) {
        yield* expect(201, path, { method: "POST", as: owner, body })
        yield* refused(422, "VALIDATION_FAILED", path, { method: "POST", as: owner, body: bad }, fields)
        yield* refused(403, "FORBIDDEN", path, { method: "POST", as: forbidden, body })
        yield* unauthenticated("POST", path, body)
      }

      // Enrollment: 201, 404 (a student of no one), 409 GROUP_FULL and ALREADY_ENROLLED, 422, 403.
      const enrollment = `/students/${studentId}/enrollments`
      yield* expect(201, enrollment, { method: "POST", as: manager, body: { group_id: groupId } })
      yield* refused(409, "ALREADY_ENROLLED", enrollment, { method: "POST", as: owner, body: { group_id: groupId } })
      yield* refused(409, "GROUP_FULL", enrollment, { method: "POST", as: owner, body: { group_id: fullId } })
      yield* refused(404, "NOT_FOUND", `/students/${MISSING_ID}/enrollments`, { method: "POST", as: owner, body: { group_id: groupId } })
      yield* refused(422, "VALIDATION_FAILED", enrollment, { method: "POST", as: owner, body: { group_id: "x" } }, ["group_id"])
      yield* refused(403, "FORBIDDEN", enrollment, { method: "POST", as: teacher, body: { group_id: groupId } })
      yield* unauthenticated("POST", enrollment, { group_id: groupId })

      // Attendance: 200 (the teacher), 404, 422, 403 (a manager).
      const attendance = `/lessons/${lessonId}/attendance`
      const mark = { student_id: studentId, visit_status: 1 }
      yield* expect(200, attendance, { method: "POST", as: teacher, body: mark })
      yield* refused(404, "NOT_FOUND", `/lessons/${MISSING_ID}/attendance`, { method: "POST", as: owner, body: mark })
      yield* refused(422, "VALIDATION_FAILED", attendance, { method: "POST", as: owner, body: { student_id: studentId, visit_status: 4 } }, ["visit_status"])
      yield* refused(403, "FORBIDDEN", attendance, { method: "POST", as: manager, body: mark })
      yield* unauthenticated("POST", attendance, mark)

      // Leads and funnels: a funnel whose status makes a task and a notification for the lead's responsible.
      const funnel = yield* expect(201, "/funnels", {
        method: "POST",
        as: owner,
        body: { name: "Courses", statuses: [{ name: "New", priority: 10 }, { name: "Call", priority: 20, auto_task_title: "Call back" }] }
      })
      const funnelData = dataOf(funnel)
      const statuses = funnelData["statuses"] as ReadonlyArray<{ readonly id: number; readonly name: string }>
      const callStatus = statuses.find((status) => status.name === "Call")?.id ?? 0
      yield* refused(422, "VALIDATION_FAILED", "/funnels", {
        method: "POST",
        as: owner,
        body: { name: "Twice", statuses: [{ name: "A", priority: 1 }, { name: "B", priority: 1 }] }
      }, ["statuses"])
      yield* refused(403, "FORBIDDEN", "/funnels", { method: "POST", as: manager, body: { name: "X", statuses: [{ name: "A", priority: 1 }] } })
      yield* unauthenticated("POST", "/funnels", { name: "X", statuses: [{ name: "A", priority: 1 }] })
      const leadId = idOf(yield* expect(201, "/leads", {
        method: "POST",
        as: manager,
        body: { phone: "+7 900 222-33-44", funnel_id: Number(funnelData["id"]), responsible_id: school.ids.manager }
      }))
      const move = `/leads/${leadId}/status`
      yield* expect(200, move, { method: "POST", as: manager, body: { status_id: callStatus } })
      yield* refused(404, "NOT_FOUND", `/leads/${MISSING_ID}/status`, { method: "POST", as: owner, body: { status_id: callStatus } })
      yield* refused(422, "VALIDATION_FAILED", move, { method: "POST", as: owner, body: { status_id: 0 } }, ["status_id"])
      yield* refused(403, "FORBIDDEN", move, { method: "POST", as: teacher, body: { status_id: callStatus } })
      yield* unauthenticated("POST", move, { status_id: callStatus })
      for (const path of ["/leads", "/funnels"]) {
        yield* expect(200, path, { as: manager })
        yield* refused(422, "VALIDATION_FAILED", `${path}?per_page=101`, { as: owner }, ["per_page"])
        yield* refused(403, "FORBIDDEN", path, { as: teacher })
        yield* unauthenticated("GET", path)
      }

      // The inbox: the manager's notification from the move, read once; tasks.
      const notifications = yield* expect(200, "/notifications", { as: manager })
      const notificationId = Number(((notifications.json as { data: ReadonlyArray<{ id: number }> }).data[0])?.id)
      yield* expect(200, `/notifications/${notificationId}/read`, { method: "POST", as: manager })
      yield* refused(404, "NOT_FOUND", `/notifications/${notificationId}/read`, { method: "POST", as: teacher })
      yield* refused(422, "VALIDATION_FAILED", "/notifications/x/read", { method: "POST", as: manager }, ["id"])
      yield* refused(403, "FORBIDDEN", `/notifications/${notificationId}/read`, {
        method: "POST",
        as: { cookie: "manager" },
        headers: { "content-type": "application/json", origin: "https://elsewhere.example" }
      })
      yield* unauthenticated("POST", `/notifications/${notificationId}/read`)
      for (const path of ["/notifications", "/tasks"]) {
        yield* expect(200, path, { as: owner })
        yield* refused(422, "VALIDATION_FAILED", `${path}?page=x`, { as: teacher }, ["page"])
        yield* unauthenticated("GET", path)
      }

      // Every operation that takes a body refuses one that is too large (413) or not JSON (415) before it runs.
      const operationsWithBody = Object.entries(Schema.decodeUnknownSync(Paths)(document.json["paths"])).flatMap(([path, operations]) =>
        Object.entries(operations).flatMap(([method, operation]) =>
          operation.requestBody === undefined ? [] : [[method.toUpperCase(), path.slice(CRM.length).replace(/\{[^}]+\}/g, "1")] as const]
        )
      )
      assert.strictEqual(operationsWithBody.length, 21)
      for (const [method, path] of operationsWithBody) {
        yield* refused(413, "PAYLOAD_TOO_LARGE", path, { method, as: owner, body: { pad: "x".repeat(MAX_BODY_BYTES) } })
        yield* refused(415, "UNSUPPORTED_MEDIA_TYPE", path, { method, as: owner, body: "name=x", headers: { "content-type": "text/plain" } })
      }

      // Sign out last: the token stops working.
      yield* expect(200, "/sessions/current", { method: "DELETE", as: { cookie: "administrator" } })
      yield* refused(401, "UNAUTHENTICATED", "/sessions/current", { as: { session: "administrator" } })

      // Every operation once more, as a request that passes everything but the database: ids of 1 in
      // the path, the owner's session (sign-in: a known e-mail) and a JSON body.
      const everyOperation = document.operations.map((operation) => {
        const [method = "", path = ""] = operation.split(" ")
        const route = path.slice(CRM.length).replace(/\{[^}]+\}/g, "1")
        const request: Call = route === "/sessions"
          ? { method: "POST", body: { email: school.emails.owner, password: BackOffice.PASSWORD } }
          : { method: method.toUpperCase(), as: owner, ...(method === "get" ? {} : { body: {} }) }
        return [route, request] as const
      })
      assert.strictEqual(everyOperation.length, 41)
      // What every call reads first: the session's routing table (sign-in: its failure count).
      const firstRead = sql`session_tokens, login_failures`

      // 500 INTERNAL_ERROR: that table is gone (renamed), an unexpected failure; logged, never sent.
      const [, failures] = yield* server.expectingLogs(Effect.gen(function*() {
        yield* sql`ALTER TABLE session_tokens RENAME TO session_tokens_moved`
        yield* sql`ALTER TABLE login_failures RENAME TO login_failures_moved`
        for (const [path, request] of everyOperation) {
          const error = yield* refused(500, "INTERNAL_ERROR", path, request)
          assert.notMatch(error.message, /session_tokens|login_failures|relation/, path)
        }
      }).pipe(Effect.ensuring(Effect.orDie(Effect.andThen(
        sql`ALTER TABLE IF EXISTS session_tokens_moved RENAME TO session_tokens`,
        sql`ALTER TABLE IF EXISTS login_failures_moved RENAME TO login_failures`
      )))))
      assert.deepStrictEqual(new Set(failures.map((entry) => `${entry.level} ${entry.message}`)), new Set(["Error request failed"]))
      assert.strictEqual(failures.length, everyOperation.length)

      // 503 SERVICE_UNAVAILABLE with Retry-After: the table is locked and each statement waiting on it is
      // cancelled, as a statement past DATABASE_STATEMENT_TIMEOUT is (57014, query_canceled).
      const [unavailable, warnings] = yield* server.expectingLogs(Effect.gen(function*() {
        const release = yield* Deferred.make<void>()
        const locked = yield* Deferred.make<void>()
        const holder = yield* Effect.forkChild(Effect.orDie(sql.withTransaction(Effect.gen(function*() {
          yield* sql`LOCK TABLE ${firstRead} IN ACCESS EXCLUSIVE MODE`
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(release)
        }))))
        yield* Deferred.await(locked)
        const requests = yield* Effect.forkChild(Effect.forEach(
          everyOperation,
          ([path, request]) => refused(503, "SERVICE_UNAVAILABLE", path, request),
          { concurrency: "unbounded" }
        ))
        const canceller = yield* Effect.forkChild(Effect.forever(Effect.andThen(
          sql`SELECT pg_cancel_backend(pid) FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
          Effect.sleep(Duration.millis(20))
        )).pipe(Effect.orDie))
        const errors = yield* Fiber.join(requests)
        yield* Fiber.interrupt(canceller)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        return errors
      }))
      assert.strictEqual(unavailable.length, everyOperation.length)
      assert.deepStrictEqual(
        new Set(warnings.map((entry) => `${entry.level} ${entry.message}`)),
        new Set(["Warn request failed: the database is unavailable"])
      )
      for (const reply of replies.filter(({ reply }) => reply.status === 503)) {
        assert.match(reply.reply.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/, reply.path)
      }

      assert.deepStrictEqual(problems, [])
      // Every documented answer was seen: none is left out as one a test cannot cause.
      const missing = document.responses.filter((response) => !exercised.has(response))
      assert.deepStrictEqual(missing, [])

      // Negative controls: the same check refuses a mutated body, a missing header and an undocumented status.
      const keys = replies.find(({ method, path, reply }) => method === "GET" && path === `${CRM}/api-keys` && reply.status === 200)
      assert.isDefined(keys)
      if (keys !== undefined) {
        const mutated = { ...keys.reply, text: keys.reply.text.replace(`"id":${keyId}`, `"id":"${keyId}"`) }
        assert.notStrictEqual(mutated.text, keys.reply.text)
        assert.isNotEmpty(document.check("GET", keys.path, mutated))
        const noEnvelope = { ...keys.reply, text: keys.reply.text.replace("\"success\":true", "\"success\":false") }
        assert.notStrictEqual(noEnvelope.text, keys.reply.text)
        assert.isNotEmpty(document.check("GET", keys.path, noEnvelope))
        const headers = new Headers(keys.reply.headers)
        headers.delete("x-request-id")
        assert.isNotEmpty(document.check("GET", keys.path, { ...keys.reply, headers }))
        assert.isNotEmpty(document.check("GET", keys.path, { ...keys.reply, status: 418 }))
      }
      const throttled = replies.find(({ reply }) => reply.status === 429)
      assert.isDefined(throttled)
      if (throttled !== undefined) {
        const headers = new Headers(throttled.reply.headers)
        headers.set("retry-after", "soon")
        assert.isNotEmpty(document.check("POST", throttled.path, { ...throttled.reply, headers }))
        const wrongCode = { ...throttled.reply, text: throttled.reply.text.replace("TOO_MANY_ATTEMPTS", "SLOW_DOWN") }
        assert.isNotEmpty(document.check("POST", throttled.path, wrongCode))
      }
    }), { timeout: 60_000 })
})
