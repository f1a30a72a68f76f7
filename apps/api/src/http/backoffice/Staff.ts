/**
 * Handlers of the back office's Staff area (libs/domain/src/api/backoffice/Staff.ts).
 * `StaffRepositories` names the persistence services they need; Server.ts
 * provides them with the rest.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"

export const StaffRepositories = Layer.empty

export const StaffHandlersNoDeps = Layer.mergeAll(
  HttpApiBuilder.group(BackOfficeApi, "employees", (handlers) => Effect.succeed(handlers)),
  HttpApiBuilder.group(BackOfficeApi, "apiKeys", (handlers) => Effect.succeed(handlers))
)
