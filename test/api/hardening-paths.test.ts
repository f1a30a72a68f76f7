/**
 * Path spellings and the idempotency operation
 * (docs/decisions.md "Requests and responses", "Idempotency"):
 * - the router matches a path exactly as the route is written: another case,
 *   a trailing slash or a repeated slash is 404 not_found (never 405, never
 *   the endpoint), generated over every route and several spellings (but
 *   `/students/` is `/students/{id}` with an empty id: 422 on `id`);
 * - one Idempotency-Key names one operation, the matched route with its
 *   parameters: the spellings that still reach an endpoint (`;…` ends the
 *   path like `?…`, percent-encoded unreserved characters) replay the first
 *   response and create nothing more; `/students/5/groups` and
 *   `/students/6/groups` stay two operations.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { Idempotency } from "@school/domain"
import { expectError, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, funnel } from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly schoolId: number
  readonly writeKey: string
  readonly students: ReadonlyArray<number>
  readonly groupId: number
}>()("test/api/hardening-paths/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const school = yield* Fixtures.school("pro", "Paths")
      yield* funnel(school.schoolId, "Main", true, [["Incoming", 10]])
      return World.of({
        schoolId: school.schoolId,
        writeKey: yield* Fixtures.key(school.schoolId, { scope: "write" }),
        students: yield* Fixtures.students(school.schoolId, school.filialId, 3, "Student"),
        groupId: yield* Fixtures.group(school.schoolId, school.filialId, "Chess", 50)
      })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

let n = 0
const freshKey = () => `paths-${++n}-${Math.random().toString(36).slice(2)}`

/** The routes as written, a GET or POST each (an id where the route has one). */
const ROUTES: ReadonlyArray<readonly ["GET" | "POST", string]> = [
  ["GET", "/students"],
  ["GET", "/students/1"],
  ["GET", "/payments"],
  ["GET", "/groups"],
  ["GET", "/lessons?from=2026-01-01&to=2026-01-02"],
  ["GET", "/filials"],
  ["GET", "/levels"],
  ["POST", "/leads"],
  ["POST", "/demo-lessons"],
  ["POST", "/students/1/groups"]
]

/** Ways to misspell a path: change the case of one letter, add a slash at the end, double one slash. */
const Misspelling = Schema.Struct({
  route: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: ROUTES.length - 1 })),
  how: Schema.Literals(["upper", "trailing", "double"]),
  at: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1000 }))
})

const misspell = (path: string, how: "upper" | "trailing" | "double", at: number): string => {
  const [pathname = "", query] = path.split("?")
  const full = `${V1}${pathname}`
  let spelled = full
  if (how === "trailing") spelled = `${full}/`
  if (how === "upper") {
    const letters = [...full].flatMap((c, i) => (/[a-z]/.test(c) ? [i] : []))
    const i = letters[at % letters.length] ?? 1
    spelled = `${full.slice(0, i)}${full.charAt(i).toUpperCase()}${full.slice(i + 1)}`
  }
  if (how === "double") {
    const slashes = [...full].flatMap((c, i) => (c === "/" ? [i] : []))
    const i = slashes[at % slashes.length] ?? 0
    spelled = `${full.slice(0, i)}/${full.slice(i)}`
  }
  return query === undefined ? spelled : `${spelled}?${query}`
}

