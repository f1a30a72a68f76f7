/**
 * End to end (issue 2): the real API process (apps/api/src/main.ts) against a
 * real database seeded with the demo school, driven over HTTP with `fetch`,
 * then stopped with SIGTERM, which must exit 0.
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { seedDemo } from "@school/persistence/DemoSeed"
import { Effect } from "effect"
import { startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"


layer(TestDatabase.layer)("the real API process", (it) => {
  it.effect("serves the demo school over HTTP and exits 0 on SIGTERM", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const demo = yield* seedDemo()
      const port = yield* Effect.orDie(freePort)
      const base = `http://127.0.0.1:${port}`
      const exitCode = yield* Effect.scoped(Effect.gen(function*() {
        const api = yield* startApi(database.url, port)
        const call = (path: string, key?: string) =>
          Effect.promise(async () => {
            const res = await fetch(`${base}${path}`, key === undefined ? {} : { headers: { authorization: `Bearer ${key}` } })
            return { status: res.status, type: res.headers.get("content-type"), body: await res.json() as any }
          })

        const students = yield* call("/api/public/v1/students?per_page=2", demo.keys.read)
        assert.strictEqual(students.status, 200)
        assert.strictEqual(students.type, "application/json; charset=utf-8")
        assert.strictEqual(students.body.data.length, 2)
        assert.isAtLeast(students.body.meta.total, 200)

        const card = yield* call(`/api/public/v1/students/${students.body.data[0].id}`, demo.keys.read)
        assert.strictEqual(card.status, 200)
        assert.isArray(card.body.data.active_groups)

        const groups = yield* call("/api/public/v1/groups?per_page=100", demo.keys.write)
        assert.isAtLeast(groups.body.data.length, 6)

        const noKey = yield* call("/api/public/v1/students")
        assert.deepStrictEqual([noKey.status, noKey.body.error.code, noKey.body.error.fields], [
          401,
          "unauthorized",
          { reason: "missing_or_malformed_key" }
        ])
        const unknown = yield* call("/api/public/v1/unknown", demo.keys.read)
        assert.deepStrictEqual([unknown.status, unknown.body.error.code], [404, "not_found"])
        const ready = yield* call("/health/ready")
        assert.deepStrictEqual([ready.status, ready.body], [200, { status: "ready" }])
        const openapi = yield* call("/api/public/v1/openapi.json")
        assert.strictEqual(openapi.status, 200)

        api.stop()
        return yield* Effect.promise(() => api.exited)
      }))
      assert.strictEqual(exitCode, 0)
    }), 60_000)
})
