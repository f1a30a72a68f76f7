/**
 * The back office's webhook subscriptions (docs/back-office.md; spec 5.3,
 * 6.1): create, list, read, change, disable/enable, delete, test, the
 * journal, one delivery, resend, recover, and the answers of their limits
 * (docs/back-office.md "Webhook limits": 409 CONFLICT past the school's
 * subscriptions, 429 TOO_MANY_ATTEMPTS with Retry-After past a
 * subscription's actions per minute). The contract: paths, bodies, success
 * shapes and errors, and the roles each call needs (`RequiredAccess`,
 * checked by `RoleCheck` before the request is decoded, so a refused role
 * gets 403 FORBIDDEN whatever it sent). Endpoints are added before
 * `.middleware(...)`.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Errors from "../../BackOfficeErrors.ts"
import { DecimalIntFromString, PositiveInt32 } from "../../Ids.ts"
import { MAX_URL_LENGTH } from "../../ReceiverAddress.ts"
import { FULL_ACCESS, OWNER_OR_ADMINISTRATOR } from "../../Sessions.ts"
import { Text } from "../../Text.ts"
import { IsoInstant, Timestamp } from "../../Timestamps.ts"
import { DeliveryPublicId } from "../../WebhookSignature.ts"
import {
  BackOfficeValidation,
  bodyRefusals,
  ok,
  okList,
  okQueued,
  pageQuery,
  RequiredAccess,
  RoleCheck,
  SessionAuthentication
} from "../BackOfficeMiddleware.ts"

// ---------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------

/** A subscription id (an `integer` column). */
export const WebhookId = PositiveInt32.pipe(Schema.brand("WebhookId"))
export type WebhookId = typeof WebhookId.Type
export const WebhookIdFromPath = DecimalIntFromString(WebhookId)

/**
 * A delivery id: a `bigint` column, on the wire a JSON integer within the
 * safe range (2^53 − 1), which an identity column will not reach.
 */
export const DeliveryId = Schema.Number.annotate({ message: "Expected an integer" }).check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }, { message: "Expected a positive integer id" })
).pipe(Schema.brand("DeliveryId"))
export type DeliveryId = typeof DeliveryId.Type
export const DeliveryIdFromPath = DecimalIntFromString(DeliveryId)

/** An outbox event id (`bigint`), as a JSON integer. */
export const EventId = Schema.Int

// ---------------------------------------------------------------------------
// Events and URLs
// ---------------------------------------------------------------------------

/** spec 6.3: the events a subscription may tick, in the catalog's order; `webhook.test` is sent on request only. */
export const SUBSCRIBABLE_EVENTS = [
  "student.created",
  "lead.created",
  "group.enrolled",
  "lesson.completed",
  "payment.received"
] as const
export const SubscribableEventName = Schema.Literals(SUBSCRIBABLE_EVENTS)
export type SubscribableEventName = typeof SubscribableEventName.Type

const isSubscribable = (name: string): name is SubscribableEventName =>
  (SUBSCRIBABLE_EVENTS as ReadonlyArray<string>).includes(name)

/** One event name in a request: a catalog event, with a message of its own for `webhook.test`. */
export const SubscribableEvent = Schema.String.annotate({ message: "Expected an event name" }).pipe(
  Schema.decodeTo(
    SubscribableEventName,
    SchemaTransformation.transformEffect({
      decode: (name: string) =>
        isSubscribable(name)
          ? Effect.succeed(name)
          : Effect.fail(
            new SchemaIssue.InvalidValue(
              {
                message: name === "webhook.test"
                  ? "webhook.test cannot be subscribed to: send it with POST /webhooks/{id}/test"
                  : `Expected one of ${SUBSCRIBABLE_EVENTS.join(", ")}`
              },
              name
            )
          ),
      encode: (name: SubscribableEventName) => Effect.succeed(name)
    })
  )
)

/** At most this many names in `events` (duplicates are dropped, so more could only be repeats). */
export const MAX_EVENT_NAMES = 50

/**
 * `events`: at least one catalog event; duplicates are dropped and the
 * stored list is in the catalog's order (`normalizeEvents`).
 */
export const EventList = Schema.Array(SubscribableEvent).check(
  Schema.isMinLength(1, { message: "Expected at least one event" }),
  Schema.isMaxLength(MAX_EVENT_NAMES, { message: `Expected at most ${MAX_EVENT_NAMES} event names` })
)

