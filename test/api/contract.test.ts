/**
 * The contract as a client sees it: the OpenAPI document declares
 * `Retry-After` on every 429 from the contract itself, and a typed client
 * derived from `PublicApi` (`HttpApiClient`) decodes the error envelopes
 * back to the error table's classes: a 429 to `RateLimitExceeded` with its
 * `Retry-After`, a 401 to `Unauthorized` with its reason, a 404 to
 * `NotFound`. The API runs in process over this file's database, with a
 * budget of 2 requests per window so the third is a 429.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpRouter, HttpServer } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { defaultOptions, RateLimitOptions } from "@school/api/RateLimiter"
import { AppRoutes, OPENAPI_PATH } from "@school/api/Server"
import { Errors, Ids } from "@school/domain"
import { PublicApi } from "@school/domain/api/PublicApi"
import { SqlClient } from "effect/sql"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const BUDGET = 2

/** A `fetch` that answers from the API's routes in process. */
class InProcessFetch extends Context.Service<InProcessFetch, {
  readonly fetch: typeof globalThis.fetch
}>()("test/api/contract/InProcessFetch") {
  static readonly layer = Layer.effect(InProcessFetch, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const options = { ...defaultOptions, budgets: Option.some({ byPlan: {}, fallback: BUDGET }) }
    const { handler, dispose } = HttpRouter.toWebHandler(
      AppRoutes.pipe(
        Layer.provide(Layer.succeed(RateLimitOptions, options)),
        Layer.provide(Layer.succeed(SqlClient.SqlClient, sql)),
        Layer.provide(HttpServer.layerServices)
      ),
      { disableLogger: true }
    )
    yield* Effect.addFinalizer(() => Effect.promise(() => dispose()))
    const fetch: typeof globalThis.fetch = (input, init) => handler(new Request(input, init))
    return InProcessFetch.of({ fetch })
  }))
}

/** The typed client, authenticating with `key`. */
const clientWith = (key: string) =>
  Effect.gen(function*() {
    const { fetch } = yield* InProcessFetch
    return yield* HttpApiClient.make(PublicApi, {
      baseUrl: "http://localhost",
      transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(key))
    }).pipe(Effect.provide(FetchHttpClient.layer), Effect.provideService(FetchHttpClient.Fetch, fetch))
  })

const Header = Schema.Struct({
  required: Schema.Boolean,
  schema: Schema.Struct({ type: Schema.String, pattern: Schema.String })
})
const Document = Schema.Struct({
  paths: Schema.Record(
    Schema.String,
    Schema.Record(
      Schema.String,
      Schema.Struct({
        responses: Schema.Record(
          Schema.String,
          Schema.Struct({ headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)) })
        )
      })
    )
  )
})

layer(InProcessFetch.layer.pipe(Layer.provideMerge(TestDatabase.layer)), { excludeTestServices: true })(
  "the contract, from a client",
  (it) => {
    it.effect("every operation documents its 429 with a required Retry-After of whole seconds", () =>
      Effect.gen(function*() {
        const { fetch } = yield* InProcessFetch
        const document = Schema.decodeUnknownSync(Document)(
          yield* Effect.promise(() => fetch(`http://localhost${OPENAPI_PATH}`).then((response) => response.json()))
        )
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
        const error = yield* Effect.flip(client.reference.filials({ query: {} }))
        assert.instanceOf(error, Errors.RateLimitExceeded)
        if (error instanceof Errors.RateLimitExceeded) {
          const retryAfter = error.headers["retry-after"]
          assert.isTrue(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, String(retryAfter))
          assert.include(error.message, `Retry after ${retryAfter} second`)
          assert.isUndefined(error.fields)
        }
      }))

    it.effect("a 401 decodes to Unauthorized with its reason, a 404 to NotFound", () =>
      Effect.gen(function*() {
        const { schoolId } = yield* Fixtures.school(null, "Contract 2")
        const revoked = yield* clientWith(yield* Fixtures.key(schoolId, { revoked: true }))
        const unauthorized = yield* Effect.flip(revoked.students.list({ query: {} }))
        assert.instanceOf(unauthorized, Errors.Unauthorized)
        assert.deepStrictEqual(unauthorized instanceof Errors.Unauthorized ? unauthorized.fields : undefined, {
          reason: "revoked_key"
        })
        const client = yield* clientWith(yield* Fixtures.key(schoolId))
        const missing = yield* Effect.flip(client.students.get({ params: { id: Ids.StudentId.make(2_147_483_647) } }))
        assert.instanceOf(missing, Errors.NotFound)
      }))
  }
)
