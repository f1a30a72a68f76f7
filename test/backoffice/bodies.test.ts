/**
 * What a back-office request body is (docs/back-office.md "Answers and
 * errors", docs/decisions.md "Request bodies"): the public API's one check
 * (apps/api/src/RequestBody.ts), in the back office's envelope
 * `{ success: false, code, message, fields? }`, run by its validation
 * middleware before the body is decoded, sign-in included:
 * - a charset other than UTF-8, a Content-Encoding other than identity
 *   (answered with `Accept-Encoding: identity`), or a body without a
 *   Content-Type: 415 UNSUPPORTED_MEDIA_TYPE;
 * - bytes that are not UTF-8: 422 VALIDATION_FAILED without fields;
 * - none of them is stored (sessions, login failures, employees, leads,
 *   the employee's role), while the same body sent readable is;
 * - a role the endpoint refuses gets 403 FORBIDDEN, its body unread.
 * Requests go out through node:http, so a missing Content-Type stays missing.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { request } from "node:http"
import * as BackOffice from "../support/BackOffice.ts"
import type { RawReply } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const CRM = BackOffice.CRM

class World extends Context.Service<World, {
  readonly school: BackOffice.StaffSchool
  /** The owner's session token (`Authorization: Session <token>`). */
  readonly owner: string
  readonly teacher: string
}>()("test/backoffice/bodies/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const school = yield* BackOffice.staffSchool("pro")
      return World.of({
        school,
        owner: yield* BackOffice.signIn(school.emails.owner),
        teacher: yield* BackOffice.signIn(school.emails.teacher)
      })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

const encode = (text: string) => new TextEncoder().encode(text)

/** `text` as JSON, with `raw` bytes spliced in where `@@` stands (inside a string). */
const withBytes = (json: string, raw: ReadonlyArray<number>): Uint8Array => {
  const parts = json.split("@@")
  assert.strictEqual(parts.length, 2, json)
  const [before = "", after = ""] = parts
  return new Uint8Array([...encode(before), ...raw, ...encode(after)])
}

/** Sends exactly these headers (and Content-Length) and body: nothing is added, a missing Content-Type stays missing. */
const send = (method: string, path: string, headers: Readonly<Record<string, string>>, body: Uint8Array) =>
  Effect.flatMap(TestServer, (server) =>
    Effect.callback<RawReply>((resume) => {
      const outgoing = request(`${server.baseUrl}${CRM}${path}`, {
        method,
        headers: { ...headers, "content-length": String(body.length) }
      }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => {
          const bytes = new Uint8Array(Buffer.concat(chunks))
          const text = new TextDecoder().decode(bytes)
          const replyHeaders = new Headers()
          for (const [name, value] of Object.entries(response.headers)) {
            if (typeof value === "string") replyHeaders.set(name, value)
            else if (Array.isArray(value)) for (const item of value) replyHeaders.append(name, item)
          }
          let json: unknown
          try {
            json = JSON.parse(text)
          } catch {
            json = undefined
          }
          resume(Effect.succeed({ status: response.statusCode ?? 0, headers: replyHeaders, bytes, text, json }))
        })
      })
      outgoing.on("error", (error) => resume(Effect.die(error)))
      outgoing.end(body)
    }))

/** A back-office error reply with exactly the envelope's keys (no `fields`). */
const expectRefusal = (reply: RawReply, status: number, code: string) => {
  const error = BackOffice.expectError(reply, status, code)
  assert.deepStrictEqual(Object.keys(reply.json as object).sort(), ["code", "message", "success"])
  assert.isUndefined(error.fields)
  return error
}

/** One operation that takes a body: where it goes, a readable body for it, and what it would store. */
interface Operation {
  readonly name: string
  readonly method: "POST" | "PATCH"
  readonly path: (world: World["Service"]) => string
  /** Its body as JSON text, `@@` where a string's bytes may be replaced. */
  readonly body: (world: World["Service"]) => string
  /** Signed in as the owner; sign-in takes no session. */
  readonly session: boolean
  /** A snapshot of what the operation writes: equal before and after a refusal. */
  readonly stored: (world: World["Service"]) => Effect.Effect<unknown, never, SqlClient.SqlClient>
  /** The status of the readable body. */
  readonly succeeds: number
}

const query = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  Effect.orDie(Effect.flatMap(SqlClient.SqlClient, run))

let employees = 0

