/**
 * End to end: the real API process (apps/api/src/main.ts) against a
 * real database seeded with the demo school, driven over HTTP with the
 * contract's client and the raw one, then stopped with SIGTERM, which must
 * exit 0.
 */
import { assert, layer } from "@effect/vitest"
import { Errors, Ids } from "@school/domain"
import { freePort } from "@school/runtime/Ports"
import { seedDemo } from "@school/persistence/DemoSeed"
import { hashPassword } from "@school/runtime/Passwords"
import { Effect } from "effect"
import { errorOf, failsWith, JSON_CONTENT_TYPE, rawClient, totalOf, typedClient, V1 } from "../support/Clients.ts"
import { startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

layer(TestDatabase.layer, { excludeTestServices: true })("the real API process", (it) => {
  it.effect("serves the demo school over HTTP and exits 0 on SIGTERM", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const demo = yield* seedDemo(hashPassword)
      const port = yield* Effect.orDie(freePort)
      const base = `http://127.0.0.1:${port}`
      const exitCode = yield* Effect.scoped(Effect.gen(function*() {
        const api = yield* startApi(database.url, port)
        const raw = rawClient(base)
        const reader = yield* typedClient(base, { key: demo.keys.read })

        const wire = yield* raw.get(`${V1}/students?per_page=2`, demo.keys.read)
        assert.strictEqual(wire.status, 200)
        assert.strictEqual(wire.headers.get("content-type"), JSON_CONTENT_TYPE)
        const students = yield* reader.students.list({ query: { per_page: 2 } })
        assert.strictEqual(students.data.length, 2)
        assert.isAtLeast(totalOf(students.meta), 200)

        const card = yield* reader.students.get({ params: { id: Ids.StudentId.make(students.data[0]!.id) } })
        assert.isArray(card.data.active_groups)

        const writer = yield* typedClient(base, { key: demo.keys.write })
        const groups = yield* writer.groups.list({ query: { per_page: 100 } })
        assert.isAtLeast(groups.data.length, 6)

        const noKey = yield* raw.get(`${V1}/students`)
        assert.deepStrictEqual([noKey.status, errorOf(noKey).code, errorOf(noKey).fields], [
          401,
          "unauthorized",
          { reason: "missing_or_malformed_key" }
        ])
        const anonymous = yield* typedClient(base)
        const unauthorized = yield* anonymous.students.list({ query: {} }).pipe(failsWith(Errors.Unauthorized))
        assert.deepStrictEqual(unauthorized.fields, { reason: "missing_or_malformed_key" })
        const unknown = yield* raw.get(`${V1}/unknown`, demo.keys.read)
        assert.deepStrictEqual([unknown.status, errorOf(unknown).code], [404, "not_found"])
        const ready = yield* raw.get("/health/ready")
        assert.deepStrictEqual([ready.status, ready.json], [200, { status: "ready" }])
        const openapi = yield* raw.get(`${V1}/openapi.json`)
        assert.strictEqual(openapi.status, 200)

        api.stop()
        return yield* Effect.promise(() => api.exited)
      }))
      assert.strictEqual(exitCode, 0)
    }), 60_000)
})
