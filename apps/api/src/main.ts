/**
 * The API process: reads the settings, serves the public API on HOST:PORT
 * against DATABASE_URL until SIGTERM/SIGINT, then lets in-flight requests
 * finish and exits 0. It says "listening" only once it listens; an address
 * it cannot listen on (already in use, not ours) is one error line in the
 * configured log format on stderr, and exit 1.
 */
import { Effect, Layer, Option } from "effect"
import { HttpServerError } from "effect/http"
import { runMain } from "@school/runtime/Main"
import { AlreadyLogged } from "@school/runtime/Reported"
import { InvalidSetting, Settings } from "@school/runtime/Settings"
import { ServerLayer, serverOptions } from "./Server.ts"

/** Why the server could not listen, from the system's error code. */
const listenProblem = (error: HttpServerError.ServeError): string => {
  const cause = error.cause
  const code = cause instanceof Error && "code" in cause && typeof cause.code === "string" ? cause.code : undefined
  switch (code) {
    case "EADDRINUSE":
      return "the address is already in use (EADDRINUSE); choose another PORT or stop what listens there"
    case "EADDRNOTAVAIL":
      return "no such address on this machine (EADDRNOTAVAIL); check HOST"
    case "EACCES":
      return "permission denied (EACCES); ports below 1024 need privileges"
    default:
      return cause instanceof Error ? cause.message : String(cause)
  }
}

const program = Effect.gen(function*() {
  const settings = yield* Settings
  if (Option.isNone(settings.databaseUrl)) {
    return yield* new InvalidSetting({
      setting: "DATABASE_URL",
      expected: "a postgres:// URL (the API process does not start a database; use npm start for that)",
      got: ""
    })
  }
  const address = `${settings.host.includes(":") ? `[${settings.host}]` : settings.host}:${settings.port}`
  yield* Layer.build(ServerLayer(serverOptions(settings, settings.databaseUrl.value))).pipe(
    Effect.catchTag("ServeError", (error) => {
      const message = `cannot listen on ${address}: ${listenProblem(error)}`
      return Effect.andThen(Effect.logError(message), Effect.fail(new AlreadyLogged({ message })))
    })
  )
  yield* Effect.logInfo(`public API listening on http://${address}/api/public/v1`)
  return yield* Effect.never
}).pipe(Effect.scoped, Effect.provide(Settings.layerWithLogging))

runMain(program)
