/**
 * The server of the `ladder` scenario (bench/scenarios/ladder.ts): GET
 * /api/public/v1/students served with as much of the API's request path as
 * BENCH_RUNG says (a rung's name or its index in RUNGS). Each rung is the
 * previous one plus one piece, and every piece is the API's own module,
 * imported, composed the way apps/api/src/Server.ts and main.ts compose it:
 *
 *  0 bare               an Effect HttpApi with the one route answering the page's bytes (BENCH_BODY_FILE, the API's
 *                       own answer to the scenario's request), no middleware, no logger: the `bare-httpapi` anchor
 *  1 process            + the API process's setup as main.ts provides it: its settings and logger
 *                       (Settings.layer(ApiSettings)), its tracing (Tracing.layer: off without an OTLP endpoint)
 *  2 request-id         + AccessLog.requestIds (X-Request-Id, the log annotation)
 *  3 access-log         + AccessLog.middleware with Server.ts's route templates (one Info line per request), and
 *                       Server.ts's RequestSpanNames (the same templates name a request's span)
 *  4 metrics            + Server.ts's `serveMiddleware` as it is (the access log's pass counts the request series)
 *                       and Metrics.ts's MetricsRoute (/metrics, its counters, the pool and process gauges)
 *  5 parser-errors      + the API's Node server (Server.ts ApiHttpServer: `clientError` in the envelope, Node's Host
 *                       check off, closeWhenIdle), its router configuration (StrictRouter), and ParserErrors.ts
 *                       `refusedRequest` in a global router middleware (see below)
 *  6 authentication     + Authentication (below) with the API's pool (ApiSqlLayer): the key looked up by its prefix
 *                       and its secret's hash compared, the school on the access line, CurrentKey
 *  7 auth-failure-guard + the failed-auth guard: Authentication.ts AuthenticationLive as it is, RATE_LIMIT_WINDOW=off
 *  8 rate-limiter       + the rate limiter: AuthenticationLive as in production (RATE_LIMIT_WINDOW's default)
 *  9 validation         + the contract's students group as PublicApi declares it (PublicApi.ts StudentsGroup: its
 *                       query schema decoded, RequestValidation with RequestValidation.ts's layer), handlers still
 *                       answering the page's bytes (a handler's HttpServerResponse skips the success encoding)
 * 10 error-envelope     + ErrorEnvelope.ts ErrorEnvelope with Server.ts's allowedMethods, and MaxBodySize, as
 *                       Server.ts's AppRoutesNoDeps; it replaces rung 5's middleware, as it calls refusedRequest itself
 * 11 handler            + http/Students.ts StudentsHandlersNoDeps, the real handler with its success encoding, given a
 *                       Students whose list is the page read once at start (BENCH_SCHOOL_ID), as full-middleware does
 * 12 database           + the real Students repository: the page read from the database on every request
 * 13 api                the API process itself, as `npm run start:api` starts it (bundle, Node flags, every route,
 *                       main.ts): the scenario starts it, not this script
 *
 * Where this differs from the API, because the API composes a piece inside another:
 * - Rung 5: the API calls ParserErrors.ts `refusedRequest` inside ErrorEnvelope (rung 10); here a global router
 *   middleware calls it and answers its 400 with ErrorResponse.ts `errorResponse`, as ErrorEnvelope does, until
 *   rung 10 puts ErrorEnvelope in its place.
 * - Rung 6: AuthenticationLive gives itself the guard and the limiter (`Layer.provide` inside Authentication.ts), so
 *   authentication alone is this file's `AuthenticationAlone`: AuthenticationLive's `bearer` without the guard's
 *   `check`/`settle` and without the limiter's `blocked` (which answers None at once when nothing is counted), over
 *   the API's RateLimiter with RATE_LIMIT_WINDOW=off, whose `admit` is then the plain lookup
 *   (ApiKeys.findByPrefix: one statement, nothing counted, no batch) and the same `failureOf` (exported for this).
 * - Rungs 7 and 8 are AuthenticationLive itself; rung 7 runs it with RATE_LIMIT_WINDOW=off (the API's own setting,
 *   "for measurements only"), so its limiter looks the key up instead of counting it.
 * - Rungs 0 to 12 serve only the students group (the API serves every group of PublicApi and BackOfficeApi, the
 *   OpenAPI documents, reference pages, health and the panel) and run no idempotency or session purge; rung 13 is
 *   the API as it is, so the difference between 12 and 13 is all of that, the bundle, and main.ts.
 * The order is the issue's (its list of our middleware); on the request path ErrorEnvelope runs outside the
 * HttpApi middleware (authentication, validation), so its share is measured after them.
 *
 * The scenario starts each rung with the API's Node flags (package.json `start:api`) and bench/lib/HeapProbe.ts
 * preloaded, which measures allocation and GC per round (how it was verified against a known allocation is
 * written there: rung `bare` with 10.3 kB more per request showed +11.0 kB).
 *
 * Env: BENCH_RUNG; BENCH_BODY_FILE (rungs 0-10); BENCH_SCHOOL_ID (rung 11); and as the API: DATABASE_URL (rungs
 * 6-12), PORT, HOST, LOG_LEVEL… A rung's own settings (`env` below) are applied unless already set.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import * as ByteSize from "effect/ByteSize"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import type { SqlClient } from "effect/sql"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import { ApiSettings } from "@school/api/ApiSettings"
import { AuthenticationLive, failureOf } from "@school/api/Authentication"
import { ErrorEnvelope } from "@school/api/ErrorEnvelope"
import { errorResponse } from "@school/api/ErrorResponse"
import { StudentsHandlersNoDeps } from "@school/api/http/Students"
import { MetricsRoute } from "@school/api/Metrics"
import { refusedRequest } from "@school/api/ParserErrors"
import { RateLimiter } from "@school/api/RateLimiter"
import { RequestValidationLive } from "@school/api/RequestValidation"
import {
  allowedMethods,
  ApiHttpServer,
  ApiSqlLayer,
  MAX_BODY_BYTES,
  RequestSpanNames,
  routeTemplate,
  serveMiddleware,
  StrictRouter
} from "@school/api/Server"
import { ApiKey, Errors } from "@school/domain"
import { Authentication, CurrentKey } from "@school/domain/api/Middleware"
import { BASE_PATH, PublicApi, StudentsGroup } from "@school/domain/api/PublicApi"
import { Students } from "@school/persistence/Students"
import { StudentsFromMemory } from "../lib/StudentsFromMemory.ts"
import * as AccessLog from "@school/runtime/AccessLog"
import { runMain } from "@school/runtime/Main"
import * as Settings from "@school/runtime/Settings"
import * as Tracing from "@school/runtime/Tracing"

export interface Rung {
  readonly name: string
  /** What it adds to the rung before it. */
  readonly adds: string
  /** The API process itself (`npm run start:api`), started by the scenario instead of this script. */
  readonly apiProcess: boolean
  /** Settings it runs with besides the API's defaults. */
  readonly env: Readonly<Record<string, string>>
}

