/**
 * The one way tests serve the public API: the real routes (`AppRoutes`,
 * with every middleware, the error envelope and the OpenAPI document)
 * listening on 127.0.0.1:<random> in this process, with their own pool
 * against this file's database (`TestDatabase`), and the two clients of
 * `Clients.ts` over its address: `client(key)`, derived from the contract,
 * and `raw`, for bytes, envelopes and headers.
 *
 *   const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))
 *   layer(Env, { excludeTestServices: true })("…", (it) => {
 *     it.effect("…", () => Effect.gen(function*() {
 *       const server = yield* TestServer
 *       const api = yield* server.client(key)
 *       const page = yield* api.students.list({ query: { per_page: 5 } })
 *       const reply = yield* server.raw.get(`${V1}/students?per_page=0`, key)
 *     }))
 *   })
 *
 * Settings (docs/operations.md "Settings") come from `settings`, as the
 * environment would give them (`{ IDEMPOTENCY_WAIT: "300ms" }`), and from
 * nothing else: the test process's own environment does not reach the
 * server, so an unset setting has its default.
 *
 * The server lives on real time (sockets, pool timeouts, the rate limiter's
 * LISTEN): use it with `excludeTestServices: true` or in `it.live`, never
 * under the TestClock. What it logs is printed, so an unexpected 500 shows
 * its cause; a test that provokes one on purpose wraps the request in
 * `expectingLogs`, which keeps those lines for its assertions instead.
 */
import { defaultOptions, RateLimitOptions } from "@school/api/RateLimiter"
import { AppRoutes, createApiServer, listenApi, serveApi } from "@school/api/Server"
import * as Sql from "@school/persistence/Sql"
import { SHUTDOWN_TIMEOUT } from "@school/runtime/Settings"
import { ConfigProvider, Context, Effect, Layer, Logger } from "effect"
import { HttpServer } from "effect/http"
import { type PublicClient, type RawClient, rawClient, typedClient, type TypedClientOptions } from "./Clients.ts"
import { type LogEntry, makeLogGate } from "./Logs.ts"
import { TestDatabase } from "./TestDatabase.ts"

export interface TestServerOptions {
  /** The settings, by name, as the environment would give them; each one omitted has its default. */
  readonly settings?: Readonly<Record<string, string>>
  /** The server's pool; 10 connections, as in production, when omitted. */
  readonly maxConnections?: number
  /** The rate limiter's options over the defaults (a budget, an injected clock). */
  readonly rateLimit?: Partial<RateLimitOptions>
}

export class TestServer extends Context.Service<TestServer, {
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string
  /** Plain requests to the server. */
  readonly raw: RawClient
  /** The contract's client, sending `key` as its bearer token. */
  readonly client: (key?: string, options?: Omit<TypedClientOptions, "key">) => Effect.Effect<PublicClient>
  /** Runs `self` with the server's log lines expected: kept and returned instead of printed. */
  readonly expectingLogs: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<readonly [A, ReadonlyArray<LogEntry>], E, R>
}>()("test/support/TestServer") {
  /** The API listening on 127.0.0.1:<random> against `TestDatabase`. */
  static readonly layer = (options: TestServerOptions = {}): Layer.Layer<TestServer, never, TestDatabase> => {
    const logs = makeLogGate()
    return Layer.effect(
      TestServer,
      Effect.gen(function*() {
        const server = yield* HttpServer.HttpServer
        const baseUrl = HttpServer.formatAddress(server.address)
        return TestServer.of({
          baseUrl,
          raw: rawClient(baseUrl),
          client: (key, clientOptions = {}) => typedClient(baseUrl, key === undefined ? clientOptions : { ...clientOptions, key }),
          expectingLogs: logs.expecting
        })
      })
    ).pipe(
      Layer.provide(
        // Request ids as the API process gives them; no access log (tests would print a line per request).
        serveApi(AppRoutes, { accessLog: false, disableListenLog: true }).pipe(
          Layer.provideMerge(Layer.unwrap(Effect.gen(function*() {
            const shutdownTimeout = yield* SHUTDOWN_TIMEOUT
            return listenApi(createApiServer(shutdownTimeout), { port: 0, host: "127.0.0.1" })
          })))
        )
      ),
      Layer.provide(Layer.succeed(RateLimitOptions, { ...defaultOptions, ...options.rateLimit })),
      Layer.provide(Layer.unwrap(Effect.gen(function*() {
        const database = yield* TestDatabase
        return Sql.layer({ url: database.url, maxConnections: options.maxConnections ?? 10, applicationName: "test-api" })
      }))),
      Layer.provide(Logger.layer([logs.logger])),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(options.settings ?? {}))),
      Layer.orDie
    )
  }
}
