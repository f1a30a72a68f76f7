/**
 * The webhooks a subscription receives (OpenAPI 3.1 `webhooks`, public
 * document): one per event of the domain's catalog (`Events.payloads`), with
 * the exact body, the headers of both signature schemes, and what the answer
 * means (docs/decisions.md "Webhooks"; docs/integrators.md "Receiving
 * webhooks"). The deliveries are not routes of the API, so the contract has
 * nothing to derive them from: the body and headers are written here, the
 * payloads' schemas and examples come from the catalog.
 */
import type * as JsonSchema from "effect/JsonSchema"
import * as Schema from "effect/Schema"
import * as Events from "../../Events.ts"
import { Timestamp } from "../../Timestamps.ts"
import * as WebhookSignature from "../../WebhookSignature.ts"
import type { Adjustment, MediaTypeWithExample, Parameter, Spec, SpecResponse } from "./Document.ts"
import { componentRef } from "./Document.ts"
import { exampleOf } from "./Examples.ts"

/** A header of a delivery attempt, as OpenAPI writes a webhook operation's parameters. */
interface DeliveryHeader extends Parameter {
  readonly in: "header"
  readonly required: true
  readonly description: string
  readonly schema: JsonSchema.JsonSchema
}

/** A webhook as OpenAPI 3.1 writes it (`webhooks.<name>.post`), which Effect's model of the document leaves out. */
export interface WebhookOperation {
  readonly operationId: string
  readonly summary: string
  readonly description: string
  readonly parameters: ReadonlyArray<DeliveryHeader>
  readonly requestBody: {
    readonly required: true
    readonly content: { readonly "application/json": MediaTypeWithExample }
  }
  readonly responses: { readonly "2XX": SpecResponse; readonly default: SpecResponse }
}

/** The document with its `webhooks`. */
export interface SpecWithWebhooks extends Spec {
  webhooks: Record<string, { readonly post: WebhookOperation }>
}

/** What each event is sent for (docs/integrators.md "Event catalog"; docs/decisions.md "Webhooks"). */
const EVENT_SUMMARIES: Record<Events.EventName, string> = {
  "student.created": "A student was created (back office)",
  "lead.created": "A lead was created (POST /leads or the back office)",
  "group.enrolled": "A student was enrolled into a group (POST /students/{id}/groups or the back office)",
  "lesson.completed": "A student attended a lesson (visit_status 1)",
  "payment.received": "A payment was received; amount and payment_amount in roubles",
  "webhook.test": "A test delivery queued from the back office (POST /webhooks/{id}/test)"
}

const header = (name: string, description: string, schema: JsonSchema.JsonSchema): DeliveryHeader => ({
  name,
  in: "header",
  required: true,
  description,
  schema
})

/** The headers of every delivery attempt, as a receiver reads them (libs/domain/src/WebhookSignature.ts). */
const deliveryHeaders = (event: Events.EventName): ReadonlyArray<DeliveryHeader> => {
  // docs/decisions.md "Delivery ids": opaque, the same on every attempt (WebhookSignature.DeliveryPublicId).
  const id = { type: "string", pattern: "^msg_[0-9a-f]{32}$", example: "msg_8f14e45fceea4e9b9c2a3d7b1e0f6a52" }
  return [
    header("X-Service-Event", "The event's name.", { type: "string", enum: [event] }),
    header(
      "X-Service-Delivery",
      "The delivery's opaque id (msg_ + 32 hex digits): the same on every attempt of this delivery, from any dispatcher; deduplicate on it.",
      id
    ),
    header(
      "X-Service-Signature",
      "Lowercase hex HMAC-SHA256 of the raw body bytes, keyed with the UTF-8 bytes of the whole " +
        `subscription secret as shown (\`${WebhookSignature.SECRET_PREFIX}…\`). Compare in constant time.`,
      { type: "string", pattern: "^[0-9a-f]{64}$" }
    ),
    header("webhook-id", "Standard Webhooks: the delivery's opaque id (as X-Service-Delivery).", id),
    header(
      "webhook-timestamp",
      "Standard Webhooks: unix seconds of THIS attempt (a retry carries its own time), within the libraries' tolerance.",
      { type: "string", pattern: "^[0-9]+$" }
    ),
    header(
      "webhook-signature",
      "Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the " +
        `base64-decoded bytes after \`${WebhookSignature.SECRET_PREFIX}\`; the \`standardwebhooks\` libraries verify it.`,
      { type: "string", pattern: "^v1,[A-Za-z0-9+/]{43}=$" }
    ),
    header("User-Agent", "The dispatcher.", { type: "string", enum: [WebhookSignature.USER_AGENT] })
  ]
}

