/**
 * The API's routes served in-process against this file's test database, and
 * a small client over them: `request(path, init)` gives status, headers and
 * the parsed JSON body. Everything the real server does (middleware, error
 * envelope, OpenAPI) runs; only the socket is skipped. Tests that need real
 * concurrency or the real process use `TestServer` or spawn `main.ts`.
 *
 *   layer(TestApi.layer)("…", (it) => { it.effect("…", () => Effect.gen(function*() {
 *     const api = yield* TestApi
 *     const res = yield* api.request("/api/public/v1/students", { key })
 *   })) })
 */
import { AppRoutes } from "@school/api/Server"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { TestDatabase } from "./TestDatabase.ts"

export interface TestResponse {
  readonly status: number
  readonly headers: Headers
  /** The raw body text (for byte-exact comparisons). */
  readonly text: string
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly body: any
}

export interface RequestOptions extends Omit<RequestInit, "headers"> {
  /** An API key sent as `Authorization: Bearer <key>`. */
  readonly key?: string
  readonly headers?: Record<string, string>
}

export class TestApi extends Context.Service<TestApi, {
  readonly request: (path: string, options?: RequestOptions) => Effect.Effect<TestResponse>
  readonly handler: (request: Request) => Promise<Response>
}>()("@school/test/TestApi") {
  static readonly layerNoDb = Layer.effect(
    TestApi,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { handler, dispose } = HttpRouter.toWebHandler(
        AppRoutes.pipe(
          Layer.provide(Layer.succeed(SqlClient.SqlClient, sql)),
          Layer.provide(HttpServer.layerServices)
        ),
        { disableLogger: true }
      )
      yield* Effect.addFinalizer(() => Effect.promise(() => dispose()))
      const request = (path: string, options: RequestOptions = {}) =>
        Effect.promise(async () => {
          const { key, headers, ...init } = options
          const response = await handler(
            new Request(`http://localhost${path}`, {
              ...init,
              headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...headers }
            })
          )
          const text = await response.text()
          let body: unknown = undefined
          try {
            body = JSON.parse(text)
          } catch {
            body = undefined
          }
          return { status: response.status, headers: response.headers, text, body }
        })
      return TestApi.of({ request, handler })
    })
  )

  /** The API over a fresh database: TestApi, TestDatabase and SqlClient. */
  static readonly layer = TestApi.layerNoDb.pipe(Layer.provideMerge(TestDatabase.layer))
}