const rung = (name: string, adds: string, env: Record<string, string> = {}): Rung => ({ name, adds, apiProcess: false, env })

/** The rungs, in order; the scenario measures each and its table lists them so. */
export const RUNGS: ReadonlyArray<Rung> = [
  rung("bare", "bare HttpApi, the page's bytes"),
  rung("process", "+ settings, logger, tracing (main.ts)"),
  rung("request-id", "+ request id"),
  rung("access-log", "+ access log"),
  rung("metrics", "+ metrics (request series, /metrics)"),
  rung("parser-errors", "+ the API's Node server and router, parser errors"),
  rung("authentication", "+ authentication (key lookup)", { RATE_LIMIT_WINDOW: "off" }),
  rung("auth-failure-guard", "+ failed-auth guard", { RATE_LIMIT_WINDOW: "off" }),
  rung("rate-limiter", "+ rate limiter (counting statement, batched)"),
  rung("validation", "+ validation (the contract's students group)"),
  rung("error-envelope", "+ error envelope"),
  rung("handler", "+ real handler and encoding (page in memory)"),
  rung("database", "+ page read from the database"),
  { name: "api", adds: "the API process (npm run start:api)", apiProcess: true, env: {} }
]

const indexOf = (name: string): number => {
  const index = RUNGS.findIndex((r) => r.name === name)
  if (index < 0) throw new Error(`no rung ${name}`)
  return index
}

