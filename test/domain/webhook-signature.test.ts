/**
 * Both signatures of a delivery (docs/integrators.md "Receiving webhooks"; docs/decisions.md "Webhooks"),
 * checked against independent implementations: the `standardwebhooks`
 * library a receiver would use, and node:crypto's HMAC over the exact body
 * bytes keyed with the whole secret string. For any secret, delivery id,
 * payload and attempt time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Webhook } from "standardwebhooks"
import * as Signature from "@school/domain/WebhookSignature"

const Secret = Schema.Uint8Array.check(Schema.isMinLength(32), Schema.isMaxLength(32))
const Text = Schema.String.check(Schema.isMaxLength(200))
const DeliveryId = Signature.DeliveryPublicId
const Amount = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000_000_000 }))

const secretOf = (bytes: Uint8Array) => `whsec_${Buffer.from(bytes).toString("base64")}`

describe("WebhookSignature", () => {
  it.prop(
    "standardwebhooks verifies every attempt; X-Service-Signature is the hex HMAC of the raw body under the secret string",
    { secretBytes: Secret, deliveryId: DeliveryId, name: Text, kopecks: Amount },
    ({ secretBytes, deliveryId, name, kopecks }) => {
      const secret = secretOf(secretBytes)
      const roubles = `${Math.trunc(kopecks / 100)}.${String(kopecks % 100).padStart(2, "0")}`
      const body = Signature.deliveryBody({
        event: "payment.received",
        accountId: 7,
        payloadJson: `{"student_id":1,"name":${JSON.stringify(name)},"amount":${Number(roubles)}}`,
        timestamp: "2026-11-23T10:00:00.000000Z"
      })
      const parsed = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))(body)
      assert.deepStrictEqual(Object.keys(parsed), ["event", "account_id", "payload", "timestamp"])
      const nowSeconds = Math.floor(Date.now() / 1000)
      const headers = Signature.attemptHeaders({ secret, deliveryId, event: "payment.received", body, nowSeconds })
      // The receiver's library: throws when the signature or the timestamp is wrong.
      new Webhook(secret).verify(body, headers)
      const expected = createHmac("sha256", Buffer.from(secret, "utf8")).update(Buffer.from(body, "utf8")).digest()
      const sent = Buffer.from(headers["x-service-signature"] ?? "", "hex")
      assert.match(headers["x-service-signature"] ?? "", /^[0-9a-f]{64}$/u)
      assert.isTrue(timingSafeEqual(sent, expected))
      assert.strictEqual(headers["webhook-id"], deliveryId)
      assert.strictEqual(headers["x-service-delivery"], deliveryId)
    }
  )

  it("a later attempt has a new timestamp and signature, the same body and X-Service-Signature; a changed body fails", () => {
    const secret = secretOf(randomBytes(32))
    const body = Signature.deliveryBody({ event: "webhook.test", accountId: 1, payloadJson: `{"subscription_id":3,"message":"hi"}`, timestamp: "2026-11-23T10:00:00+00:00" })
    const now = Math.floor(Date.now() / 1000)
    const first = Signature.attemptHeaders({ secret, deliveryId: "msg_0123456789abcdef0123456789abcdef", event: "webhook.test", body, nowSeconds: now - 1800 })
    const retry = Signature.attemptHeaders({ secret, deliveryId: "msg_0123456789abcdef0123456789abcdef", event: "webhook.test", body, nowSeconds: now })
    assert.strictEqual(first["x-service-signature"], retry["x-service-signature"])
    assert.notStrictEqual(first["webhook-signature"], retry["webhook-signature"])
    new Webhook(secret).verify(body, retry)
    // The 30-minute-old first attempt is outside the library's 5-minute tolerance; the retry is not.
    assert.throws(() => new Webhook(secret).verify(body, first))
    assert.throws(() => new Webhook(secret).verify(body.replace("hi", "ho"), retry))
    assert.throws(() => new Webhook(secretOf(randomBytes(32))).verify(body, retry))
  })
})
