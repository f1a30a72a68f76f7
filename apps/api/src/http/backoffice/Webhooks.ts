/**
 * Handlers of the back office's webhook subscriptions
 * (libs/domain/src/api/backoffice/Webhooks.ts; spec 5.3, 6.1;
 * docs/decisions.md "Webhooks"): the role, checked before decoding
 * (`RoleCheck`, apps/api/src/BackOfficeAuth.ts), the receiver-URL rule with its DNS lookup (the
 * rule is libs/domain/src/ReceiverAddress.ts; the lookup, which is I/O,
 * happens here), the secret issued once and stored encrypted
 * (libs/domain/src/WebhookSecret.ts), and one repository call per request.
 * `WebhooksRepositories` names the persistence services they need;
 * Server.ts provides them with the rest, and `webhookConfigLayer` gives the
 * settings (WEBHOOK_ALLOW_INSECURE_URLS, WEBHOOK_SECRET_KEY).
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { lookup } from "node:dns/promises"
import * as Errors from "@school/domain/BackOfficeErrors"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { CurrentEmployee } from "@school/domain/api/BackOfficeMiddleware"
import { normalizeEvents } from "@school/domain/api/backoffice/Webhooks"
import * as Pagination from "@school/domain/Pagination"
import { parseReceiverUrl, type Policy, resolvedRefusal } from "@school/domain/ReceiverAddress"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { type Queued, Webhooks } from "@school/persistence/Webhooks"

/** The webhook settings the handlers use (docs/operations.md "Settings"). */
export interface WebhookSettings {
  /** WEBHOOK_ALLOW_INSECURE_URLS: http and internal receivers accepted (development and tests only). */
  readonly allowInsecureUrls: boolean
  /** The key new secrets are encrypted with (WEBHOOK_SECRET_KEY, else the development key). */
  readonly secretKey: WebhookSecret.SecretKey
}

/** The settings; defaults: https and public receivers only, the development key. */
export const WebhookConfig = Context.Reference<WebhookSettings>("school/api/WebhookConfig", {
  defaultValue: () => ({ allowInsecureUrls: false, secretKey: WebhookSecret.DEVELOPMENT_KEY })
})

export const DEVELOPMENT_KEY_WARNING =
  "WEBHOOK_SECRET_KEY is not set: webhook secrets are encrypted with the built-in development key; " +
  "set it (openssl rand -base64 32) before real receivers are subscribed"

/**
 * The settings as the process reads them. Without WEBHOOK_SECRET_KEY the
 * API logs one warning when it starts: secrets are encrypted with the
 * development key.
 */
export const webhookConfigLayer = (options: {
  readonly allowInsecureUrls: boolean
  readonly secretKey: Option.Option<Uint8Array>
}) =>
  Layer.effect(
    WebhookConfig,
    Effect.as(
      Option.isNone(options.secretKey) ? Effect.logWarning(DEVELOPMENT_KEY_WARNING) : Effect.void,
      { allowInsecureUrls: options.allowInsecureUrls, secretKey: WebhookSecret.currentKey(options.secretKey) }
    )
  )

/** How long a receiver host's DNS lookup may take before the URL is refused. */
export const RESOLVE_TIMEOUT = Duration.seconds(5)

/** Resolves a host name to every address it has; fails with why it could not. */
export type Resolve = (host: string) => Effect.Effect<ReadonlyArray<string>, string>

/** The system resolver (`getaddrinfo`, as the dispatcher's connection will use), every address. */
export const systemResolve: Resolve = (host) =>
  Effect.tryPromise({
    try: () => lookup(host, { all: true, verbatim: true }),
    catch: (error) => {
      const code = error instanceof Error && "code" in error ? String(error.code) : "error"
      return code === "ENOTFOUND" || code === "ENODATA"
        ? `${host} does not resolve`
        : `${host} could not be resolved (${code}); try again`
    }
  }).pipe(
    Effect.map((addresses) => addresses.map((entry) => entry.address)),
    Effect.timeoutOrElse({
      duration: RESOLVE_TIMEOUT,
      orElse: () => Effect.fail(`${host} could not be resolved in time; try again`)
    })
  )

/** The resolver receiver hosts are checked with (tests give their own). */
export const HostResolver = Context.Reference<Resolve>("school/api/HostResolver", { defaultValue: () => systemResolve })

export const WebhooksRepositories = Webhooks.layer

const urlRefused = (message: string) =>
  new Errors.ValidationFailed({ message: `Invalid request body: url`, fields: { url: [message] } })

const subscriptionNotFound = (id: number) => new Errors.NotFound({ message: `Webhook subscription ${id} does not exist.` })

/** The answer of a call that queued work: the value, or its 404 / 409. */
const queued = <A>(id: number, outcome: Queued<A>): Effect.Effect<A, Errors.NotFound | Errors.Conflict> => {
  switch (outcome._tag) {
    case "Queued":
      return Effect.succeed(outcome.value)
    case "NotFound":
      return Effect.fail(
        outcome.what === "subscription"
          ? subscriptionNotFound(id)
          : new Errors.NotFound({ message: `Subscription ${id} has no such delivery.` })
      )
    case "Disabled":
      return Effect.fail(
        new Errors.Conflict({
          message: `Webhook subscription ${id} is disabled: enable it first (POST /webhooks/${id}/enable).`
        })
      )
  }
}

