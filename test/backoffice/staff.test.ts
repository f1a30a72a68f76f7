/**
 * The back office's staff (docs/back-office.md "Staff") over a
 * real socket against a real database: POST /employees (a new member of
 * staff who can sign in at once; the password stored scrypt-hashed and never
 * shown; `owner` refused; the login e-mail unique across the service,
 * trimmed and lower-cased, also under concurrent creations), GET /employees
 * (paginated, only the caller's school), 422 with fields for every bad
 * field, 403 for manager and teacher before anything is decoded or written,
 * 401 without a session. And the request rules as properties.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { CREATABLE_ROLES, CreateEmployeeRequest, PASSWORD_MIN } from "@school/domain/Staff"
import { Meta } from "@school/domain/Pagination"
import { verifyPassword } from "@school/runtime/Passwords"
import * as BackOffice from "../support/BackOffice.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const strict = { onExcessProperty: "error" } as const
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u

const Member = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  email: Schema.String,
  role: Schema.Literals(["owner", "administrator", "manager", "teacher"]),
  created_at: Schema.String.check(Schema.isPattern(TIMESTAMP))
})
// The list also says whether each member is disabled (test/backoffice/offboarding.test.ts).
const ListedMember = Schema.Struct({ ...Member.fields, disabled: Schema.Boolean })
const MemberList = Schema.Struct({ success: Schema.Literal(true), data: Schema.Array(ListedMember), meta: Meta })

const listOf = (reply: { readonly status: number; readonly json: unknown; readonly text: string }) => {
  assert.strictEqual(reply.status, 200, reply.text)
  return Schema.decodeUnknownSync(MemberList)(reply.json, strict)
}

const NEW_PASSWORD = "ten chars!"

let emails = 0
const freshEmail = () => `staff${++emails}-${process.pid}@new.example`

const countStaff = Effect.fnUntraced(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ employees: number; logins: number }>`
    SELECT (SELECT count(*)::int FROM employees) AS employees, (SELECT count(*)::int FROM login_emails) AS logins`
  return rows[0]
}, Effect.orDie)

const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true })("back-office staff", (it) => {
  describe("POST /employees", () => {
    it.effect("the owner and an administrator add each creatable role: 201, stored hashed, routed, able to sign in", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const school = yield* BackOffice.staffSchool()
        const owner = yield* BackOffice.crm(school.emails.owner)
        const admin = yield* BackOffice.crm(school.emails.administrator)
        for (const [index, role] of CREATABLE_ROLES.entries()) {
          const by = index % 2 === 0 ? owner : admin
          const email = freshEmail()
          const reply = yield* by.post("/employees", {
            name: `  Nina ${role}  `,
            email: `  ${email.toUpperCase()} `,
            password: NEW_PASSWORD,
            role
          })
          const created = BackOffice.dataOf(Member, reply, 201)
          assert.deepStrictEqual({ ...created, id: 0, created_at: "" }, {
            id: 0,
            name: `Nina ${role}`,
            email,
            role,
            created_at: ""
          })

          const [row] = yield* sql<{ school_id: number; password_hash: string; login_school: number; login_employee: number }>`
            SELECT e.school_id, e.password_hash, l.school_id AS login_school, l.employee_id AS login_employee
            FROM employees e JOIN login_emails l ON l.email = e.email
            WHERE e.school_id = ${school.schoolId} AND e.id = ${created.id}`
          assert.isDefined(row)
          assert.strictEqual(row.login_school, school.schoolId)
          assert.strictEqual(row.login_employee, created.id)
          assert.match(row.password_hash, /^scrypt\$/u)
          assert.isTrue(yield* verifyPassword(NEW_PASSWORD, row.password_hash))
          assert.notInclude(reply.text, row.password_hash)
          assert.notInclude(reply.text, NEW_PASSWORD)

          // The new employee signs in at once, with the e-mail in any case, and has the role given.
          const signedIn = yield* BackOffice.signIn(`  ${email.toUpperCase()}`, NEW_PASSWORD)
          const server = yield* TestServer
          const current = yield* server.raw.request(`${BackOffice.CRM}/sessions/current`, {
            headers: { authorization: `Session ${signedIn}` }
          })
          const session = BackOffice.dataOf(Schema.Struct({ employee: Schema.Unknown, expires_at: Schema.String }), current)
          assert.deepStrictEqual(session.employee, { id: created.id, name: `Nina ${role}`, email, role })
        }
      }))

    it.effect("422 with fields: owner role, unknown role, bad e-mail, short password, blank name, missing fields; nothing written", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const owner = yield* BackOffice.crm(school.emails.owner)
        const before = yield* countStaff()
        const good = { name: "Nina", email: freshEmail(), password: NEW_PASSWORD, role: "teacher" }
        const cases: ReadonlyArray<readonly [unknown, ReadonlyArray<string>]> = [
          [{ ...good, role: "owner" }, ["role"]],
          [{ ...good, role: "director" }, ["role"]],
          [{ ...good, role: "Teacher" }, ["role"]],
          [{ ...good, role: 1 }, ["role"]],
          [{ ...good, email: "not an e-mail" }, ["email"]],
          [{ ...good, email: "nina@nowhere" }, ["email"]],
          [{ ...good, email: "" }, ["email"]],
          [{ ...good, email: `${"x".repeat(320)}@a.example` }, ["email"]],
          [{ ...good, password: "nine char" }, ["password"]],
          [{ ...good, password: "😀😀😀😀😀" }, ["password"]],
          [{ ...good, password: "x".repeat(1025) }, ["password"]],
          [{ ...good, password: 1234567890 }, ["password"]],
          [{ ...good, name: "   " }, ["name"]],
          [{ ...good, name: "x".repeat(256) }, ["name"]],
          [{ ...good, name: "a\u0000b" }, ["name"]],
          [{}, ["email", "name", "password", "role"]],
          [{ ...good, name: "", email: "x", password: "short", role: "owner" }, ["email", "name", "password", "role"]]
        ]
        for (const [body, fields] of cases) {
          const error = BackOffice.expectError(yield* owner.post("/employees", body), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), fields, JSON.stringify(body))
        }
        const ownerRole = BackOffice.expectError(yield* owner.post("/employees", { ...good, role: "owner" }), 422, "VALIDATION_FAILED")
        assert.match(String(ownerRole.fields?.["role"]), /owner cannot be created/u)
        const short = BackOffice.expectError(yield* owner.post("/employees", { ...good, password: "123456789" }), 422, "VALIDATION_FAILED")
        assert.match(String(short.fields?.["password"]), /at least 10/u)
        const notJson = yield* owner.post("/employees", "{")
        BackOffice.expectError(notJson, 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(yield* countStaff(), before)

        // Exactly ten characters is enough.
        BackOffice.dataOf(Member, yield* owner.post("/employees", { ...good, password: "0123456789" }), 201)
      }))

    it.effect("a login e-mail already taken anywhere (this school, another, any case or spacing): 409 CONFLICT with fields.email", () =>
      Effect.gen(function*() {
        const a = yield* BackOffice.staffSchool()
        const b = yield* BackOffice.staffSchool()
        const owner = yield* BackOffice.crm(a.emails.owner)
        const mine = freshEmail()
        BackOffice.dataOf(Member, yield* owner.post("/employees", { name: "Nina", email: mine, password: NEW_PASSWORD, role: "manager" }), 201)
        const before = yield* countStaff()
        for (const email of [mine, ` ${mine.toUpperCase()} `, a.emails.teacher, b.emails.owner, b.emails.manager.toUpperCase()]) {
          const reply = yield* owner.post("/employees", { name: "Copy", email, password: NEW_PASSWORD, role: "teacher" })
          const error = BackOffice.expectError(reply, 409, "CONFLICT")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["email"], reply.text)
        }
        assert.deepStrictEqual(yield* countStaff(), before)
      }))

    it.effect("concurrent creations with one e-mail (two schools, any case): exactly one 201, the others 409", () =>
      Effect.gen(function*() {
        const a = yield* BackOffice.staffSchool()
        const b = yield* BackOffice.staffSchool()
        const sessions = [
          yield* BackOffice.crm(a.emails.owner),
          yield* BackOffice.crm(a.emails.administrator),
          yield* BackOffice.crm(b.emails.owner),
          yield* BackOffice.crm(b.emails.administrator)
        ]
        for (let round = 0; round < 3; round++) {
          const email = freshEmail()
          const spellings = [email, email.toUpperCase(), ` ${email}`, `${email} `]
          const replies = yield* Effect.forEach(
            Array.from({ length: 8 }, (_, i) => i),
            (i) =>
              sessions[i % sessions.length]!.post("/employees", {
                name: `Racer ${i}`,
                email: spellings[i % spellings.length],
                password: NEW_PASSWORD,
                role: "teacher"
              }),
            { concurrency: "unbounded" }
          )
          const statuses = replies.map((reply) => reply.status).sort()
          assert.deepStrictEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409], replies.map((r) => r.text).join("\n"))
          for (const reply of replies) {
            if (reply.status === 409) BackOffice.expectError(reply, 409, "CONFLICT")
          }
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM employees WHERE email = ${email}`
          assert.deepStrictEqual(rows, [{ n: 1 }])
        }
      }))
  })

  describe("GET /employees", () => {
    it.effect("the school's staff only, by ascending id, paginated with meta; never a password or hash", () =>
      Effect.gen(function*() {
        const a = yield* BackOffice.staffSchool()
        const b = yield* BackOffice.staffSchool()
        const owner = yield* BackOffice.crm(a.emails.owner)
        const added: Array<number> = []
        for (let i = 0; i < 3; i++) {
          const reply = yield* owner.post("/employees", { name: `Extra ${i}`, email: freshEmail(), password: NEW_PASSWORD, role: "teacher" })
          added.push(BackOffice.dataOf(Member, reply, 201).id)
        }
        const expectedIds = [a.ids.owner, a.ids.administrator, a.ids.manager, a.ids.teacher, ...added]

        const all = listOf(yield* owner.get("/employees"))
        assert.deepStrictEqual(all.meta, { page: 1, per_page: 20, total: 7 })
        assert.deepStrictEqual(all.data.map((member) => member.id), expectedIds)
        assert.deepStrictEqual(all.data.map((member) => member.role), ["owner", "administrator", "manager", "teacher", "teacher", "teacher", "teacher"])
        assert.strictEqual(all.data[0]?.email, a.emails.owner)
        assert.notMatch(JSON.stringify(all), /scrypt|password/u)

        const second = listOf(yield* owner.get("/employees?page=2&per_page=3"))
        assert.deepStrictEqual(second.meta, { page: 2, per_page: 3, total: 7 })
        assert.deepStrictEqual(second.data.map((member) => member.id), expectedIds.slice(3, 6))
        const past = listOf(yield* owner.get("/employees?page=9&per_page=100"))
        assert.deepStrictEqual(past, { success: true, data: [], meta: { page: 9, per_page: 100, total: 7 } })

        const other = listOf(yield* (yield* BackOffice.crm(b.emails.administrator)).get("/employees"))
        assert.deepStrictEqual(other.data.map((member) => member.id), [b.ids.owner, b.ids.administrator, b.ids.manager, b.ids.teacher])

        for (const [query, field] of [["per_page=101", "per_page"], ["per_page=0", "per_page"], ["page=0", "page"], ["page=1.0", "page"], ["per_page=x", "per_page"]] as const) {
          const error = BackOffice.expectError(yield* owner.get(`/employees?${query}`), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), [field], query)
        }
      }))
  })

  describe("roles and sessions", () => {
    it.effect("manager and teacher: 403 FORBIDDEN on both calls, valid body or not, nothing written; no session: 401", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const before = yield* countStaff()
        for (const role of ["manager", "teacher"] as const) {
          const session = yield* BackOffice.crm(school.emails[role])
          BackOffice.expectError(yield* session.get("/employees"), 403, "FORBIDDEN")
          BackOffice.expectError(yield* session.get("/employees?per_page=1000"), 403, "FORBIDDEN")
          BackOffice.expectError(
            yield* session.post("/employees", { name: "Sneaky", email: freshEmail(), password: NEW_PASSWORD, role: "administrator" }),
            403,
            "FORBIDDEN"
          )
          BackOffice.expectError(yield* session.post("/employees", { role: "owner" }), 403, "FORBIDDEN")
        }
        assert.deepStrictEqual(yield* countStaff(), before)
        const server = yield* TestServer
        BackOffice.expectError(yield* server.raw.get(`${BackOffice.CRM}/employees`), 401, "UNAUTHENTICATED")
        BackOffice.expectError(
          yield* server.raw.post(`${BackOffice.CRM}/employees`, {
            body: { name: "Anon", email: freshEmail(), password: NEW_PASSWORD, role: "teacher" }
          }),
          401,
          "UNAUTHENTICATED"
        )
        assert.deepStrictEqual(yield* countStaff(), before)
      }))
  })
})

describe("the staff request's rules (properties)", () => {
  const decode = Schema.decodeUnknownExit(CreateEmployeeRequest)
  const base = { name: "Nina", email: "nina@school.example", role: "teacher" }
  const Password = Schema.String.check(Schema.isMaxLength(1024), Schema.makeFilter((s: string) => s.isWellFormed() && !s.includes("\u0000")))

  it.prop("a password is accepted exactly when it has at least 10 code points", [Password], ([password]) => {
    const accepted = decode({ ...base, password })._tag === "Success"
    assert.strictEqual(accepted, [...password].length >= PASSWORD_MIN, JSON.stringify(password))
  })

  it.prop("a role is accepted exactly when it is a creatable one (never owner)", [Schema.String], ([role]) => {
    const accepted = decode({ ...base, password: "0123456789", role })._tag === "Success"
    assert.strictEqual(accepted, role === "administrator" || role === "manager" || role === "teacher")
  })

  it("every creatable role, and not owner", () => {
    assert.deepStrictEqual([...CREATABLE_ROLES], ["administrator", "manager", "teacher"])
    assert.strictEqual(decode({ ...base, password: "0123456789", role: "owner" })._tag, "Failure")
  })
})
