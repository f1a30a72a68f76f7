/**
 * A webhook subscription's secret (docs/back-office.md "Webhooks"; docs/decisions.md "Webhooks",
 * "Webhook secrets"): `whsec_` + the base64 of 32 random bytes, shown once
 * when the subscription is created. The dispatcher needs the plain secret to
 * sign every delivery, so it cannot be hashed: it is stored encrypted with
 * AES-256-GCM under the key of the setting `WEBHOOK_SECRET_KEY` (base64 of 32
 * bytes), or, when that is unset, under a development key built into the
 * code (the API warns at start).
 *
 * Stored form: `version (1 byte) ‖ IV (12 bytes) ‖ tag (16 bytes) ‖
 * ciphertext`. The version says which key encrypted it (0: the development
 * key, 1: WEBHOOK_SECRET_KEY), so a key can be rotated later by adding a
 * version; the version byte is authenticated too (GCM additional data).
 * `decrypt` is here, beside `encrypt`, for the dispatcher.
 */
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import { SECRET_PREFIX } from "./WebhookSignature.ts"

export { SECRET_PREFIX }

/** Random bytes in a secret. */
export const SECRET_BYTES = 32

/** A new secret: `whsec_` + base64 of 32 random bytes (50 characters). */
export const generateSecret = (): string => `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`

/** The exact shape of a secret this service issues. */
export const isSecretShaped = (secret: string): boolean => /^whsec_[A-Za-z0-9+/]{43}=$/u.test(secret)

/** An encryption key and the version byte that names it in stored ciphertexts. */
export interface SecretKey {
  readonly version: number
  readonly key: Uint8Array
}

/** Version of ciphertexts under the built-in development key. */
export const DEVELOPMENT_VERSION = 0
/** Version of ciphertexts under `WEBHOOK_SECRET_KEY`. */
export const CONFIGURED_VERSION = 1

/**
 * The built-in development key: public (it is in the source), so it keeps
 * secrets out of a casual database dump and no more. Production sets
 * WEBHOOK_SECRET_KEY.
 */
export const DEVELOPMENT_KEY: SecretKey = {
  version: DEVELOPMENT_VERSION,
  key: createHash("sha256").update("school-service development webhook secret key").digest()
}

/** The key WEBHOOK_SECRET_KEY names. */
export const configuredKey = (key: Uint8Array): SecretKey => ({ version: CONFIGURED_VERSION, key })

/** The key new secrets are encrypted with: WEBHOOK_SECRET_KEY's when set, else the development key. */
export const currentKey = (configured: Option.Option<Uint8Array>): SecretKey =>
  Option.match(configured, { onNone: () => DEVELOPMENT_KEY, onSome: configuredKey })

/**
 * Every key a stored secret may be under: the configured one (when set) and
 * the development key, so subscriptions created before WEBHOOK_SECRET_KEY was
 * set keep working (their secret is re-issued by creating the subscription
 * again, if the development key's weakness matters).
 */
export const keyRing = (configured: Option.Option<Uint8Array>): ReadonlyArray<SecretKey> =>
  Option.match(configured, { onNone: () => [DEVELOPMENT_KEY], onSome: (key) => [configuredKey(key), DEVELOPMENT_KEY] })

const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
const HEADER_BYTES = 1 + IV_BYTES + TAG_BYTES

/** WEBHOOK_SECRET_KEY's syntax: standard base64 (with its padding) of exactly 32 bytes, e.g. `openssl rand -base64 32`. */
export const parseKey = (text: string): Option.Option<Uint8Array> => {
  const value = text.trim()
  if (!/^[A-Za-z0-9+/]{43}=$/u.test(value)) return Option.none()
  const bytes = Buffer.from(value, "base64")
  return bytes.length === KEY_BYTES && bytes.toString("base64") === value
    ? Option.some(new Uint8Array(bytes))
    : Option.none()
}

/** Encrypts `secret` under `key` (a fresh random IV each time): the stored form. */
export const encrypt = (key: SecretKey, secret: string): Uint8Array => {
  const version = Buffer.from([key.version])
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv("aes-256-gcm", key.key, iv)
  cipher.setAAD(version)
  const ciphertext = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()])
  return new Uint8Array(Buffer.concat([version, iv, cipher.getAuthTag(), ciphertext]))
}

/**
 * The secret a stored form holds, decrypted with the key of its version
 * from `keys`; a failure says why (unknown version, too short, or
 * tampered/wrong key: GCM authenticates every byte).
 */
export const decrypt = (keys: ReadonlyArray<SecretKey>, stored: Uint8Array): Result.Result<string, string> => {
  if (stored.length < HEADER_BYTES) return Result.fail("the stored secret is too short")
  const bytes = Buffer.from(stored)
  const version = bytes[0]
  const key = keys.find((candidate) => candidate.version === version)
  if (key === undefined) {
    return Result.fail(`the stored secret is under key version ${version}, which is not configured (WEBHOOK_SECRET_KEY)`)
  }
  try {
    const decipher = createDecipheriv("aes-256-gcm", key.key, bytes.subarray(1, 1 + IV_BYTES), { authTagLength: TAG_BYTES })
    decipher.setAAD(bytes.subarray(0, 1))
    decipher.setAuthTag(bytes.subarray(1 + IV_BYTES, HEADER_BYTES))
    const plain = Buffer.concat([decipher.update(bytes.subarray(HEADER_BYTES)), decipher.final()])
    return Result.succeed(plain.toString("utf8"))
  } catch {
    return Result.fail("the stored secret does not authenticate under its key (tampered, or another key)")
  }
}
