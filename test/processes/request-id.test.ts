/**
 * Request ids (docs/operations.md "Request ids";
 * libs/domain/src/RequestId.ts): every response of the API process and of
 * the dispatcher's health listener carries `X-Request-Id`, the request's own
 * value when it is 1 to 128 visible ASCII characters, else a new one; the
 * API's log lines of that request carry it as `request_id`.
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import * as RequestId from "@school/domain/RequestId"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { PublicApi } from "@school/domain/api/PublicApi"
import { Effect, Option, Schema } from "effect"
import { OpenApi } from "effect/http-api"
import { rawClient, V1 } from "../support/Clients.ts"
import { ResponseHeaders } from "../support/OpenApiDocument.ts"
import { entryPoints, lines, runUntil, startDispatcher } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const GENERATED = /^[A-Za-z0-9_-]{22}$/

/** Values a client may send and get back as they are. */
const SANE = ["abc-123", "client.id:42/x?y=z", "~".repeat(RequestId.MAX_LENGTH), "!"]
/** Values that are replaced: too long, empty, a space, a tab, beyond ASCII. */
const INSANE = ["x".repeat(RequestId.MAX_LENGTH + 1), "", "a b", "a\tb", "caf\u00e9"]

layer(TestDatabase.layer, { excludeTestServices: true })("request ids", (it) => {
  it.effect("the API: echoed when sane, generated otherwise, on every kind of answer, and in the request's log lines", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* Effect.orDie(freePort)
      const raw = rawClient(`http://127.0.0.1:${port}`)
      const finished = yield* runUntil(
        entryPoints.api,
        { DATABASE_URL: database.url, PORT: String(port), HOST: "127.0.0.1", LOG_FORMAT: "json", LOG_LEVEL: "info" },
        "listening on http",
        "SIGTERM",
        () =>
          Effect.gen(function*() {
            const idOf = (path: string, headers: Record<string, string> = {}, method = "GET") =>
              Effect.map(raw.request(path, { method, headers }), (reply) => ({ status: reply.status, id: reply.headers.get(RequestId.HEADER) }))
            // Every kind of answer: health, a public 401, a back-office 401, a 404, a 405, the panel, an OpenAPI document.
            const paths: ReadonlyArray<readonly [path: string, method: string, status: number]> = [
              ["/health/live", "GET", 200],
              [`${V1}/students`, "GET", 401],
              ["/api/crm/v1/employees", "GET", 401],
              ["/no/such/route", "GET", 404],
              [`${V1}/students`, "DELETE", 405],
              ["/crm", "GET", 200],
              [`${V1}/openapi.json`, "GET", 200]
            ]
            const echoed: Array<string | null> = []
            for (const [path, method, status] of paths) {
              const sent = `probe-${echoed.length}`
              const reply = yield* idOf(path, { [RequestId.HEADER]: sent }, method)
              assert.strictEqual(reply.status, status, path)
              echoed.push(reply.id)
              assert.strictEqual(reply.id, sent, `${method} ${path}`)
            }
            for (const value of SANE) assert.strictEqual((yield* idOf("/health/live", { [RequestId.HEADER]: value })).id, value)
            const generated: Array<string> = []
            for (const value of INSANE) {
              const { id } = yield* idOf("/health/live", { [RequestId.HEADER]: value })
              assert.match(id ?? "", GENERATED, JSON.stringify(value))
              generated.push(id ?? "")
            }
            generated.push((yield* idOf("/health/live")).id ?? "", (yield* idOf("/health/live")).id ?? "")
            assert.strictEqual(new Set(generated).size, generated.length, "each generated id is new")
            // The log line of a request carries its id.
            yield* idOf(`${V1}/students`, { [RequestId.HEADER]: "find-me-in-the-log" })
            yield* Effect.sleep("200 millis")
            return generated
          }).pipe(Effect.orDie)
      )
      assert.strictEqual(finished.code, 0, finished.stderr)
      assert.isTrue(Option.isSome(finished.result))
      const entries = lines(finished.stderr).map((line): unknown => JSON.parse(line))
      const tagged = entries.filter((entry) => JSON.stringify(entry).includes(`"request_id":"find-me-in-the-log"`))
      assert.isAtLeast(tagged.length, 1, finished.stderr.slice(-2000))
      assert.isTrue(
        tagged.some((entry) => JSON.stringify(entry).includes(`"http.route":"${V1}/students"`)),
        "the access line of that request"
      )
      // And no line carries an id a client sent that was not sane.
      for (const value of INSANE.filter((v) => v.length > 0)) {
        assert.notInclude(finished.stderr, `"request_id":${JSON.stringify(value)}`)
      }
    }), 60_000)

  it.effect("the dispatcher's health listener: echoed when sane, generated otherwise", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const dispatcher = yield* startDispatcher(database.url)
      const base = `http://127.0.0.1:${dispatcher.port}`
      const idOf = (path: string, headers: Record<string, string> = {}) =>
        Effect.promise(() => fetch(`${base}${path}`, { headers }).then((reply) => reply.headers.get(RequestId.HEADER)))
      assert.strictEqual(yield* idOf("/health/ready", { [RequestId.HEADER]: "probe-ready" }), "probe-ready")
      assert.strictEqual(yield* idOf("/nothing", { [RequestId.HEADER]: "probe-404" }), "probe-404")
      assert.match((yield* idOf("/health/live", { [RequestId.HEADER]: "a b" })) ?? "", GENERATED)
      assert.match((yield* idOf("/health/live")) ?? "", GENERATED)
    }).pipe(Effect.scoped), 30_000)

  it("both OpenAPI documents declare the header on every answer of every operation", () => {
    for (const document of [OpenApi.fromApi(PublicApi), OpenApi.fromApi(BackOfficeApi)]) {
      const { paths } = Schema.decodeUnknownSync(ResponseHeaders)(JSON.parse(JSON.stringify(document)))
      let answers = 0
      for (const [path, operations] of Object.entries(paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          for (const [status, response] of Object.entries(operation.responses)) {
            answers++
            assert.deepStrictEqual(response.headers?.[RequestId.HEADER], {
              description: RequestId.DESCRIPTION,
              required: true,
              schema: RequestId.SCHEMA
            }, `${method} ${path} ${status}`)
          }
        }
      }
      assert.isAtLeast(answers, 20)
    }
  })
})