// ---------------------------------------------------------------------------
// The pieces
// ---------------------------------------------------------------------------

const fixedPage = (): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  const body = new Uint8Array(readFileSync(process.env["BENCH_BODY_FILE"] ?? ""))
  return Effect.sync(() => HttpServerResponse.uint8Array(body, { contentType: "application/json; charset=utf-8" }))
}

const studentsList = HttpApiEndpoint.get("list", "/students", { success: Schema.Unknown })

/** Rungs 0-5: one route, no HttpApi middleware (as bench/anchors/bare-httpapi.ts). */
class BareApi extends HttpApi.make("ladder").add(HttpApiGroup.make("students").add(studentsList)).prefix(BASE_PATH) {}

/** Rungs 6-8: the same route behind the contract's Authentication, added to the API as PublicApi adds it. */
class AuthenticatedApi extends HttpApi.make("ladder").add(HttpApiGroup.make("students").add(studentsList))
  .middleware(Authentication)
  .prefix(BASE_PATH)
{}

/**
 * Rungs 9-12: PublicApi restricted to its students group. Its id is PublicApi's, so the group's handlers are
 * built against PublicApi itself (`HttpApiBuilder.group(PublicApi, "students", …)`, as http/Students.ts does):
 * the routes served are PublicApi's, with their middleware, parse options, query and success schemas.
 */
class StudentsApi extends HttpApi.make("public-v1").add(StudentsGroup).middleware(Authentication).prefix(BASE_PATH) {}

/**
 * Rung 6: Authentication.ts AuthenticationLive's `bearer` without the failed-auth guard (and without the limiter's
 * `blocked`), over the API's RateLimiter with RATE_LIMIT_WINDOW=off (its `admit` is then the plain lookup).
 */
const AuthenticationAlone = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    return Authentication.of({
      bearer: Effect.fnUntraced(function*(httpEffect, { credential }) {
        const parsed = ApiKey.parseApiKey(Redacted.value(credential))
        if (Option.isNone(parsed)) {
          return yield* Errors.unauthorized("missing_or_malformed_key")
        }
        const { prefix, secret } = parsed.value
        const secretHash = ApiKey.hashSecret(secret)
        const found = yield* limiter.admit(prefix, secretHash)
        const failure = failureOf(found, secretHash)
        if (Option.isSome(failure)) return yield* Errors.unauthorized(failure.value)
        const { key } = Option.getOrThrow(found)
        yield* AccessLog.setSchool(key.school_id)
        return yield* Effect.provideService(httpEffect, CurrentKey, {
          keyId: key.id,
          schoolId: key.school_id,
          scope: key.scope,
          plan: key.plan
        })
      })
    })
  })
).pipe(Layer.provide(RateLimiter.layer))

/** Rung 5 to 9: ParserErrors.ts `refusedRequest` before routing, answered as ErrorEnvelope answers it. */
const RefusedRequests = HttpRouter.middleware((httpEffect) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const refused = refusedRequest(request)
    return refused === undefined
      ? httpEffect
      : Effect.succeed(HttpServerResponse.setHeader(errorResponse(refused), "connection", "close"))
  }), { global: true })

// ---------------------------------------------------------------------------
// A rung's composition
// ---------------------------------------------------------------------------

