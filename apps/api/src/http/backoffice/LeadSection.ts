/**
 * Handlers of the back office's LeadSection area (libs/domain/src/api/backoffice/LeadSection.ts).
 * `LeadSectionRepositories` names the persistence services they need; Server.ts
 * provides them with the rest.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"

export const LeadSectionRepositories = Layer.empty

export const LeadSectionHandlersNoDeps = Layer.mergeAll(
  HttpApiBuilder.group(BackOfficeApi, "leads", (handlers) => Effect.succeed(handlers)),
  HttpApiBuilder.group(BackOfficeApi, "inbox", (handlers) => Effect.succeed(handlers))
)
