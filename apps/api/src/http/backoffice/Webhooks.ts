/**
 * Handlers of the back office's webhook subscriptions
 * (libs/domain/src/api/backoffice/Webhooks.ts; docs/back-office.md
 * "Webhooks"; docs/decisions.md "Webhooks"): the role, checked before decoding
 * (`RoleCheck`, apps/api/src/BackOfficeAuth.ts), the receiver-URL rule with its DNS lookup (the
 * rule is libs/domain/src/ReceiverAddress.ts; the lookup and the check of
 * every address are libs/runtime/src/ReceiverHosts.ts, the same service the
 * dispatcher resolves with), the secret issued once and stored encrypted
 * (libs/domain/src/WebhookSecret.ts), and one repository call per request.
 * The limits of docs/back-office.md "Webhook limits" are decided by the
 * repository (its `Creation` and `Queued` outcomes); their answers, 409
 * CONFLICT and 429 TOO_MANY_ATTEMPTS with Retry-After, are made here.
 * `WebhooksRepositories` names the persistence services they need;
 * Server.ts provides them with the rest. The handlers read their settings
 * when the API starts (`webhookSettings`: WEBHOOK_ALLOW_INSECURE_URLS,
 * WEBHOOK_SECRET_KEY, WEBHOOK_MAX_SUBSCRIPTIONS, WEBHOOK_ACTIONS_PER_MINUTE).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as Errors from "@school/domain/BackOfficeErrors"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { CurrentEmployee } from "@school/domain/api/BackOfficeMiddleware"
import { normalizeEvents, type WebhookId } from "@school/domain/WebhookSubscriptions"
import type * as Ids from "@school/domain/Ids"
import * as Pagination from "@school/domain/Pagination"
import { DEFAULT_ACTIONS_PER_MINUTE, DEFAULT_MAX_SUBSCRIPTIONS } from "@school/domain/WebhookLimits"
import { localDevelopmentHint, parseReceiverUrl, type Policy, refusedAsInsecure } from "@school/domain/ReceiverAddress"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { type Created, type Creation, type Queued, Webhooks } from "@school/persistence/Webhooks"
import * as ReceiverHosts from "@school/runtime/ReceiverHosts"
import * as SettingKinds from "@school/runtime/SettingKinds"
import type { InvalidSetting } from "@school/runtime/SettingKinds"
import { WEBHOOK_ALLOW_INSECURE_URLS, WEBHOOK_SECRET_KEY } from "@school/runtime/Settings"

/**
 * `WEBHOOK_MAX_SUBSCRIPTIONS` (docs/operations.md "Settings"; docs/back-office.md
 * "Webhook limits"): subscriptions one school may have.
 */
export const WEBHOOK_MAX_SUBSCRIPTIONS = SettingKinds.make(
  "WEBHOOK_MAX_SUBSCRIPTIONS",
  SettingKinds.integer(1, 10_000),
  DEFAULT_MAX_SUBSCRIPTIONS
)

/**
 * `WEBHOOK_ACTIONS_PER_MINUTE` (docs/operations.md "Settings"; docs/back-office.md
 * "Webhook limits"): accepted `test`, `resend` and `recover` calls per
 * subscription per minute.
 */
export const WEBHOOK_ACTIONS_PER_MINUTE = SettingKinds.make(
  "WEBHOOK_ACTIONS_PER_MINUTE",
  SettingKinds.integer(1, 10_000),
  DEFAULT_ACTIONS_PER_MINUTE
)

/** The webhook settings the handlers use (docs/operations.md "Settings"). */
export interface WebhookSettings {
  /** WEBHOOK_ALLOW_INSECURE_URLS: http and internal receivers accepted (development and tests only). */
  readonly allowInsecureUrls: boolean
  /** The key new secrets are encrypted with (WEBHOOK_SECRET_KEY, else the development key). */
  readonly secretKey: WebhookSecret.SecretKey
  /** WEBHOOK_MAX_SUBSCRIPTIONS. */
  readonly maxSubscriptions: number
  /** WEBHOOK_ACTIONS_PER_MINUTE. */
  readonly actionsPerMinute: number
}

export const DEVELOPMENT_KEY_WARNING =
  "WEBHOOK_SECRET_KEY is not set: webhook secrets are encrypted with the built-in development key; " +
  "set it (openssl rand -base64 32) before real receivers are subscribed"

/** The settings as the handlers read them, when the API starts. */
export const webhookSettings: Effect.Effect<WebhookSettings, InvalidSetting> = Effect.gen(function*() {
  return {
    allowInsecureUrls: yield* WEBHOOK_ALLOW_INSECURE_URLS,
    secretKey: WebhookSecret.currentKey(yield* WEBHOOK_SECRET_KEY),
    maxSubscriptions: yield* WEBHOOK_MAX_SUBSCRIPTIONS,
    actionsPerMinute: yield* WEBHOOK_ACTIONS_PER_MINUTE
  }
})