/** The events as stored: each once, in the catalog's order. */
export const normalizeEvents = (events: ReadonlyArray<SubscribableEventName>): ReadonlyArray<SubscribableEventName> =>
  SUBSCRIBABLE_EVENTS.filter((name) => events.includes(name))

/**
 * `url` as sent: a trimmed, storable string of at most MAX_URL_LENGTH
 * characters. The receiver rule itself (scheme, credentials, public
 * address) depends on a setting and on DNS, so the handler applies it
 * (libs/domain/src/ReceiverAddress.ts) and answers 422 with `fields.url`.
 */
export const ReceiverUrlText = Text(MAX_URL_LENGTH).check(Schema.isMinLength(1, { message: "Expected a URL" }))

// ---------------------------------------------------------------------------
// Bodies
// ---------------------------------------------------------------------------

export const CreateWebhookRequest = Schema.Struct({
  url: ReceiverUrlText,
  events: EventList
})
export type CreateWebhookRequest = typeof CreateWebhookRequest.Type

const PATCH_MESSAGE = "Give url, events or both"

/** `PATCH /webhooks/{id}`: at least one of `url` and `events`. */
export const UpdateWebhookRequest = Schema.Struct({
  url: Schema.optionalKey(ReceiverUrlText),
  events: Schema.optionalKey(EventList)
}).check(
  Schema.makeFilter((body) =>
    body.url === undefined && body.events === undefined
      ? [{ path: ["url"], issue: PATCH_MESSAGE }, { path: ["events"], issue: PATCH_MESSAGE }]
      : undefined
  )
)
export type UpdateWebhookRequest = typeof UpdateWebhookRequest.Type

/** What `recover` queues again: deliveries that ended `failed` (the default), or that were `skipped` while disabled. */
export const RecoverWhich = Schema.Literals(["failed", "skipped"]).annotate({
  message: "Expected failed or skipped",
  description: "failed (the default): deliveries that failed; skipped: events journaled while the subscription was disabled"
})
export type RecoverWhich = typeof RecoverWhich.Type

/**
 * `POST /webhooks/{id}/recover`: deliveries that ended `failed` (or were
 * journaled `skipped`, with `which: "skipped"`) at or after `since` (ISO
 * 8601 with offset).
 */
export const RecoverRequest = Schema.Struct({
  since: IsoInstant,
  which: Schema.optionalKey(RecoverWhich)
})
export type RecoverRequest = typeof RecoverRequest.Type

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

export const WebhookStatus = Schema.Literals(["active", "problematic", "disabled"])
export type WebhookStatus = typeof WebhookStatus.Type

/** A subscription as every call but creation shows it: never its secret. */
export const Subscription = Schema.Struct({
  id: WebhookId,
  url: Schema.String,
  events: Schema.Array(SubscribableEventName),
  status: WebhookStatus,
  created_at: Timestamp,
  updated_at: Timestamp,
  skipped_events: Schema.Int.annotate({
    description: "Deliveries journaled skipped while the subscription was disabled and not recovered yet " +
      "(POST /webhooks/{id}/recover with which: skipped)"
  })
})
export type Subscription = typeof Subscription.Type

/** The created subscription, with its secret: the only time the secret is shown. */
export const CreatedSubscription = Schema.Struct({
  id: WebhookId,
  url: Schema.String,
  events: Schema.Array(SubscribableEventName),
  status: Schema.Literal("active"),
  secret: Schema.String.annotate({ description: "whsec_ + base64 of 32 random bytes; shown only here" }),
  created_at: Timestamp
})
export type CreatedSubscription = typeof CreatedSubscription.Type

/** `skipped`: an event the subscription would have received while it was disabled; no attempt was made. */
export const DeliveryStatus = Schema.Literals(["pending", "delivered", "failed", "skipped"])

/** A delivery in the journal. */
export const JournalEntry = Schema.Struct({
  id: DeliveryId,
  event: Schema.String,
  status: DeliveryStatus,
  response_code: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  created_at: Timestamp,
  last_attempt_at: Schema.NullOr(Timestamp),
  next_attempt_at: Schema.NullOr(Timestamp).annotate({ description: "When the next attempt is due while pending; null otherwise" }),
  webhook_id: DeliveryPublicId.annotate({
    description: "The delivery's id as the receiver sees it (webhook-id and X-Service-Delivery headers)",
    examples: ["msg_4b1e3f0c9a8d4e2f8c6b5a4d3e2f1a0b"]
  })
})
export type JournalEntry = typeof JournalEntry.Type

