/**
 * What back-office tests share (docs/back-office.md): a school with one
 * employee per role, signing in, plain requests carrying a session, and the
 * back office's envelope decoded strictly.
 *
 *   const school = yield* BackOffice.staffSchool("pro")
 *   const owner = yield* BackOffice.crm(school.emails.owner)
 *   const reply = yield* owner.post("/api-keys", { name: "site", scope: "read" })
 *   BackOffice.expectError(reply, 403, "TARIFF_TOO_LOW")
 */
import { assert } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Plan } from "@school/domain/Plans"
import type { Role } from "@school/domain/Sessions"
import { hashPassword } from "@school/runtime/Passwords"
import { createSchool } from "@school/persistence/Schools"
import { JSON_CONTENT_TYPE, type RawReply, type RawRequestError } from "./Clients.ts"
import { TestServer } from "./TestServer.ts"

/** The back office's base path. */
export const CRM = "/api/crm/v1"
/** Every test employee's password. */
export const PASSWORD = "correct horse battery"
export const ROLES: ReadonlyArray<Role> = ["owner", "administrator", "manager", "teacher"]

const strict = { onExcessProperty: "error" } as const

export const ErrorReply = Schema.Struct({
  success: Schema.Literal(false),
  code: Schema.String,
  message: Schema.String,
  fields: Schema.optionalKey(Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Array(Schema.String)])))
})
export type ErrorReply = typeof ErrorReply.Type

/** A time as the back office writes it: ISO 8601 UTC with microseconds and Z. */
export const Timestamp = Schema.String.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u))

/** `POST /webhooks`'s data as the wire has it (docs/back-office.md): the only answer that shows the secret. */
export const CreatedWebhook = Schema.Struct({
  id: Schema.Int,
  url: Schema.String,
  events: Schema.Array(Schema.String),
  status: Schema.Literal("active"),
  secret: Schema.String,
  created_at: Timestamp
})

/** A back-office error reply: status, JSON content type, code and a message, the envelope checked strictly. */
export const expectError = (reply: RawReply, status: number, code: string): ErrorReply => {
  assert.strictEqual(reply.status, status, reply.text)
  assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
  const error = Schema.decodeUnknownSync(ErrorReply)(reply.json, strict)
  assert.strictEqual(error.code, code, reply.text)
  assert.isAbove(error.message.length, 0)
  return error
}

/** The `data` of a success reply with `status`, decoded strictly with `schema`. */
export const dataOf = <A>(schema: Schema.Codec<A, unknown>, reply: RawReply, status = 200): A => {
  assert.strictEqual(reply.status, status, reply.text)
  assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
  const body = Schema.decodeUnknownSync(Schema.Struct({ success: Schema.Literal(true), data: Schema.Unknown }))(reply.json)
  return Schema.decodeUnknownSync(schema)(body.data, strict)
}

export interface StaffSchool {
  readonly schoolId: number
  readonly mainFunnelId: number
  readonly filialId: number
  /** Employee id per role. */
  readonly ids: Readonly<Record<Role, number>>
  /** Login e-mail per role; every password is PASSWORD. */
  readonly emails: Readonly<Record<Role, string>>
}

let schools = 0

/** A school on `plan` (default `pro`; `null`: no plan) with a filial and one employee of each role, each able to sign in with PASSWORD. */
export const staffSchool = (plan?: Plan | null): Effect.Effect<StaffSchool, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const slug = `s${++schools}-${process.pid}-${Date.now().toString(36)}`
    const emails = {
      owner: `owner@${slug}.test`,
      administrator: `admin@${slug}.test`,
      manager: `manager@${slug}.test`,
      teacher: `teacher@${slug}.test`
    }
    const hash = yield* hashPassword(PASSWORD)
    const created = yield* createSchool({
      name: `School ${slug}`,
      plan: plan === undefined ? "pro" : plan,
      owner: { name: "Olga Owner", email: emails.owner, passwordHash: hash }
    })
    const ids: Record<Role, number> = { owner: created.owner_id, administrator: 0, manager: 0, teacher: 0 }
    for (const [role, name] of [["administrator", "Adam Admin"], ["manager", "Maria Manager"], ["teacher", "Tim Teacher"]] as const) {
      const rows = yield* sql<{ id: number }>`
        WITH e AS (
          INSERT INTO employees (school_id, name, email, password_hash, role)
          VALUES (${created.school_id}, ${name}, ${emails[role]}, ${hash}, ${role}) RETURNING school_id, id
        ), l AS (INSERT INTO login_emails (email, school_id, employee_id) SELECT ${emails[role]}, school_id, id FROM e)
        SELECT id FROM e`
      ids[role] = rows[0]?.id ?? 0
    }
    const filial = yield* sql<{ id: number }>`
      INSERT INTO filials (school_id, name, address) VALUES (${created.school_id}, 'Main', 'Main street 1') RETURNING id`
    return {
      schoolId: created.school_id,
      mainFunnelId: created.main_funnel_id,
      filialId: filial[0]?.id ?? 0,
      ids,
      emails
    } satisfies StaffSchool
  }).pipe(Effect.orDie)

/** Requests to the back office as one signed-in employee (`Authorization: Session <token>`). */
export interface Crm {
  readonly token: string
  readonly get: (path: string) => Effect.Effect<RawReply, RawRequestError>
  /** A JSON body (any value but a string is sent as its JSON). */
  readonly post: (path: string, body?: unknown) => Effect.Effect<RawReply, RawRequestError>
  readonly patch: (path: string, body?: unknown) => Effect.Effect<RawReply, RawRequestError>
  readonly delete: (path: string) => Effect.Effect<RawReply, RawRequestError>
}

/** Signs in as `email` (201 asserted) and returns the session token. */
export const signIn = Effect.fnUntraced(function*(email: string, password: string = PASSWORD) {
  const server = yield* TestServer
  const reply = yield* server.raw.post(`${CRM}/sessions`, { body: { email, password } })
  assert.strictEqual(reply.status, 201, reply.text)
  return Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Struct({ token: Schema.String }) }))(reply.json).data.token
}, Effect.orDie)

/** A signed-in employee's requests; paths are relative to CRM (`/api-keys`). */
export const crm = Effect.fnUntraced(function*(email: string) {
  const server = yield* TestServer
  const token = yield* signIn(email)
  const headers = { authorization: `Session ${token}` }
  const withBody = (method: string) => (path: string, body?: unknown) =>
    server.raw.request(`${CRM}${path}`, {
      method,
      headers: { ...headers, "content-type": "application/json" },
      ...(body === undefined ? {} : { body })
    })
  return {
    token,
    get: (path) => server.raw.request(`${CRM}${path}`, { headers }),
    post: withBody("POST"),
    patch: withBody("PATCH"),
    delete: (path) => server.raw.request(`${CRM}${path}`, { method: "DELETE", headers })
  } satisfies Crm
})