/**
 * The API process's warning at start (apps/api/src/Server.ts
 * `ServerLayerNoDeps`): without WEBHOOK_SECRET_KEY, one line saying that
 * secrets are encrypted with the development key.
 */
export const DevelopmentKeyWarning = Layer.effectDiscard(Effect.gen(function*() {
  if (Option.isNone(yield* WEBHOOK_SECRET_KEY)) yield* Effect.logWarning(DEVELOPMENT_KEY_WARNING)
}))

/** How long a receiver host's DNS lookup may take before the URL is refused (libs/runtime/src/ReceiverHosts.ts). */
export const RESOLVE_TIMEOUT = ReceiverHosts.RESOLVE_TIMEOUT

/** Resolves a host name to every address it has; fails with why it could not. */
export type Resolve = (host: string) => Effect.Effect<ReadonlyArray<string>, string>

/** The system resolver, as the dispatcher's receiver client uses it (`ReceiverHosts.systemLookup`), every address. */
export const systemResolve: Resolve = (host) =>
  ReceiverHosts.within(ReceiverHosts.systemLookup, RESOLVE_TIMEOUT)(host).pipe(
    Effect.map((addresses) => addresses.map((entry) => entry.address)),
    Effect.mapError((refusal) => refusal.message)
  )

/** The resolver receiver hosts are checked with (tests give their own). */
export const HostResolver = Context.Reference<Resolve>("school/api/HostResolver", { defaultValue: () => systemResolve })

export const WebhooksRepositories = Webhooks.layer

const urlRefused = (message: string) =>
  new Errors.ValidationFailed({ message: `Invalid request body: url`, fields: { url: [message] } })

const subscriptionNotFound = (id: number) => new Errors.NotFound({ message: `Webhook subscription ${id} does not exist.` })

/** The answer of a creation: the subscription, or 409 past the school's limit (docs/back-office.md "Webhook limits"). */
const creation = (outcome: Creation): Effect.Effect<Created, Errors.Conflict> =>
  outcome._tag === "Created"
    ? Effect.succeed(outcome.value)
    : Effect.fail(
      new Errors.Conflict({
        message: `This school already has ${outcome.limit} webhook subscriptions, the most it may have: ` +
          `delete one before adding another.`
      })
    )

/** The answer of a call that queued work: the value, or its 404 / 409 / 429 (docs/back-office.md "Webhook limits"). */
const queued = <A>(
  id: number,
  outcome: Queued<A>
): Effect.Effect<A, Errors.NotFound | Errors.Conflict | Errors.TooManyAttempts> => {
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
    case "TooMany": {
      const seconds = `${outcome.retryAfterSeconds} second${outcome.retryAfterSeconds === 1 ? "" : "s"}`
      return Effect.fail(
        new Errors.TooManyAttempts({
          message: `Webhook subscription ${id} accepts at most ${outcome.limit} test, resend and recover calls ` +
            `per minute. Retry after ${seconds}.`,
          headers: { "retry-after": outcome.retryAfterSeconds }
        })
      )
    }
  }
}

