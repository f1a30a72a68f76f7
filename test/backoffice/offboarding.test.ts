/**
 * Offboarding and passwords in the back office (docs/back-office.md "Staff",
 * "Signing in") over a real socket against a real database:
 * PATCH /employees/{id} for every pair of roles (allowed, 403, 422 for
 * `role: "owner"`, the owner on themselves 403), disabling ending every
 * session of the target at once and blocking sign-in with the same 401 as a
 * wrong password, enabling restoring it, DELETE /employees/{id}/sessions,
 * POST /sessions/current/password, another school's employee as 404, and two
 * concurrent disablings.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as SessionRules from "@school/domain/Sessions"
import type { Role } from "@school/domain/Sessions"
import * as BackOffice from "../support/BackOffice.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const Account = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  email: Schema.String,
  role: Schema.Literals(["owner", "administrator", "manager", "teacher"]),
  disabled: Schema.Boolean
})
const Ended = Schema.Struct({ ended: Schema.Int })
const NEW_PASSWORD = "a brand new password"

/** docs/back-office.md "Staff": written from the doc, not from the code. */
const mayChange = (actor: Role, target: Role): boolean =>
  target !== "owner" && (actor === "owner" || (actor === "administrator" && (target === "manager" || target === "teacher")))

/** A GET of the current session with the cookie, as a browser would send it. */
const currentByCookie = (token: string) =>
  Effect.flatMap(TestServer, (server) =>
    server.raw.request(`${BackOffice.CRM}/sessions/current`, { headers: { cookie: `${SessionRules.COOKIE_NAME}=${token}` } }))

const signInReply = (email: string, password: string) =>
  Effect.flatMap(TestServer, (server) =>
    server.raw.post(`${BackOffice.CRM}/sessions`, { body: { email, password } }))

