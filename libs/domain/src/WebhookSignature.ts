/**
 * What a webhook delivery looks like on the wire (docs/integrators.md
 * "Receiving webhooks"; docs/decisions.md
 * "Webhooks"): the body `{ event, account_id, payload, timestamp }`, built
 * once per delivery, and the headers of one attempt with both signatures:
 *
 * - `X-Service-Signature`: lowercase hex HMAC-SHA256 of the raw
 *   body bytes, keyed with the UTF-8 bytes of the whole secret string as
 *   shown (`whsec_…`);
 * - Standard Webhooks: `webhook-id` (the delivery's opaque id,
 *   `DeliveryPublicId`, the same on every attempt; also `X-Service-Delivery`), `webhook-timestamp` (unix seconds of this attempt) and
 *   `webhook-signature` (`v1,` + base64 HMAC-SHA256 of
 *   `{id}.{timestamp}.{body}`, keyed with the base64-decoded bytes after
 *   `whsec_`), which the public `standardwebhooks` libraries verify.
 */
import * as Schema from "effect/Schema"
import { createHmac } from "node:crypto"

export const SECRET_PREFIX = "whsec_"
export const USER_AGENT = "school-service-webhooks/1"

/**
 * The delivery body. `payloadJson` is the event's payload as stored (JSON
 * text), spliced in unchanged so its numbers keep their exact text
 * (docs/integrators.md "Event catalog": 1500.5, never 1500.5000000001); `timestamp` is the first
 * attempt's time, ISO 8601 with offset.
 */
export const deliveryBody = (options: {
  readonly event: string
  readonly accountId: number
  readonly payloadJson: string
  readonly timestamp: string
  /** A sample event (`webhooks trigger`): the body ends with `"sample":true`. */
  readonly sample?: boolean
}): string =>
  `{"event":${JSON.stringify(options.event)},"account_id":${JSON.stringify(options.accountId)},"payload":${options.payloadJson},"timestamp":${
    JSON.stringify(options.timestamp)
  }${options.sample === true ? `,"sample":true` : ""}}`

/*
 * Both keys are handed to `createHmac` as text with its encoding, not as a Buffer: Node 24 takes a
 * Buffer key through a KeyObject check that costs about 9 µs a call (10.5 against 1.9 µs for a
 * signature, two per attempt). The bytes keyed are the same: test/domain/webhook-signature.test.ts
 * checks both signatures against independent implementations (the standardwebhooks library and a
 * Buffer-keyed HMAC).
 */

/** `X-Service-Signature`: hex HMAC-SHA256 of the body, keyed with the secret string's UTF-8 bytes. */
export const serviceSignature = (secret: string, body: string): string =>
  createHmac("sha256", secret, { encoding: "utf8" }).update(body, "utf8").digest("hex")

/** The key Standard Webhooks signs with: the base64 after `whsec_`, whose bytes are the key. */
const standardKey = (secret: string): string =>
  secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret

/** Standard Webhooks: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`. */
export const standardSignature = (secret: string, id: string, timestampSeconds: number, body: string): string =>
  `v1,${
    createHmac("sha256", standardKey(secret), { encoding: "base64" }).update(`${id}.${timestampSeconds}.${body}`, "utf8")
      .digest("base64")
  }`

/**
 * A delivery's opaque id as receivers see it (docs/decisions.md "Delivery
 * ids"): `msg_` and 32 lowercase hex digits of a random UUID, made by the
 * database when the delivery is (migration 0700), the same on every attempt
 * and unrelated to the numeric id the back office uses, so it tells a
 * receiver nothing about the service's volume.
 */
export const DeliveryPublicId = Schema.String.check(
  Schema.isPattern(/^msg_[0-9a-f]{32}$/u, { message: "Expected msg_ and 32 hex digits" })
)
export type DeliveryPublicId = typeof DeliveryPublicId.Type

/** The headers of one attempt of the delivery `deliveryId` (its opaque id) of `event`, at `nowSeconds`. */
export const attemptHeaders = (options: {
  readonly secret: string
  readonly deliveryId: string
  readonly event: string
  readonly body: string
  readonly nowSeconds: number
}): Readonly<Record<string, string>> => {
  const id = options.deliveryId
  return {
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    "x-service-event": options.event,
    "x-service-delivery": id,
    "x-service-signature": serviceSignature(options.secret, options.body),
    "webhook-id": id,
    "webhook-timestamp": String(options.nowSeconds),
    "webhook-signature": standardSignature(options.secret, id, options.nowSeconds, options.body)
  }
}
