/**
 * Webhook secrets (libs/domain/src/WebhookSecret.ts; docs/decisions.md
 * "Webhook secrets"): the issued shape, the WEBHOOK_SECRET_KEY syntax, and
 * AES-256-GCM at rest: any secret under any key decrypts to itself; a
 * stored form with any byte changed, under another key, or of an unknown
 * version does not decrypt.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option, Result, Schema } from "effect"
import { randomBytes } from "node:crypto"
import * as WebhookSecret from "@school/domain/WebhookSecret"

const Key = Schema.Uint8Array.check(Schema.isMinLength(32), Schema.isMaxLength(32))
const SecretBytes = Schema.Uint8Array.check(Schema.isMinLength(32), Schema.isMaxLength(32))
const Version = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 255 }))
const Position = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10_000 }))
const Flip = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 255 }))

const secretOf = (bytes: Uint8Array) => `whsec_${Buffer.from(bytes).toString("base64")}`

describe("WebhookSecret", () => {
  it("a new secret is whsec_ + base64 of 32 random bytes, different every time", () => {
    const secrets = new Set(Array.from({ length: 200 }, WebhookSecret.generateSecret))
    assert.strictEqual(secrets.size, 200)
    for (const secret of secrets) {
      assert.isTrue(WebhookSecret.isSecretShaped(secret), secret)
      assert.strictEqual(Buffer.from(secret.slice("whsec_".length), "base64").length, 32)
      assert.strictEqual(secret.length, 50)
    }
  })

  it.prop(
    "encrypt then decrypt gives the secret back, under any key and version, and never shows it in the stored bytes",
    { key: Key, version: Version, secretBytes: SecretBytes },
    ({ key, secretBytes, version }) => {
      const secret = secretOf(secretBytes)
      const stored = WebhookSecret.encrypt({ version, key }, secret)
      assert.strictEqual(stored[0], version)
      assert.notInclude(Buffer.from(stored).toString("latin1"), secret)
      assert.deepStrictEqual(WebhookSecret.decrypt([{ version, key }], stored), Result.succeed(secret))
      // A fresh IV every time: the same secret never stores the same bytes twice.
      assert.notDeepEqual(WebhookSecret.encrypt({ version, key }, secret), stored)
    },
    { arbitrary: { runs: 300 } }
  )

  it.prop(
    "a stored form with any byte changed does not decrypt (GCM authenticates the version, the IV, the tag and the text)",
    { key: Key, secretBytes: SecretBytes, position: Position, flip: Flip },
    ({ flip, key, position, secretBytes }) => {
      const sk = WebhookSecret.configuredKey(key)
      const stored = WebhookSecret.encrypt(sk, secretOf(secretBytes))
      const tampered = new Uint8Array(stored)
      const at = position % tampered.length
      tampered[at] = (tampered[at] ?? 0) ^ flip
      // A changed version byte names another key, which the ring must hold to try it: give it the same key.
      const ring = [sk, { version: tampered[0] ?? 0, key }]
      assert.isTrue(Result.isFailure(WebhookSecret.decrypt(ring, tampered)), `byte ${at} changed and still decrypted`)
      // Cut short, too.
      assert.isTrue(Result.isFailure(WebhookSecret.decrypt(ring, stored.subarray(0, at))))
    },
    { arbitrary: { runs: 300 } }
  )

  it.prop(
    "under another key, a stored secret does not decrypt",
    { key: Key, other: Key, secretBytes: SecretBytes },
    ({ key, other, secretBytes }) => {
      if (Buffer.from(key).equals(Buffer.from(other))) return
      const stored = WebhookSecret.encrypt(WebhookSecret.configuredKey(key), secretOf(secretBytes))
      assert.isTrue(Result.isFailure(WebhookSecret.decrypt([WebhookSecret.configuredKey(other)], stored)))
    }
  )

  it("the version picks the key: development-key secrets still decrypt once WEBHOOK_SECRET_KEY is set; an unknown version says so", () => {
    const secret = WebhookSecret.generateSecret()
    const configured = new Uint8Array(randomBytes(32))
    const underDevelopment = WebhookSecret.encrypt(WebhookSecret.currentKey(Option.none()), secret)
    const underConfigured = WebhookSecret.encrypt(WebhookSecret.currentKey(Option.some(configured)), secret)
    assert.strictEqual(underDevelopment[0], WebhookSecret.DEVELOPMENT_VERSION)
    assert.strictEqual(underConfigured[0], WebhookSecret.CONFIGURED_VERSION)
    const ring = WebhookSecret.keyRing(Option.some(configured))
    assert.deepStrictEqual(WebhookSecret.decrypt(ring, underDevelopment), Result.succeed(secret))
    assert.deepStrictEqual(WebhookSecret.decrypt(ring, underConfigured), Result.succeed(secret))
    const withoutKey = WebhookSecret.decrypt(WebhookSecret.keyRing(Option.none()), underConfigured)
    assert.isTrue(Result.isFailure(withoutKey))
    if (Result.isFailure(withoutKey)) assert.include(withoutKey.failure, "WEBHOOK_SECRET_KEY")
  })

  it("WEBHOOK_SECRET_KEY: standard base64 of exactly 32 bytes", () => {
    const key = randomBytes(32)
    assert.deepStrictEqual(WebhookSecret.parseKey(key.toString("base64")), Option.some(new Uint8Array(key)))
    assert.deepStrictEqual(WebhookSecret.parseKey(` ${key.toString("base64")}\n`), Option.some(new Uint8Array(key)))
    for (
      const bad of [
        "",
        randomBytes(31).toString("base64"),
        randomBytes(33).toString("base64"),
        randomBytes(32).toString("base64url"),
        randomBytes(32).toString("hex"),
        `${key.toString("base64").slice(0, 43)}`,
        "not a key at all, not a key at all, not a k="
      ]
    ) {
      assert.isTrue(Option.isNone(WebhookSecret.parseKey(bad)), bad)
    }
  })
})