const operations: ReadonlyArray<Operation> = [
  {
    name: "POST /sessions",
    method: "POST",
    path: () => "/sessions",
    // The bytes go into a field sign-in ignores, so the readable body signs in.
    body: (world) => JSON.stringify({ email: world.school.emails.manager, password: BackOffice.PASSWORD, note: "@@" }),
    session: false,
    // A refused sign-in is no attempt either: no session, no login failure.
    stored: (world) =>
      query((sql) =>
        sql`SELECT (SELECT count(*)::int FROM sessions WHERE school_id = ${world.school.schoolId}) AS sessions,
                   (SELECT count(*)::int FROM login_failures WHERE email = ${world.school.emails.manager}) AS failures`
      ),
    succeeds: 201
  },
  {
    name: "POST /employees",
    method: "POST",
    path: () => "/employees",
    body: () =>
      JSON.stringify({ name: "Ann@@", email: `ann${++employees}@bodies.test`, password: BackOffice.PASSWORD, role: "manager" }),
    session: true,
    stored: (world) =>
      query((sql) => sql`SELECT id, name, email, role FROM employees WHERE school_id = ${world.school.schoolId} ORDER BY id`),
    succeeds: 201
  },
  {
    name: "POST /leads",
    method: "POST",
    path: () => "/leads",
    body: () => JSON.stringify({ phone: "12345", name: "Zo@@" }),
    session: true,
    stored: (world) => Fixtures.count("leads", world.school.schoolId),
    succeeds: 201
  },
  {
    name: "PATCH /employees/{id}",
    method: "PATCH",
    path: (world) => `/employees/${world.school.ids.manager}`,
    // No string field of its own: the bytes go into an unknown field, which decoding would ignore.
    body: () => JSON.stringify({ role: "administrator", note: "@@" }),
    session: true,
    stored: (world) =>
      query((sql) => sql`SELECT id, name, email, role FROM employees WHERE school_id = ${world.school.schoolId} ORDER BY id`),
    succeeds: 200
  }
]

/** Sends `operation` with its body (its `@@` replaced by `raw`) and `headers`; asserts nothing was stored. */
const unstored = (operation: Operation, headers: Readonly<Record<string, string>>, raw: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const world = yield* World
    const before = yield* operation.stored(world)
    const reply = yield* send(
      operation.method,
      operation.path(world),
      { ...(operation.session ? { authorization: `Session ${world.owner}` } : {}), ...headers },
      withBytes(operation.body(world), raw)
    )
    assert.deepStrictEqual(yield* operation.stored(world), before, `${operation.name}: something was stored`)
    return reply
  })

/** "ë" in Latin-1; in UTF-8 an "ë" of its own; 0xC3 0x28 is no UTF-8 at all. */
const LATIN1 = [0xeb]
const UTF8 = [...encode("\u00eb")]
const INVALID = [0xc3, 0x28]

layer(Env, { excludeTestServices: true })("back-office request bodies: JSON in UTF-8", (it) => {
  for (const operation of operations) {
    describe(operation.name, () => {
      it.effect("charset=latin1: 415 UNSUPPORTED_MEDIA_TYPE, nothing stored", () =>
        Effect.gen(function*() {
          const reply = yield* unstored(operation, { "content-type": "application/json; charset=latin1" }, LATIN1)
          expectRefusal(reply, 415, "UNSUPPORTED_MEDIA_TYPE")
        }))

      it.effect("Content-Encoding: gzip on a plain JSON body: 415 with Accept-Encoding: identity, nothing stored", () =>
        Effect.gen(function*() {
          const reply = yield* unstored(operation, { "content-type": "application/json", "content-encoding": "gzip" }, UTF8)
          expectRefusal(reply, 415, "UNSUPPORTED_MEDIA_TYPE")
          assert.strictEqual(reply.headers.get("accept-encoding"), "identity")
        }))

      it.effect("a body without Content-Type: 415 UNSUPPORTED_MEDIA_TYPE, nothing stored", () =>
        Effect.gen(function*() {
          const reply = yield* unstored(operation, {}, UTF8)
          expectRefusal(reply, 415, "UNSUPPORTED_MEDIA_TYPE")
        }))

      it.effect("bytes that are not UTF-8 (0xC3 0x28 in a string): 422 VALIDATION_FAILED without fields, nothing stored", () =>
        Effect.gen(function*() {
          const reply = yield* unstored(operation, { "content-type": "application/json" }, INVALID)
          expectRefusal(reply, 422, "VALIDATION_FAILED")
        }))

      it.effect("the same body, readable (charset=utf-8): it runs and is stored", () =>
        Effect.gen(function*() {
          const world = yield* World
          const before = yield* operation.stored(world)
          const reply = yield* send(
            operation.method,
            operation.path(world),
            {
              ...(operation.session ? { authorization: `Session ${world.owner}` } : {}),
              "content-type": "application/json; charset=utf-8"
            },
            withBytes(operation.body(world), UTF8)
          )
          assert.strictEqual(reply.status, operation.succeeds, reply.text)
          assert.notDeepEqual(yield* operation.stored(world), before)
        }))
    })
  }

  it.effect("a role the endpoint refuses gets 403 FORBIDDEN whatever its body is: the role check comes first", () =>
    Effect.gen(function*() {
      const world = yield* World
      const employeesBefore = yield* operations[1]!.stored(world)
      for (const headers of [{ "content-type": "application/json; charset=latin1" }, { "content-encoding": "gzip" }]) {
        const reply = yield* send(
          "POST",
          "/employees",
          { authorization: `Session ${world.teacher}`, ...headers },
          withBytes(JSON.stringify({ name: "@@", email: "x@bodies.test", password: BackOffice.PASSWORD, role: "manager" }), LATIN1)
        )
        BackOffice.expectError(reply, 403, "FORBIDDEN")
      }
      assert.deepStrictEqual(yield* operations[1]!.stored(world), employeesBefore)
    }))
})