const WebhooksGroupLive = HttpApiBuilder.group(
  BackOfficeApi,
  "webhooks",
  Effect.fnUntraced(function*(handlers) {
    const webhooks = yield* Webhooks
    const config = yield* webhookSettings
    const resolve = yield* HostResolver
    const policy: Policy = { allowInsecure: config.allowInsecureUrls }

    /**
     * 404 unless `id` is one of the school's subscriptions: a developer's local listener (libs/persistence/src/
     * Listeners.ts) is not one, so no call on one id reaches it (docs/decisions.md "Local webhook loop").
     */
    const ownSubscription = (schoolId: Ids.SchoolId, id: WebhookId) =>
      webhooks.find(schoolId, id).pipe(
        Effect.flatMap((found) => Option.isNone(found) ? Effect.fail(subscriptionNotFound(id)) : Effect.void)
      )

    /**
     * docs/decisions.md "Webhooks": the receiver URL as stored (normalised),
     * or 422 with `fields.url`. A host name is resolved and every address
     * checked; with insecure URLs allowed there is nothing to refuse, so no
     * lookup is made (the dispatcher checks again at delivery). A receiver
     * refused only because it is http or internal (loopback, private) gets
     * the way to develop locally (docs/integrators.md "Receiving webhooks on
     * your machine").
     */
    const checkUrl = Effect.fnUntraced(function*(text: string) {
      const { schoolId } = yield* CurrentEmployee
      const local = (message: string) => `${message}. ${localDevelopmentHint(schoolId)}`
      const parsed = parseReceiverUrl(text, policy)
      if (parsed._tag === "Invalid") {
        return yield* urlRefused(refusedAsInsecure(text, policy) ? local(parsed.message) : parsed.message)
      }
      if (parsed.host._tag === "Name" && !policy.allowInsecure) {
        // The dispatcher's own check (libs/runtime/src/ReceiverHosts.ts), with this API's resolver.
        const hosts = ReceiverHosts.make({
          allowInsecureUrls: policy.allowInsecure,
          timeout: RESOLVE_TIMEOUT,
          lookup: ReceiverHosts.lookupOfAddresses(resolve)
        })
        yield* Effect.mapError(
          hosts.resolve(parsed.host.name),
          (refusal) => urlRefused(refusal.reason === "blocked_address" ? local(refusal.message) : refusal.message)
        )
      }
      return parsed.href
    })

    return handlers
      .handle("create", Effect.fn("BackOfficeApi.webhooks.create")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const url = yield* checkUrl(payload.url)
        const secret = WebhookSecret.generateSecret()
        const subscription = yield* creation(
          yield* webhooks.create(schoolId, {
            url,
            events: normalizeEvents(payload.events),
            secretCiphertext: WebhookSecret.encrypt(config.secretKey, secret)
          }, config.maxSubscriptions)
        )
        return { ...subscription, secret }
      }))
      .handle("list", Effect.fn("BackOfficeApi.webhooks.list")(function*({ query }) {
        const { schoolId } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const { items, total } = yield* webhooks.list(schoolId, page)
        return { data: items, meta: Pagination.meta(page, total) }
      }))
      .handle("get", Effect.fn("BackOfficeApi.webhooks.get")(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        const found = yield* webhooks.find(schoolId, params.id)
        if (Option.isNone(found)) return yield* subscriptionNotFound(params.id)
        return found.value
      }))
      .handle("update", Effect.fn("BackOfficeApi.webhooks.update")(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        // A missing subscription is 404 before its URL is looked at (no DNS lookup for nothing).
        if (Option.isNone(yield* webhooks.find(schoolId, params.id))) return yield* subscriptionNotFound(params.id)
        const url = payload.url === undefined ? undefined : yield* checkUrl(payload.url)
        const updated = yield* webhooks.update(schoolId, params.id, {
          url,
          events: payload.events === undefined ? undefined : normalizeEvents(payload.events)
        })
        if (Option.isNone(updated)) return yield* subscriptionNotFound(params.id)
        return updated.value
      }))
      .handle("disable", Effect.fn("BackOfficeApi.webhooks.disable")(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        yield* ownSubscription(schoolId, params.id)
        const updated = yield* webhooks.setEnabled(schoolId, params.id, false)
        if (Option.isNone(updated)) return yield* subscriptionNotFound(params.id)
        return updated.value
      }))
      .handle("enable", Effect.fn("BackOfficeApi.webhooks.enable")(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        yield* ownSubscription(schoolId, params.id)
        const updated = yield* webhooks.setEnabled(schoolId, params.id, true)
        if (Option.isNone(updated)) return yield* subscriptionNotFound(params.id)
        return updated.value
      }))
      .handle("delete", Effect.fn("BackOfficeApi.webhooks.delete")(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        yield* ownSubscription(schoolId, params.id)
        if (!(yield* webhooks.remove(schoolId, params.id))) return yield* subscriptionNotFound(params.id)
        return { id: params.id }
      }))
      .handle("test", Effect.fn("BackOfficeApi.webhooks.test")(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        yield* ownSubscription(schoolId, params.id)
        const eventId = yield* queued(params.id, yield* webhooks.queueTest(schoolId, params.id, config.actionsPerMinute))
        return { event_id: eventId }
      }))
      .handle("deliveries", Effect.fn("BackOfficeApi.webhooks.deliveries")(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        yield* ownSubscription(schoolId, params.id)
        const journal = yield* webhooks.journal(schoolId, params.id)
        if (Option.isNone(journal)) return yield* subscriptionNotFound(params.id)
        return journal.value
      }))
      .handle("delivery", Effect.fn("BackOfficeApi.webhooks.delivery")(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        yield* ownSubscription(schoolId, params.id)
        const found = yield* webhooks.delivery(schoolId, params.id, params.delivery_id)
        if (Option.isNone(found)) {
          return yield* new Errors.NotFound({ message: `Subscription ${params.id} has no delivery ${params.delivery_id}.` })
        }
        return found.value
      }))
      .handle("resend", Effect.fn("BackOfficeApi.webhooks.resend")(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        yield* ownSubscription(schoolId, params.id)
        const deliveryId = yield* queued(
          params.id,
          yield* webhooks.resend(schoolId, params.id, params.delivery_id, config.actionsPerMinute)
        )
        return { delivery_id: deliveryId }
      }))
      .handle("recover", Effect.fn("BackOfficeApi.webhooks.recover")(function*({ params, payload }) {
        const { schoolId } = yield* CurrentEmployee
        yield* ownSubscription(schoolId, params.id)
        const count = yield* queued(
          params.id,
          yield* webhooks.recover(schoolId, params.id, payload.since, payload.which ?? "failed", config.actionsPerMinute)
        )
        return { queued: count }
      }))
  })
)

export const WebhooksHandlersNoDeps = WebhooksGroupLive
