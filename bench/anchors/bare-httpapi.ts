/**
 * The `bare-httpapi` anchor: a minimal Effect HttpApi with the one
 * route GET /api/public/v1/students answering the same bytes
 * (BENCH_BODY_FILE) with no middleware at all (no logger, no auth, no
 * envelope). The floor that our middleware stack adds to.
 *
 * Env: BENCH_BODY_FILE, PORT, HOST.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"

const body = new Uint8Array(readFileSync(process.env["BENCH_BODY_FILE"] ?? ""))

class BareApi extends HttpApi.make("bare").add(
  HttpApiGroup.make("students").add(
    HttpApiEndpoint.get("list", "/api/public/v1/students", { success: Schema.Unknown })
  )
) {}

const StudentsHandlers = HttpApiBuilder.group(BareApi, "students", (handlers) =>
  handlers.handle("list", () =>
    Effect.succeed(HttpServerResponse.uint8Array(body, { contentType: "application/json; charset=utf-8" }))))

HttpRouter.serve(HttpApiBuilder.layer(BareApi).pipe(Layer.provide(StudentsHandlers)), {
  disableLogger: true,
  disableListenLog: true
}).pipe(
  Layer.provide(NodeHttpServer.layer(createServer, {
    port: Number(process.env["PORT"] ?? 3003),
    host: process.env["HOST"] ?? "127.0.0.1"
  })),
  Layer.launch,
  NodeRuntime.runMain
)
