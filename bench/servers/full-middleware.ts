/**
 * The subject of the "full middleware, no database route" scenario: the API
 * process exactly as apps/api/src/Server.ts and main.ts compose it (settings
 * and logging, envelope, request validation, authentication and rate limit,
 * the access log, every route), except that the students handlers are
 * given a `Students` service answering GET /students from a page read once at
 * start. What is left per request is our middleware; its authentication and
 * rate limit still make their round trip, as they do in the API.
 *
 * The composition is Server.ts's own `ServerLayerNoDeps` (routes, access log,
 * the API's Node server, the purge job) with the API's settings and pool,
 * given this `Students` before the rest of its `Repositories`: the handlers
 * and the middleware are the API's own.
 *
 * Env: as the API (DATABASE_URL, PORT, HOST, LOG_LEVEL) and BENCH_SCHOOL_ID,
 * the school whose first page is served.
 */
import { Effect, Layer } from "effect"
import { ApiSettings } from "@school/api/ApiSettings"
import { ApiSqlLayer, Repositories, ServerLayerNoDeps } from "@school/api/Server"
import { runMain } from "@school/runtime/Main"
import * as Settings from "@school/runtime/Settings"
import { StudentsFromMemory } from "../lib/StudentsFromMemory.ts"

const program = Layer.launch(ServerLayerNoDeps.pipe(
  Layer.provide(StudentsFromMemory),
  Layer.provide(Repositories),
  Layer.provide(ApiSqlLayer)
)).pipe(Effect.provide(Settings.layer(ApiSettings, "api")))

runMain(program)