/** The program serving rung `level` until it is stopped. */
const serve = (level: number): Effect.Effect<never, unknown> => {
  const has = (name: string) => level >= indexOf(name)

  const routes = !has("authentication")
    ? HttpApiBuilder.layer(BareApi).pipe(
      Layer.provide(HttpApiBuilder.group(BareApi, "students", (handlers) => {
        const page = fixedPage()
        return handlers.handle("list", () => page)
      }))
    )
    : !has("validation")
    ? HttpApiBuilder.layer(AuthenticatedApi).pipe(
      Layer.provide(HttpApiBuilder.group(AuthenticatedApi, "students", (handlers) => {
        const page = fixedPage()
        return handlers.handle("list", () => page)
      })),
      Layer.provide(has("auth-failure-guard") ? AuthenticationLive : AuthenticationAlone)
    )
    : HttpApiBuilder.layer(StudentsApi).pipe(
      Layer.provide(
        !has("handler")
          ? HttpApiBuilder.group(PublicApi, "students", (handlers) => {
            const page = fixedPage()
            return handlers.handle("list", () => page).handle("get", () => page)
          })
          : StudentsHandlersNoDeps.pipe(Layer.provide(has("database") ? Students.layer : StudentsFromMemory))
      ),
      Layer.provide([AuthenticationLive, RequestValidationLive])
    )

  const withExtras = Layer.mergeAll(
    routes,
    has("metrics") ? MetricsRoute : Layer.empty,
    has("error-envelope") ? ErrorEnvelope(allowedMethods) : has("parser-errors") ? RefusedRequests : Layer.empty
  ).pipe(
    Layer.provide(
      has("error-envelope")
        ? Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES))
        : Layer.empty
    )
  )
  const app = has("parser-errors") ? withExtras.pipe(Layer.provideMerge(StrictRouter)) : withExtras

  const served = has("metrics")
    ? HttpRouter.serve(app, { disableLogger: true, middleware: serveMiddleware })
    : has("access-log")
    ? HttpRouter.serve(app, {
      disableLogger: true,
      middleware: (httpApp) => AccessLog.requestIds(AccessLog.middleware(routeTemplate)(httpApp))
    })
    : has("request-id")
    ? HttpRouter.serve(app, { disableLogger: true, middleware: AccessLog.requestIds })
    : HttpRouter.serve(app, { disableLogger: true })

  const server = has("parser-errors") ? ApiHttpServer : NodeHttpServer.layer(createServer, {
    port: Number(process.env["PORT"] ?? 3003),
    host: process.env["HOST"] ?? "127.0.0.1"
  })

  const listening = served.pipe(
    Layer.provide(has("access-log") ? RequestSpanNames : Layer.empty),
    Layer.provide(server),
    // Below rung 6 nothing asks for the pool, and none is made; the type is every rung's.
    Layer.provide(has("authentication") ? ApiSqlLayer : Layer.empty as Layer.Layer<SqlClient.SqlClient>)
  )
  const program: Effect.Effect<never, unknown> = Layer.launch(listening)
  return has("process")
    ? program.pipe(Effect.provide(Tracing.layer("school-api")), Effect.provide(Settings.layer(ApiSettings, "api")))
    : program
}

const chosen = (): number => {
  const wanted = process.env["BENCH_RUNG"] ?? ""
  const index = /^\d+$/.test(wanted) ? Number(wanted) : RUNGS.findIndex((r) => r.name === wanted)
  const found = RUNGS[index]
  if (found === undefined) {
    throw new Error(`BENCH_RUNG=${wanted}: name one of ${RUNGS.map((r, i) => `${i} ${r.name}`).join(", ")}`)
  }
  if (found.apiProcess) throw new Error(`BENCH_RUNG=${wanted} is the API process itself: npm run start:api`)
  for (const [name, value] of Object.entries(found.env)) process.env[name] ??= value
  return index
}

if (import.meta.main) runMain(serve(chosen()))