layer(Env, { excludeTestServices: true })("path spellings", (it) => {
  describe("the router matches paths exactly as written", () => {
    it.effect.prop(
      "another case, a trailing slash or a doubled slash is 404 not_found, for every route",
      [Misspelling],
      ([m]) =>
        Effect.gen(function*() {
          const world = yield* World
          const server = yield* TestServer
          const [method, path] = ROUTES[m.route]!
          const spelled = misspell(path, m.how, m.at)
          const reply = yield* server.raw.request(spelled, {
            method,
            key: world.writeKey,
            ...(method === "POST" ? { idempotencyKey: freshKey(), body: { phone: "12345" } } : {})
          })
          if (spelled.split("?")[0] === `${V1}/students/`) {
            // Not a spelling of /students but /students/{id} with an empty id (docs/decisions.md "Requests and responses").
            assert.deepStrictEqual(Object.keys(expectError(reply, 422, "validation_failed").fields ?? {}), ["id"])
            return
          }
          assert.strictEqual(reply.status, 404, `${method} ${spelled}: ${reply.text}`)
          expectError(reply, 404, "not_found")
          assert.isNull(reply.headers.get("allow"))
        }),
      { timeout: 60_000, arbitrary: { runs: 60 } }
    )

    it.effect("the probe's spellings of POST /leads: only /leads (and /leads;x, whose ';' ends the path) reach it", () =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        const before = yield* count("leads", world.schoolId)
        for (const path of [`${V1}/Leads`, `${V1}/leads/`, `${V1}//leads`, `/API/public/v1/leads`, `${V1}/LEADS`]) {
          const reply = yield* server.raw.post(path, { key: world.writeKey, idempotencyKey: freshKey(), body: { phone: "12345" } })
          expectError(reply, 404, "not_found")
        }
        assert.strictEqual(yield* count("leads", world.schoolId), before)
      }))
  })

  describe("one key, one operation: the matched route and its parameters", () => {
    it.effect("the spellings that reach POST /leads replay the first response: one lead, one record", () =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        const key = freshKey()
        const leads = yield* count("leads", world.schoolId)
        const records = yield* count("idempotency_keys", world.schoolId)
        const first = yield* server.raw.post(`${V1}/leads`, { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(first.status, 201, first.text)
        for (const path of [`${V1}/leads;x`, `${V1}/leads;`, `${V1}/le%61ds`, `${V1}/leads?x=1`, `${V1}/%6Ceads`]) {
          const again = yield* server.raw.post(path, { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
          assert.strictEqual(again.status, 201, `${path}: ${again.text}`)
          assert.strictEqual(again.headers.get("idempotent-replayed"), "true", path)
          assert.strictEqual(Buffer.compare(again.bytes, first.bytes), 0, path)
        }
        assert.strictEqual(yield* count("leads", world.schoolId), leads + 1)
        assert.strictEqual(yield* count("idempotency_keys", world.schoolId), records + 1)
      }))

    it.effect("POST /students/{id}/groups: the key names the route with the decoded id; two ids are two operations", () =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        const key = freshKey()
        const [s1, s2] = [world.students[0]!, world.students[1]!]
        const post = (path: string) =>
          server.raw.post(`${V1}${path}`, { key: world.writeKey, idempotencyKey: key, body: { group_id: world.groupId } })
        const one = yield* post(`/students/${s1}/groups`)
        const two = yield* post(`/students/${s2}/groups`)
        assert.deepStrictEqual([one.status, two.status], [201, 201], `${one.text} ${two.text}`)
        assert.isNull(two.headers.get("idempotent-replayed"))
        // The same student written otherwise: the same operation, replayed.
        const encoded = yield* post(`/students/${String(s1).split("").map((d) => `%3${d}`).join("")}/groups`)
        assert.strictEqual(encoded.status, 201, encoded.text)
        assert.strictEqual(encoded.headers.get("idempotent-replayed"), "true")
        // A spelling that is not the id's decimal is validation_failed on id, whatever the key.
        const padded = yield* post(`/students/0${s1}/groups`)
        assert.deepStrictEqual(Object.keys(expectError(padded, 422, "validation_failed").fields ?? {}), ["id"])
      }))

    it.effect.prop(
      "operationOf: the route with its parameters put in; distinct values, distinct operations",
      [Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2_147_483_647 })), Schema.String],
      ([id, other]) =>
        Effect.sync(() => {
          const route = `${V1}/students/:id/groups`
          assert.strictEqual(Idempotency.operationOf("post", route, { id: String(id) }), `POST ${V1}/students/${id}/groups`)
          if (other !== String(id)) {
            assert.notStrictEqual(
              Idempotency.operationOf("POST", route, { id: other }),
              Idempotency.operationOf("POST", route, { id: String(id) })
            )
          }
          assert.strictEqual(Idempotency.operationOf("POST", `${V1}/leads`, {}), `POST ${V1}/leads`)
        })
    )
  })
})