/** The name of an event's payload among the document's schemas: `lead.created` → `LeadCreatedPayload`. */
const payloadName = (event: Events.EventName): string =>
  `${event.split(".").map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join("")}Payload`

/** The school of the examples' deliveries. */
const EXAMPLE_ACCOUNT_ID = 1

/** The first attempt's time in the examples: a timestamp's own example. */
const exampleTimestamp = (): string => {
  const timestamp = Schema.resolveAnnotations(Timestamp)?.examples?.[0]
  if (timestamp === undefined) throw new Error("OpenAPI: Timestamp has no `examples` annotation")
  return timestamp
}

/** The delivery body of `event`: `{ event, account_id, payload, timestamp }`, closed like the payload. */
const deliveryBody = (event: Events.EventName): JsonSchema.JsonSchema => ({
  type: "object",
  description: "Built once per delivery: every retry resends these exact bytes.",
  properties: {
    event: { type: "string", enum: [event] },
    account_id: { type: "integer", minimum: 1, description: "The school's id" },
    payload: componentRef(payloadName(event)),
    timestamp: { type: "string", format: "date-time", description: "The first attempt's time, ISO 8601 with offset" }
  },
  required: ["event", "account_id", "payload", "timestamp"],
  additionalProperties: false
})

const webhook = (spec: Spec, event: Events.EventName): WebhookOperation => {
  const payload = exampleOf(spec, componentRef(payloadName(event)))
  if (payload === undefined) throw new Error(`OpenAPI: the ${event} payload has no \`examples\` annotation`)
  return {
    operationId: `webhook.${event}`,
    summary: EVENT_SUMMARIES[event],
    description: "POSTed to the subscription's URL for every subscribed event. At least once, in no particular order: " +
      "deduplicate on X-Service-Delivery / webhook-id. Verify either signature over the raw body bytes.",
    parameters: deliveryHeaders(event),
    requestBody: {
      required: true,
      content: {
        "application/json": {
          schema: deliveryBody(event),
          example: { event, account_id: EXAMPLE_ACCOUNT_ID, payload, timestamp: exampleTimestamp() }
        }
      }
    },
    responses: {
      "2XX": { description: "Received. Answer fast (within WEBHOOK_TIMEOUT, 10 s by default), then do the work." },
      default: {
        description:
          "Any other status (3xx and 410 and 429 included: redirects are not followed), a time-out or a refused " +
          "connection is a failed attempt. Attempts run at once, then after 1, 5 and 30 minutes; after the fourth " +
          "failure the delivery is failed (the back office can resend it). The subscription is never disabled automatically."
      }
    }
  }
}

/**
 * The `webhooks` of the document, one per event of the catalog, and each
 * event's payload among its schemas (`LeadCreatedPayload`, ...).
 */
export const documentWebhooks: Adjustment = (spec) => {
  for (const event of Events.EVENT_NAMES) {
    spec.components.schemas[payloadName(event)] =
      Schema.toJsonSchemaDocument(Events.payloads[event], { onExcessProperty: "error" }).schema
  }
  const withWebhooks: SpecWithWebhooks = {
    ...spec,
    webhooks: Object.fromEntries(Events.EVENT_NAMES.map((event) => [event, { post: webhook(spec, event) }]))
  }
  return withWebhooks
}
