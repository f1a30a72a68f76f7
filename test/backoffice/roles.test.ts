/**
 * Who may call what, over every back-office call (docs/back-office.md
 * "Roles"): the table below is written from the contract, not from the
 * code. Every endpoint of `BackOfficeApi` must be in it and every row must
 * be an endpoint; each call is then sent by each role: a role outside the
 * row gets 403 FORBIDDEN and changes nothing (every table's row count is
 * the same before and after), a role inside it gets past the check (any
 * answer but 403; the ids and bodies sent are deliberately not valid, so the
 * call itself refuses them).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { HttpApi } from "effect/http-api"
import { BACK_OFFICE_PATH, BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import type { Role } from "@school/domain/Sessions"
import * as BackOffice from "../support/BackOffice.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const ANY: ReadonlyArray<Role> = ["owner", "administrator", "manager", "teacher"]
const FULL: ReadonlyArray<Role> = ["owner", "administrator"]
const LEADS: ReadonlyArray<Role> = ["owner", "administrator", "manager"]
const FULL_TEACHER: ReadonlyArray<Role> = ["owner", "administrator", "teacher"]

/** The contract's table: "METHOD path" (relative to /api/crm/v1) → the roles allowed. */
const ACCESS: Readonly<Record<string, ReadonlyArray<Role>>> = {
  "POST /employees": FULL,
  "GET /employees": FULL,
  "PATCH /employees/:id": FULL,
  "DELETE /employees/:id/sessions": FULL,
  "POST /sessions/current/password": ANY,
  "POST /api-keys": FULL,
  "GET /api-keys": FULL,
  "DELETE /api-keys/:id": FULL,
  "POST /webhooks": FULL,
  "GET /webhooks": FULL,
  "GET /webhooks/:id": FULL,
  "PATCH /webhooks/:id": FULL,
  "DELETE /webhooks/:id": FULL,
  "POST /webhooks/:id/disable": FULL,
  "POST /webhooks/:id/enable": FULL,
  "POST /webhooks/:id/test": FULL,
  "GET /webhooks/:id/deliveries": FULL,
  "GET /webhooks/:id/deliveries/:delivery_id": FULL,
  "POST /webhooks/:id/deliveries/:delivery_id/resend": FULL,
  "POST /webhooks/:id/recover": FULL,
  "GET /notifications": ANY,
  "POST /notifications/:id/read": ANY,
  "GET /tasks": ANY,
  "POST /filials": FULL,
  "POST /subjects": FULL,
  "POST /programs": FULL,
  "POST /levels": FULL,
  "POST /groups": FULL,
  "POST /students": LEADS,
  "POST /students/:id/enrollments": LEADS,
  "POST /lessons": FULL,
  "POST /lessons/:id/attendance": FULL_TEACHER,
  "POST /payments": LEADS,
  "POST /leads": LEADS,
  "POST /leads/:id/status": LEADS,
  "GET /funnels": LEADS,
  "GET /leads": LEADS,
  "POST /funnels": FULL
}

/** Calls every employee may make, whatever the role: sign-in and the session itself. */
const SESSION_CALLS = new Set(["POST /sessions", "GET /sessions/current", "DELETE /sessions/current"])

/** The back office's endpoints as "METHOD path" with `:param` placeholders. */
const endpoints = (): ReadonlyArray<string> => {
  const found: Array<string> = []
  HttpApi.reflect(BackOfficeApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const path = endpoint.path.slice(BACK_OFFICE_PATH.length).replace(/\{(\w+)\}/gu, ":$1")
      found.push(`${endpoint.method} ${path}`)
    }
  })
  return found
}

/** Every table's row count, to show a refused call wrote nothing. */
const rowCounts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ name: string }>`
    SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('effect_sql_migrations', 'login_failures')
    ORDER BY tablename`
  const counts: Record<string, number> = {}
  for (const { name } of tables) {
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(name)}`
    counts[name] = rows[0]?.n ?? 0
  }
  return counts
}).pipe(Effect.orDie)

const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true })("back-office roles", (it) => {
  it("the table covers every endpoint of the contract, and nothing else", () => {
    const declared = endpoints().filter((call) => !SESSION_CALLS.has(call)).sort()
    assert.deepStrictEqual(declared, Object.keys(ACCESS).sort())
  })

  describe("every call × every role", () => {
    it.effect("a role outside the call's row gets 403 FORBIDDEN and changes nothing; a role inside gets past the check", () =>
      Effect.gen(function*() {
        const school = yield* BackOffice.staffSchool("pro")
        const sessions = {
          owner: yield* BackOffice.crm(school.emails.owner),
          administrator: yield* BackOffice.crm(school.emails.administrator),
          manager: yield* BackOffice.crm(school.emails.manager),
          teacher: yield* BackOffice.crm(school.emails.teacher)
        }
        const before = yield* rowCounts
        let forbidden = 0
        for (const [call, allowed] of Object.entries(ACCESS)) {
          const [method = "GET", template = "/"] = call.split(" ")
          // An id no row has: the role check comes first, so it decides a refused role's answer.
          const path = template.replace(/:\w+/gu, "2147483000")
          for (const role of BackOffice.ROLES) {
            const session = sessions[role]
            const reply = method === "GET"
              ? yield* session.get(path)
              : method === "DELETE"
              ? yield* session.delete(path)
              : method === "PATCH"
              ? yield* session.patch(path, {})
              : yield* session.post(path, {})
            if (allowed.includes(role)) {
              assert.notStrictEqual(reply.status, 403, `${role} ${call}: ${reply.text}`)
              assert.isBelow(reply.status, 500, `${role} ${call}: ${reply.text}`)
            } else {
              BackOffice.expectError(reply, 403, "FORBIDDEN")
              forbidden++
            }
          }
        }
        assert.isAbove(forbidden, 40)
        // Allowed roles sent invalid ids and bodies, so nothing changed either way.
        assert.deepStrictEqual(yield* rowCounts, before)
      }))
  })
})
