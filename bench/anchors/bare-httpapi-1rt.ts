/**
 * The `bare-httpapi-1rt` anchor: `bare-httpapi` (one Effect
 * HttpApi route, no middleware, no logger, the same bytes) whose handler
 * makes ONE trivial database round trip per request (`SELECT 1`) through
 * the API's driver and pool (`@school/persistence/Sql`, 10 connections).
 * The floor for a server whose rate limiter is shared through the
 * database: our middleware is compared with it in the `middleware`
 * scenario.
 *
 * Env: BENCH_BODY_FILE, DATABASE_URL, PORT, HOST.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import * as Sql from "@school/persistence/Sql"

const body = new Uint8Array(readFileSync(process.env["BENCH_BODY_FILE"] ?? ""))

class BareApi extends HttpApi.make("bare").add(
  HttpApiGroup.make("students").add(
    HttpApiEndpoint.get("list", "/api/public/v1/students", { success: Schema.Unknown })
  )
) {}

const StudentsHandlers = HttpApiBuilder.group(BareApi, "students", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return handlers.handle("list", () =>
      sql`SELECT 1`.pipe(
        Effect.orDie,
        Effect.as(HttpServerResponse.uint8Array(body, { contentType: "application/json; charset=utf-8" }))
      ))
  }))

HttpRouter.serve(HttpApiBuilder.layer(BareApi).pipe(Layer.provide(StudentsHandlers)), {
  disableLogger: true,
  disableListenLog: true
}).pipe(
  Layer.provide(NodeHttpServer.layer(createServer, {
    port: Number(process.env["PORT"] ?? 3003),
    host: process.env["HOST"] ?? "127.0.0.1"
  })),
  Layer.provide(Sql.layer({ url: process.env["DATABASE_URL"] ?? "", applicationName: "school-bench-bare-httpapi-1rt" })),
  Layer.launch,
  NodeRuntime.runMain
)
