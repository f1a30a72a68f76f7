/**
 * Generated path spellings (docs/decisions.md "Requests and
 * responses", "Idempotency"), complementing the examples of
 * hardening-paths.test.ts: every spelling of POST /leads made of another
 * case, percent-encoded characters (upper- or lower-case hex), doubled
 * slashes, a trailing slash and a `;…` suffix is either the route as
 * written, once percent-decoded and cut at `;`, and then the SAME
 * idempotency operation (the first response replayed byte for byte,
 * nothing created), or 404 not_found. Never a second lead, never a 405.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { expectError, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, funnel } from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, { readonly schoolId: number; readonly writeKey: string }>()(
  "test/api/fuzz-paths/World"
) {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const school = yield* Fixtures.school("pro", "Spellings")
      yield* funnel(school.schoolId, "Main", true, [["Incoming", 10]])
      return World.of({ schoolId: school.schoolId, writeKey: yield* Fixtures.key(school.schoolId, { scope: "write" }) })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

const PATH = `${V1}/leads`

/** What may happen to one character of the path. */
const Edit = Schema.Literals(["keep", "case", "percent", "percent-lower", "double"])
const Spelling = Schema.Struct({
  edits: Schema.Array(Edit).check(Schema.isMaxLength(PATH.length)),
  suffix: Schema.Literals(["", "/", "//", ";", ";x", ";x=1", "/;x", ";/x", "%2F"])
})

const hex = (c: string) => c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")

/** The spelled path. */
const spell = ({ edits, suffix }: typeof Spelling.Type): string =>
  [...PATH].map((c, i) => {
    switch (edits[i] ?? "keep") {
      case "case":
        return c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()
      case "percent":
        return c === "/" ? c : `%${hex(c)}`
      case "percent-lower":
        return c === "/" ? c : `%${hex(c).toLowerCase()}`
      case "double":
        return c === "/" ? "//" : c
      default:
        return c
    }
  }).join("") + suffix

/** The path the router matches: cut at `;`, unreserved characters percent-decoded. */
const asMatched = (path: string): string => decodeURIComponent(path.split(";")[0] ?? "")

let n = 0
const freshKey = () => `spelling-${++n}-${Math.random().toString(36).slice(2)}`

layer(Env, { excludeTestServices: true })("generated path spellings", (it) => {
  it.effect.prop(
    "a spelling of POST /leads is the same operation (replayed, nothing created) or 404 not_found",
    [Schema.Array(Spelling).check(Schema.isMinLength(1), Schema.isMaxLength(6))],
    ([spellings]) =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        const key = freshKey()
        const first = yield* server.raw.post(PATH, { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
        assert.strictEqual(first.status, 201, first.text)
        const leads = yield* count("leads", world.schoolId)
        const records = yield* count("idempotency_keys", world.schoolId)
        for (const spelling of spellings) {
          const path = spell(spelling)
          const reply = yield* server.raw.post(path, { key: world.writeKey, idempotencyKey: key, body: { phone: "12345" } })
          if (asMatched(path) === PATH) {
            assert.strictEqual(reply.status, 201, `${path}: ${reply.text}`)
            assert.strictEqual(reply.headers.get("idempotent-replayed"), "true", path)
            assert.strictEqual(Buffer.compare(reply.bytes, first.bytes), 0, path)
          } else {
            expectError(reply, 404, "not_found")
          }
        }
        assert.strictEqual(yield* count("leads", world.schoolId), leads)
        assert.strictEqual(yield* count("idempotency_keys", world.schoolId), records)
      }),
    { timeout: 120_000, arbitrary: { runs: 40 } }
  )
})
