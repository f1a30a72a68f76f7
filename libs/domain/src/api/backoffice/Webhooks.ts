/**
 * The back office's webhook subscriptions (docs/back-office.md "Webhooks",
 * "Webhook limits"): create, list, read, change, disable/enable, delete, test, the
 * journal, one delivery, resend, recover, and the answers of their limits
 * (docs/back-office.md "Webhook limits": 409 CONFLICT past the school's
 * subscriptions, 429 TOO_MANY_ATTEMPTS with Retry-After past a
 * subscription's actions per minute). The contract: paths, errors and the
 * roles each call needs (`RequiredAccess`,
 * checked by `RoleCheck` before the request is decoded, so a refused role
 * gets 403 FORBIDDEN whatever it sent); the bodies and what they answer
 * are libs/domain/src/WebhookSubscriptions.ts's models. Endpoints are added
 * before `.middleware(...)`.
 */
import * as Schema from "effect/Schema"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Errors from "../../BackOfficeErrors.ts"
import { DecimalIntFromString } from "../../Ids.ts"
import { FULL_ACCESS, OWNER_OR_ADMINISTRATOR } from "../../Sessions.ts"
import {
  CreatedSubscription,
  CreateWebhookRequest,
  DeliveryDetail,
  DeliveryId,
  EventId,
  JournalEntry,
  RecoverRequest,
  Subscription,
  UpdateWebhookRequest,
  WebhookId
} from "../../WebhookSubscriptions.ts"
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

/** `{id}` of `/webhooks/{id}/...`. */
export const WebhookIdFromPath = DecimalIntFromString(WebhookId)
/** `{delivery_id}` of `/webhooks/{id}/deliveries/{delivery_id}/...`. */
export const DeliveryIdFromPath = DecimalIntFromString(DeliveryId)

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
      success: ok(Schema.Struct({ id: WebhookId }).annotate({ examples: [{ id: WebhookId.make(4) }] })),
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Delete the subscription with its secret, its pending deliveries and its journal"),
    HttpApiEndpoint.post("test", "/webhooks/:id/test", {
      params: idParams,
      success: okQueued(Schema.Struct({ event_id: EventId }).annotate({ examples: [{ event_id: 1042 }] })),
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
      success: okQueued(Schema.Struct({ delivery_id: DeliveryId }).annotate({ examples: [{ delivery_id: DeliveryId.make(22) }] })),
      error: [Errors.NotFound.envelope, Errors.Conflict.envelope, throttled]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Queue the same event again as a new delivery (same body) to the current URL"),
    HttpApiEndpoint.post("recover", "/webhooks/:id/recover", {
      params: idParams,
      payload: RecoverRequest,
      success: okQueued(Schema.Struct({ queued: Schema.Int }).annotate({ examples: [{ queued: 3 }] })),
      error: [Errors.NotFound.envelope, Errors.Conflict.envelope, throttled, ...bodyRefusals]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Queue again every delivery that ended failed (or was skipped) at or after since")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
