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
    .annotate(OpenApi.Description, "Webhook subscriptions, their journal, test, resend and recover (docs/back-office.md \"Webhooks\", \"Webhook limits\").")
  .add(
    HttpApiEndpoint.post("create", "/webhooks", {
      payload: CreateWebhookRequest,
      success: ok(CreatedSubscription).pipe(HttpApiSchema.status(201)),
      error: [Errors.ValidationFailed.envelope, Errors.Conflict.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(
        OpenApi.Summary,
        "Subscribe a receiver URL to events; the secret is shown only here (409 past WEBHOOK_MAX_SUBSCRIPTIONS)"
      )
      .annotate(OpenApi.Description, "Owner or administrator only. Subscribes an HTTPS receiver on a public address to events of the catalog (docs/integrators.md \"Event catalog\"); a private or unresolvable address is 422 `VALIDATION_FAILED`. The signing `secret` is in this answer only. Past `WEBHOOK_MAX_SUBSCRIPTIONS` (20 by default, disabled ones included) the answer is 409 `CONFLICT` (docs/back-office.md \"Webhook limits\")."),
    HttpApiEndpoint.get("list", "/webhooks", {
      query: pageQuery,
      success: okList(Subscription)
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "List the school's subscriptions (never their secrets)")
      .annotate(OpenApi.Description, "Owner or administrator only. The school's webhook subscriptions by ascending id, paged; never a secret."),
    HttpApiEndpoint.get("get", "/webhooks/:id", {
      params: idParams,
      success: single,
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "One subscription (never its secret)")
      .annotate(OpenApi.Description, "Owner or administrator only. One subscription with its status and events; a subscription that is not the school's is 404 `NOT_FOUND`."),
    HttpApiEndpoint.patch("update", "/webhooks/:id", {
      params: idParams,
      payload: UpdateWebhookRequest,
      success: single,
      error: [Errors.NotFound.envelope, Errors.ValidationFailed.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Change the URL, the events or both")
      .annotate(OpenApi.Description, "Owner or administrator only. Changes the receiver URL (the same address rules as at creation), the events, or both."),
    HttpApiEndpoint.post("disable", "/webhooks/:id/disable", {
      params: idParams,
      success: single,
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Stop deliveries to the subscription; its journal is kept")
      .annotate(OpenApi.Description, "Owner or administrator only. Disables the subscription: events it would have received are journaled `skipped`; its journal is kept."),
    HttpApiEndpoint.post("enable", "/webhooks/:id/enable", {
      params: idParams,
      success: single,
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Resume deliveries to a disabled subscription")
      .annotate(OpenApi.Description, "Owner or administrator only. Enables the subscription again; it sends nothing by itself (`POST /webhooks/{id}/recover` with `which: skipped` sends what was skipped meanwhile)."),
    HttpApiEndpoint.delete("delete", "/webhooks/:id", {
      params: idParams,
      success: ok(Schema.Struct({ id: WebhookId }).annotate({ examples: [{ id: WebhookId.make(4) }] })),
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Delete the subscription with its secret, its pending deliveries and its journal")
      .annotate(OpenApi.Description, "Owner or administrator only. Deletes the subscription, its secret, its pending deliveries and its journal; nothing more is sent to it."),
    HttpApiEndpoint.post("test", "/webhooks/:id/test", {
      params: idParams,
      success: okQueued(Schema.Struct({ event_id: EventId }).annotate({ examples: [{ event_id: 1042 }] })),
      error: [Errors.NotFound.envelope, Errors.Conflict.envelope, throttled]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Queue a webhook.test event to this subscription's current URL")
      .annotate(OpenApi.Description, "Owner or administrator only. Queues a `webhook.test` delivery to the subscription's current URL. Test, resend and recover calls share a budget of `WEBHOOK_ACTIONS_PER_MINUTE` per subscription (10 by default): past it, 409 `CONFLICT` with the seconds to wait (docs/back-office.md \"Webhook limits\")."),
    HttpApiEndpoint.get("deliveries", "/webhooks/:id/deliveries", {
      params: idParams,
      success: ok(Schema.Array(JournalEntry)),
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "The journal: the last 50 deliveries, newest first")
      .annotate(OpenApi.Description, "Owner or administrator only. The subscription's journal: its last 50 deliveries, newest first, with their status and attempts count."),
    HttpApiEndpoint.get("delivery", "/webhooks/:id/deliveries/:delivery_id", {
      params: deliveryParams,
      success: ok(DeliveryDetail),
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS)
      .annotate(OpenApi.Summary, "One delivery with its body and every attempt")
      .annotate(OpenApi.Description, "Owner or administrator only. One delivery of the subscription with the body it sends and every attempt (status, answer, error, duration); 404 `NOT_FOUND` when either id is not the school's."),
    HttpApiEndpoint.post("resend", "/webhooks/:id/deliveries/:delivery_id/resend", {
      params: deliveryParams,
      success: okQueued(Schema.Struct({ delivery_id: DeliveryId }).annotate({ examples: [{ delivery_id: DeliveryId.make(22) }] })),
      error: [Errors.NotFound.envelope, Errors.Conflict.envelope, throttled]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Queue the same event again as a new delivery (same body) to the current URL")
      .annotate(OpenApi.Description, "Owner or administrator only. Queues the delivery's event again as a new delivery with the same body, to the subscription's current URL. Shares the per-subscription budget of test, resend and recover calls (409 `CONFLICT` past it)."),
    HttpApiEndpoint.post("recover", "/webhooks/:id/recover", {
      params: idParams,
      payload: RecoverRequest,
      success: okQueued(Schema.Struct({ queued: Schema.Int }).annotate({ examples: [{ queued: 3 }] })),
      error: [Errors.NotFound.envelope, Errors.Conflict.envelope, throttled, ...bodyRefusals]
    }).annotate(RequiredAccess, OWNER_OR_ADMINISTRATOR)
      .annotate(OpenApi.Summary, "Queue again every delivery that ended failed (or was skipped) at or after since")
      .annotate(OpenApi.Description, "Owner or administrator only. Queues again every delivery of the subscription that ended `failed` (or, with `which: skipped`, was skipped) at or after `since`, and says how many. Shares the per-subscription budget of test, resend and recover calls (409 `CONFLICT` past it).")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