/** The caller's sessions still alive in the database. */
const liveSessions = (employeeId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM sessions WHERE employee_id = ${employeeId} AND revoked_at IS NULL AND expires_at > now()`
    return rows[0]?.n ?? 0
  }).pipe(Effect.orDie)

const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true })("back-office offboarding", (it) => {
  describe("PATCH /employees/{id}", () => {
    it.effect("every pair of roles: allowed (200), 403 FORBIDDEN, the owner on themselves 403, role owner 422", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const sessions = {
          owner: yield* BackOffice.crm(school.emails.owner),
          administrator: yield* BackOffice.crm(school.emails.administrator),
          manager: yield* BackOffice.crm(school.emails.manager),
          teacher: yield* BackOffice.crm(school.emails.teacher)
        }
        for (const actor of BackOffice.ROLES) {
          for (const target of BackOffice.ROLES) {
            const path = `/employees/${school.ids[target]}`
            // `role: "owner"` is refused whoever asks, before the role rule (full access aside).
            const toOwner = yield* sessions[actor].patch(path, { role: "owner" })
            if (actor === "owner" || actor === "administrator") {
              const error = BackOffice.expectError(toOwner, 422, "VALIDATION_FAILED")
              assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["role"])
            } else {
              BackOffice.expectError(toOwner, 403, "FORBIDDEN")
            }
            // Giving the target their own role again changes nothing but shows the rule.
            const reply = yield* sessions[actor].patch(path, { role: target === "owner" ? "teacher" : target, disabled: false })
            if (mayChange(actor, target) && !(actor === target && actor === "owner")) {
              const account = BackOffice.dataOf(Account, reply)
              assert.deepStrictEqual(account, {
                id: school.ids[target],
                name: account.name,
                email: school.emails[target],
                role: target,
                disabled: false
              })
            } else {
              BackOffice.expectError(reply, 403, "FORBIDDEN")
            }
          }
        }
        // The owner on themselves, whatever they send.
        BackOffice.expectError(yield* sessions.owner.patch(`/employees/${school.ids.owner}`, { disabled: true }), 403, "FORBIDDEN")
        BackOffice.expectError(yield* sessions.owner.delete(`/employees/${school.ids.owner}/sessions`), 403, "FORBIDDEN")
        // Nothing was changed by the refusals: every session still works.
        for (const role of BackOffice.ROLES) {
          assert.strictEqual((yield* sessions[role].get("/sessions/current")).status, 200, role)
        }
      }))

    it.effect("a role change applies to the target's next call; the list carries role and disabled", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const owner = yield* BackOffice.crm(school.emails.owner)
        const manager = yield* BackOffice.crm(school.emails.manager)
        assert.strictEqual((yield* manager.get("/leads")).status, 200)
        const changed = BackOffice.dataOf(Account, yield* owner.patch(`/employees/${school.ids.manager}`, { role: "teacher" }))
        assert.strictEqual(changed.role, "teacher")
        BackOffice.expectError(yield* manager.get("/leads"), 403, "FORBIDDEN")
        BackOffice.dataOf(Account, yield* owner.patch(`/employees/${school.ids.teacher}`, { disabled: true }))
        const list = BackOffice.dataOf(
          Schema.Array(Schema.Struct({ ...Account.fields, created_at: BackOffice.Timestamp })),
          yield* owner.get("/employees")
        ).map(({ disabled, id, role }) => ({ id, role, disabled }))
        assert.deepStrictEqual(list, [
          { id: school.ids.owner, role: "owner", disabled: false },
          { id: school.ids.administrator, role: "administrator", disabled: false },
          { id: school.ids.manager, role: "teacher", disabled: false },
          { id: school.ids.teacher, role: "teacher", disabled: true }
        ])
      }))

    it.effect("422 for a body that is not one: unknown role, disabled not a boolean", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const owner = yield* BackOffice.crm(school.emails.owner)
        const path = `/employees/${school.ids.teacher}`
        const error = BackOffice.expectError(yield* owner.patch(path, { role: "janitor", disabled: "yes" }), 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(Object.keys(error.fields ?? {}).sort(), ["disabled", "role"])
      }))

    it.effect("disabling ends every session at once (cookie and token 401) and blocks sign-in with the wrong password's 401; enabling restores sign-in", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const admin = yield* BackOffice.crm(school.emails.administrator)
        const first = yield* BackOffice.crm(school.emails.teacher)
        const second = yield* BackOffice.signIn(school.emails.teacher)
        assert.strictEqual((yield* currentByCookie(second)).status, 200)

        const disabled = BackOffice.dataOf(Account, yield* admin.patch(`/employees/${school.ids.teacher}`, { disabled: true }))
        assert.isTrue(disabled.disabled)
        BackOffice.expectError(yield* first.get("/sessions/current"), 401, "UNAUTHENTICATED")
        BackOffice.expectError(yield* currentByCookie(second), 401, "UNAUTHENTICATED")
        assert.strictEqual(yield* liveSessions(school.ids.teacher), 0)

        const right = yield* signInReply(school.emails.teacher, BackOffice.PASSWORD)
        const wrong = yield* signInReply(school.emails.teacher, "not the password at all")
        BackOffice.expectError(right, 401, "UNAUTHENTICATED")
        assert.strictEqual(right.text, wrong.text)
        assert.isNull(right.headers.get("set-cookie"))

        BackOffice.dataOf(Account, yield* admin.patch(`/employees/${school.ids.teacher}`, { disabled: false }))
        const again = yield* BackOffice.crm(school.emails.teacher)
        assert.strictEqual((yield* again.get("/sessions/current")).status, 200)
        // The sessions ended by the disabling stay ended.
        BackOffice.expectError(yield* first.get("/sessions/current"), 401, "UNAUTHENTICATED")
      }))

    it.effect("two concurrent disablings of one employee both answer 200, and every session is gone", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const owner = yield* BackOffice.crm(school.emails.owner)
        const admin = yield* BackOffice.crm(school.emails.administrator)
        const tokens = yield* Effect.forEach([1, 2, 3], () => BackOffice.crm(school.emails.manager))
        const path = `/employees/${school.ids.manager}`
        const replies = yield* Effect.all([owner.patch(path, { disabled: true }), admin.patch(path, { disabled: true })], {
          concurrency: "unbounded"
        })
        for (const reply of replies) assert.isTrue(BackOffice.dataOf(Account, reply).disabled)
        for (const session of tokens) BackOffice.expectError(yield* session.get("/sessions/current"), 401, "UNAUTHENTICATED")
        assert.strictEqual(yield* liveSessions(school.ids.manager), 0)
      }))

    it.effect("another school's employee, or none, is 404 NOT_FOUND and changes nothing", () =>
      Effect.gen(function*() {
        const a = yield* BackOffice.staffSchool()
        const b = yield* BackOffice.staffSchool()
        const owner = yield* BackOffice.crm(a.emails.owner)
        const theirs = yield* BackOffice.crm(b.emails.teacher)
        BackOffice.expectError(yield* owner.patch(`/employees/${b.ids.teacher}`, { disabled: true }), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.delete(`/employees/${b.ids.teacher}/sessions`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.patch("/employees/2147483000", { disabled: true }), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.delete("/employees/2147483000/sessions"), 404, "NOT_FOUND")
        assert.strictEqual((yield* theirs.get("/sessions/current")).status, 200)
      }))
  })

  describe("DELETE /employees/{id}/sessions", () => {
    it.effect("ends every session of the employee: ended n, they stop working, sign-in still works", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const admin = yield* BackOffice.crm(school.emails.administrator)
        const sessions = yield* Effect.forEach([1, 2, 3], () => BackOffice.crm(school.emails.manager))
        const ended = BackOffice.dataOf(Ended, yield* admin.delete(`/employees/${school.ids.manager}/sessions`))
        assert.deepStrictEqual(ended, { ended: 3 })
        for (const session of sessions) BackOffice.expectError(yield* session.get("/sessions/current"), 401, "UNAUTHENTICATED")
        assert.deepStrictEqual(BackOffice.dataOf(Ended, yield* admin.delete(`/employees/${school.ids.manager}/sessions`)), { ended: 0 })
        const again = yield* BackOffice.crm(school.emails.manager)
        assert.strictEqual((yield* again.get("/sessions/current")).status, 200)
        // An administrator may not end another administrator's or the owner's sessions.
        BackOffice.expectError(yield* admin.delete(`/employees/${school.ids.owner}/sessions`), 403, "FORBIDDEN")
        BackOffice.expectError(yield* admin.delete(`/employees/${school.ids.administrator}/sessions`), 403, "FORBIDDEN")
      }))
  })

  describe("POST /sessions/current/password", () => {
    it.effect("wrong current → 422 on current_password; short new → 422 on new_password; nothing changes", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const teacher = yield* BackOffice.crm(school.emails.teacher)
        const other = yield* BackOffice.signIn(school.emails.teacher)
        const wrong = BackOffice.expectError(
          yield* teacher.post("/sessions/current/password", { current_password: "not my password", new_password: NEW_PASSWORD }),
          422,
          "VALIDATION_FAILED"
        )
        assert.deepStrictEqual(Object.keys(wrong.fields ?? {}), ["current_password"])
        const short = BackOffice.expectError(
          yield* teacher.post("/sessions/current/password", { current_password: BackOffice.PASSWORD, new_password: "short" }),
          422,
          "VALIDATION_FAILED"
        )
        assert.deepStrictEqual(Object.keys(short.fields ?? {}), ["new_password"])
        assert.strictEqual((yield* currentByCookie(other)).status, 200)
        yield* BackOffice.signIn(school.emails.teacher)
      }))

    it.effect("success: the other sessions 401, this one still works, the new password signs in, the old does not", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool()
        const manager = yield* BackOffice.crm(school.emails.manager)
        const others = [yield* BackOffice.signIn(school.emails.manager), yield* BackOffice.signIn(school.emails.manager)]
        const bystander = yield* BackOffice.crm(school.emails.teacher)
        const reply = yield* manager.post("/sessions/current/password", {
          current_password: BackOffice.PASSWORD,
          new_password: NEW_PASSWORD
        })
        assert.deepStrictEqual(BackOffice.dataOf(Schema.Struct({}), reply), {})
        for (const token of others) BackOffice.expectError(yield* currentByCookie(token), 401, "UNAUTHENTICATED")
        assert.strictEqual((yield* manager.get("/sessions/current")).status, 200)
        assert.strictEqual((yield* bystander.get("/sessions/current")).status, 200)
        BackOffice.expectError(yield* signInReply(school.emails.manager, BackOffice.PASSWORD), 401, "UNAUTHENTICATED")
        yield* BackOffice.signIn(school.emails.manager, NEW_PASSWORD)
        assert.strictEqual(yield* liveSessions(school.ids.manager), 2)
      }))
  })
})
