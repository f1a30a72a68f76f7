/**
 * Handlers of the back office's School area (libs/domain/src/api/backoffice/School.ts).
 * `SchoolRepositories` names the persistence services they need; Server.ts
 * provides them with the rest.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"

export const SchoolRepositories = Layer.empty

export const SchoolHandlersNoDeps = Layer.mergeAll(
  HttpApiBuilder.group(BackOfficeApi, "reference", (handlers) => Effect.succeed(handlers)),
  HttpApiBuilder.group(BackOfficeApi, "students", (handlers) => Effect.succeed(handlers))
)
