/**
 * The contract as a client sees it: the OpenAPI document declares
 * `Retry-After` on every 429 from the contract itself, and a typed client
 * derived from `PublicApi` (`HttpApiClient`) decodes the error envelopes
 * back to the error table's classes: a 429 to `RateLimitExceeded` with its
 * `Retry-After`, a 401 to `Unauthorized` with its reason, a 404 to
 * `NotFound`. The API is `TestServer` over this file's database, with a
 * budget of 2 requests per window so the third is a 429.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { OPENAPI_PATH } from "@school/api/Server"
import { Errors, Ids } from "@school/domain"
import { failsWith } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { ResponseHeaders } from "../support/OpenApiDocument.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const BUDGET = 2

const Env = TestServer.layer({ rateLimit: { budgets: Option.some({ byPlan: {}, fallback: BUDGET }) } }).pipe(
  Layer.provideMerge(TestDatabase.layer)
)

/** The typed client, authenticating with `key`. */
const clientWith = (key: string) => Effect.flatMap(TestServer, (server) => server.client(key))

const Header = Schema.Struct({
  required: Schema.Boolean,
  schema: Schema.Struct({ type: Schema.String, pattern: Schema.String })
})

layer(Env, { excludeTestServices: true })(
  "the contract, from a client",
  (it) => {
    it.effect("every operation documents its 429 with a required Retry-After of whole seconds", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const document = Schema.decodeUnknownSync(ResponseHeaders)((yield* server.raw.get(OPENAPI_PATH)).json)
        const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
          Object.entries(methods).map(([method, operation]) => [`${method} ${path}`, operation] as const)
        )
        assert.isAtLeast(operations.length, 11)
        for (const [name, operation] of operations) {
          const tooMany = operation.responses["429"]
          assert.isDefined(tooMany, name)
          const header = Schema.decodeUnknownSync(Header)(tooMany?.headers?.["retry-after"])
          assert.isTrue(header.required, name)
          assert.deepStrictEqual([header.schema.type, header.schema.pattern], ["string", "^[1-9][0-9]*$"], name)
        }
      }))

    it.effect("a 429 decodes to RateLimitExceeded carrying its Retry-After", () =>
      Effect.gen(function*() {
        const { schoolId } = yield* Fixtures.school(null, "Contract")
        const client = yield* clientWith(yield* Fixtures.key(schoolId))
        for (let i = 0; i < BUDGET; i++) {
          const page = yield* client.reference.filials({ query: {} })
          assert.strictEqual(page.meta.per_page, 20)
        }
        const error = yield* client.reference.filials({ query: {} }).pipe(failsWith(Errors.RateLimitExceeded))
        const retryAfter = error.headers["retry-after"]
        assert.isTrue(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, String(retryAfter))
        assert.include(error.message, `Retry after ${retryAfter} second`)
        assert.isUndefined(error.fields)
      }))

    it.effect("a 401 decodes to Unauthorized with its reason, a 404 to NotFound", () =>
      Effect.gen(function*() {
        const { schoolId } = yield* Fixtures.school(null, "Contract 2")
        const revoked = yield* clientWith(yield* Fixtures.key(schoolId, { revoked: true }))
        const unauthorized = yield* revoked.students.list({ query: {} }).pipe(failsWith(Errors.Unauthorized))
        assert.deepStrictEqual(unauthorized.fields, { reason: "revoked_key" })
        assert.strictEqual(unauthorized.message, "The API key has been revoked.")
        const client = yield* clientWith(yield* Fixtures.key(schoolId))
        const missing = yield* client.students.get({ params: { id: Ids.StudentId.make(2_147_483_647) } }).pipe(
          failsWith(Errors.NotFound)
        )
        assert.strictEqual(missing.message, "Student 2147483647 not found.")
        assert.isUndefined(missing.fields)
      }))
  }
)
