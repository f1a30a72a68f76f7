/**
 * Handlers of the back office's Webhooks area (libs/domain/src/api/backoffice/Webhooks.ts).
 * `WebhooksRepositories` names the persistence services they need; Server.ts
 * provides them with the rest.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"

export const WebhooksRepositories = Layer.empty

export const WebhooksHandlersNoDeps = Layer.mergeAll(
  HttpApiBuilder.group(BackOfficeApi, "webhooks", (handlers) => Effect.succeed(handlers))
)