export const Attempt = Schema.Struct({
  attempt: Schema.Int,
  at: Timestamp,
  response_code: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  duration_ms: Schema.Int
})

/** One delivery: the journal's fields, the body as sent (null until the first attempt) and every attempt. */
export const DeliveryDetail = Schema.Struct({
  ...JournalEntry.fields,
  body: Schema.NullOr(Schema.String),
  attempts_detail: Schema.Array(Attempt)
})
export type DeliveryDetail = typeof DeliveryDetail.Type

/** The journal's length (docs/back-office.md). */
export const JOURNAL_LENGTH = 50

// ---------------------------------------------------------------------------
// Endpoints
// ---------------------------------------------------------------------------

const idParams = { id: WebhookIdFromPath }
const deliveryParams = { id: WebhookIdFromPath, delivery_id: DeliveryIdFromPath }
const single = ok(Subscription)
/** The calls a subscription's action limit counts: each can be refused with 429 and Retry-After. */
const throttled = Errors.TooManyAttempts.envelope
export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/webhooks", {
      payload: CreateWebhookRequest,
      success: ok(CreatedSubscription).pipe(HttpApiSchema.status(201)),
      error: [Errors.ValidationFailed.envelope, Errors.Conflict.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(
        OpenApi.Summary,
        "Subscribe a receiver URL to events; the secret is shown only here (409 past WEBHOOK_MAX_SUBSCRIPTIONS)"
      ),
    HttpApiEndpoint.get("list", "/webhooks", {
      query: pageQuery,
      success: okList(Subscription)
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "List the school's subscriptions (never their secrets)"),
    HttpApiEndpoint.get("get", "/webhooks/:id", {
      params: idParams,
      success: single,
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "One subscription (never its secret)"),
    HttpApiEndpoint.patch("update", "/webhooks/:id", {
      params: idParams,
      payload: UpdateWebhookRequest,
      success: single,
      error: [Errors.NotFound.envelope, Errors.ValidationFailed.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Change the URL, the events or both"),
    HttpApiEndpoint.post("disable", "/webhooks/:id/disable", {
      params: idParams,
      success: single,
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Stop deliveries to the subscription; its journal is kept"),
    HttpApiEndpoint.post("enable", "/webhooks/:id/enable", {
      params: idParams,
      success: single,
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Resume deliveries to a disabled subscription"),
    HttpApiEndpoint.delete("delete", "/webhooks/:id", {
      params: idParams,
      success: ok(Schema.Struct({ id: WebhookId })),
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Delete the subscription with its secret, its pending deliveries and its journal"),
    HttpApiEndpoint.post("test", "/webhooks/:id/test", {
      params: idParams,
      success: okQueued(Schema.Struct({ event_id: EventId })),
      error: [Errors.NotFound.envelope, Errors.Conflict.envelope, throttled]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Queue a webhook.test event to this subscription's current URL"),
    HttpApiEndpoint.get("deliveries", "/webhooks/:id/deliveries", {
      params: idParams,
      success: ok(Schema.Array(JournalEntry)),
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "The journal: the last 50 deliveries, newest first"),
    HttpApiEndpoint.get("delivery", "/webhooks/:id/deliveries/:delivery_id", {
      params: deliveryParams,
      success: ok(DeliveryDetail),
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "One delivery with its body and every attempt"),
    HttpApiEndpoint.post("resend", "/webhooks/:id/deliveries/:delivery_id/resend", {
      params: deliveryParams,
      success: okQueued(Schema.Struct({ delivery_id: DeliveryId })),
      error: [Errors.NotFound.envelope, Errors.Conflict.envelope, throttled]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Queue the same event again as a new delivery (same body) to the current URL"),
    HttpApiEndpoint.post("recover", "/webhooks/:id/recover", {
      params: idParams,
      payload: RecoverRequest,
      success: okQueued(Schema.Struct({ queued: Schema.Int })),
      error: [Errors.NotFound.envelope, Errors.Conflict.envelope, throttled, ...bodyRefusals]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Queue again every delivery that ended failed (or was skipped) at or after since")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
