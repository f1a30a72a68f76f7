/**
 * The API process while its PostgreSQL is away (docs/operations.md "Database
 * away", docs/decisions.md "Requests and responses"): every request that
 * needs the database gets 503 service_unavailable with Retry-After in the
 * envelope, not 500 internal_error; once the database is back, requests
 * succeed again within a few seconds, without restarting the API.
 *
 * The test starts its own embedded PostgreSQL (never the run's shared server)
 * and stops and restarts it.
 */
import { assert, describe, it } from "@effect/vitest"
import { PublicApi } from "@school/domain/api/PublicApi"
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { freePort } from "@school/runtime/Ports"
import { Effect, Predicate } from "effect"
import { OpenApi } from "effect/http-api"
import * as Fixtures from "../support/Fixtures.ts"
import { rawClient } from "../support/Clients.ts"
import { startApi } from "../support/Processes.ts"
import { restartableDatabase } from "../support/RestartableDatabase.ts"

const get = (url: string, key: string) => rawClient("").get(url, key)

/** Polls `url` until it answers `status` (or `deadline` ms pass); the last answer. */
const until = (url: string, key: string, status: number, deadline: number) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (true) {
      const response = yield* get(url, key)
      if (response.status === status || Date.now() - started > deadline) return response
      yield* Effect.sleep("100 millis")
    }
  })

describe("the database away", () => {
  it("OpenAPI documents 503 service_unavailable with Retry-After on every operation", () => {
    const spec: unknown = JSON.parse(JSON.stringify(OpenApi.fromApi(PublicApi)))
    const paths = Predicate.hasProperty(spec, "paths") && Predicate.isObject(spec.paths) ? spec.paths : {}
    let operations = 0
    for (const [path, methods] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(Predicate.isObject(methods) ? methods : {})) {
        operations++
        const responses = Predicate.hasProperty(operation, "responses") ? operation.responses : undefined
        const unavailable = Predicate.hasProperty(responses, "503") ? responses["503"] : undefined
        assert.isDefined(unavailable, `${method} ${path} documents no 503`)
        const headers = Predicate.hasProperty(unavailable, "headers") ? unavailable.headers : undefined
        assert.isTrue(Predicate.hasProperty(headers, "retry-after") || Predicate.hasProperty(headers, "Retry-After"), `${method} ${path}: 503 without Retry-After`)
      }
    }
    assert.isAbove(operations, 5)
  })


  it.live("503 service_unavailable with Retry-After while PostgreSQL is stopped; 200 again once it is back", () =>
    Effect.gen(function*() {
      const { start: startDatabase } = yield* restartableDatabase("school-away-")
      const first = yield* startDatabase
      const key = yield* Effect.gen(function*() {
        yield* Effect.orDie(runMigrations)
        const { schoolId } = yield* Fixtures.school("pro", "Away school")
        return yield* Fixtures.key(schoolId)
      }).pipe(Effect.provide(Sql.layer({ url: first.url, maxConnections: 1 })))

      const apiPort = yield* freePort
      yield* startApi(first.url, apiPort)
      const students = `http://127.0.0.1:${apiPort}/api/public/v1/students`

      assert.strictEqual((yield* get(students, key)).status, 200)

      yield* first.stop
      const away = yield* get(students, key)
      assert.strictEqual(away.status, 503, away.text)
      assert.match(away.headers.get("content-type") ?? "", /^application\/json/)
      assert.match(away.headers.get("retry-after") ?? "", /^[1-9]\d*$/)
      const body: unknown = JSON.parse(away.text)
      assert.deepStrictEqual(body, {
        error: { code: "service_unavailable", message: "The database is unavailable. Try again later." }
      })
      // A write, too (no idempotency claim can be taken).
      const write = yield* rawClient(`http://127.0.0.1:${apiPort}`).post("/api/public/v1/leads", {
        key,
        idempotencyKey: "away-1",
        body: { fio: "A", phone: "+7 900 000-00-00" }
      })
      assert.strictEqual(write.status, 503, write.text)
      // The back office answers in its own envelope.
      const crm = yield* rawClient(`http://127.0.0.1:${apiPort}`).post("/api/crm/v1/sessions", {
        body: { email: "nobody@away.test", password: "a long password" }
      })
      assert.strictEqual(crm.status, 503, crm.text)
      assert.match(crm.headers.get("retry-after") ?? "", /^[1-9]\d*$/)
      assert.deepStrictEqual(JSON.parse(crm.text), {
        success: false,
        code: "SERVICE_UNAVAILABLE",
        message: "The database is unavailable. Try again later."
      })

      yield* startDatabase
      const back = yield* until(students, key, 200, 10_000)
      assert.strictEqual(back.status, 200, back.text)
    }).pipe(Effect.scoped), 120_000)
})