const WebhooksGroupLive = HttpApiBuilder.group(
  BackOfficeApi,
  "webhooks",
  Effect.fnUntraced(function*(handlers) {
    const webhooks = yield* Webhooks
    const config = yield* WebhookConfig
    const resolve = yield* HostResolver
    const policy: Policy = { allowInsecure: config.allowInsecureUrls }

    /**
     * docs/decisions.md "Webhooks": the receiver URL as stored (normalised),
     * or 422 with `fields.url`. A host name is resolved and every address
     * checked; with insecure URLs allowed there is nothing to refuse, so no
     * lookup is made (the dispatcher checks again at delivery).
     */
    const checkUrl = Effect.fnUntraced(function*(text: string) {
      const parsed = parseReceiverUrl(text, policy)
      if (parsed._tag === "Invalid") return yield* urlRefused(parsed.message)
      if (parsed.host._tag === "Name" && !policy.allowInsecure) {
        const host = parsed.host.name
        const addresses = yield* Effect.mapError(resolve(host), urlRefused)
        const refusal = resolvedRefusal(host, addresses, policy)
        if (refusal !== undefined) return yield* urlRefused(refusal)
      }
      return parsed.href
    })

    return handlers
      .handle("create", Effect.fnUntraced(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const url = yield* checkUrl(payload.url)
        const secret = WebhookSecret.generateSecret()
        const created = yield* webhooks.create(schoolId, {
          url,
          events: normalizeEvents(payload.events),
          secretCiphertext: WebhookSecret.encrypt(config.secretKey, secret)
        })
        return { success: true as const, data: { ...created, secret } }
      }))
      .handle("list", Effect.fnUntraced(function*({ query }) {
        const { schoolId } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const { items, total } = yield* webhooks.list(schoolId, page)
        return { success: true as const, data: items, meta: Pagination.meta(page, total) }
      }))
      .handle("get", Effect.fnUntraced(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        const found = yield* webhooks.find(schoolId, params.id)
        if (Option.isNone(found)) return yield* subscriptionNotFound(params.id)
        return { success: true as const, data: found.value }
      }))
      .handle("update", Effect.fnUntraced(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        // A missing subscription is 404 before its URL is looked at (no DNS lookup for nothing).
        if (Option.isNone(yield* webhooks.find(schoolId, params.id))) return yield* subscriptionNotFound(params.id)
        const url = payload.url === undefined ? undefined : yield* checkUrl(payload.url)
        const updated = yield* webhooks.update(schoolId, params.id, {
          url,
          events: payload.events === undefined ? undefined : normalizeEvents(payload.events)
        })
        if (Option.isNone(updated)) return yield* subscriptionNotFound(params.id)
        return { success: true as const, data: updated.value }
      }))
      .handle("disable", Effect.fnUntraced(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        const updated = yield* webhooks.setEnabled(schoolId, params.id, false)
        if (Option.isNone(updated)) return yield* subscriptionNotFound(params.id)
        return { success: true as const, data: updated.value }
      }))
      .handle("enable", Effect.fnUntraced(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        const updated = yield* webhooks.setEnabled(schoolId, params.id, true)
        if (Option.isNone(updated)) return yield* subscriptionNotFound(params.id)
        return { success: true as const, data: updated.value }
      }))
      .handle("test", Effect.fnUntraced(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        const eventId = yield* queued(params.id, yield* webhooks.queueTest(schoolId, params.id))
        return { success: true as const, data: { event_id: eventId } }
      }))
      .handle("deliveries", Effect.fnUntraced(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        const journal = yield* webhooks.journal(schoolId, params.id)
        if (Option.isNone(journal)) return yield* subscriptionNotFound(params.id)
        return { success: true as const, data: journal.value }
      }))
      .handle("delivery", Effect.fnUntraced(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        const found = yield* webhooks.delivery(schoolId, params.id, params.delivery_id)
        if (Option.isNone(found)) {
          // Which one is missing: the subscription, or its delivery.
          if (Option.isNone(yield* webhooks.find(schoolId, params.id))) return yield* subscriptionNotFound(params.id)
          return yield* new Errors.NotFound({ message: `Subscription ${params.id} has no delivery ${params.delivery_id}.` })
        }
        return { success: true as const, data: found.value }
      }))
      .handle("resend", Effect.fnUntraced(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        const deliveryId = yield* queued(params.id, yield* webhooks.resend(schoolId, params.id, params.delivery_id))
        return { success: true as const, data: { delivery_id: deliveryId } }
      }))
      .handle("recover", Effect.fnUntraced(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        const count = yield* queued(params.id, yield* webhooks.recover(schoolId, params.id, payload.since))
        return { success: true as const, data: { queued: count } }
      }))
  })
)

export const WebhooksHandlersNoDeps = WebhooksGroupLive
