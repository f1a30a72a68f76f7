/**
 * The public API key format (docs/integrators.md "Authentication", docs/decisions.md "Authentication
 * and scopes"): `svc_<prefix>_<secret>`, prefix 8 characters of `[a-z0-9]`,
 * secret 32 of `[A-Za-z0-9]`. Parsing is total: any string is either a
 * well-formed key or `missing_or_malformed_key`, never a crash. And what a
 * key may do: its scope; and when a new key may expire: only in the future;
 * and a key as the back office issues and lists it (docs/back-office.md
 * "API keys").
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { hash, timingSafeEqual } from "node:crypto"
import { ApiKeyId } from "./Ids.ts"
import { NonEmptyName } from "./Text.ts"
import { type Instant, IsoInstant, parseInstant, Timestamp } from "./Timestamps.ts"

/** What a key may do (docs/integrators.md "Scopes"): `read`, or `write`, which covers reads too. */
export const Scope = Schema.Literals(["read", "write"])
export type Scope = typeof Scope.Type

export const KEY_LITERAL = "svc_"
export const PREFIX_LENGTH = 8
export const SECRET_LENGTH = 32

const prefixAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
const secretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

const KEY_PATTERN = /^svc_([a-z0-9]{8})_([A-Za-z0-9]{32})$/

export interface ParsedKey {
  readonly prefix: string
  readonly secret: string
}

/** Splits a bearer credential into prefix and secret, or None when malformed. */
export const parseApiKey = (credential: string): Option.Option<ParsedKey> => {
  const match = KEY_PATTERN.exec(credential)
  return match === null ? Option.none() : Option.some({ prefix: match[1]!, secret: match[2]! })
}

export const formatApiKey = (key: ParsedKey): string => `${KEY_LITERAL}${key.prefix}_${key.secret}`

/**
 * Draws a key from the given source of random bytes (crypto in production,
 * anything in tests). Rejection sampling keeps every character uniform.
 */
export const generateApiKey = (randomBytes: (n: number) => Uint8Array): ParsedKey => ({
  prefix: draw(prefixAlphabet, PREFIX_LENGTH, randomBytes),
  secret: draw(secretAlphabet, SECRET_LENGTH, randomBytes)
})

const draw = (alphabet: string, length: number, randomBytes: (n: number) => Uint8Array): string => {
  const limit = 256 - (256 % alphabet.length)
  let out = ""
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length]
    }
  }
  return out
}

/**
 * What is stored for a secret: its SHA-256 (the secret has 190 bits of entropy, so no slow hash is needed).
 * Node's one-shot `hash`, a fifth cheaper than a `Hash` object: every authenticated request takes one
 * (apps/api/src/Authentication.ts hashes once and hands the hash on).
 */
export const hashSecret = (secret: string): Uint8Array => hash("sha256", secret, "buffer")

/** Compares the hash of a presented secret (`hashSecret`) with a stored hash in constant time. */
export const hashMatches = (presented: Uint8Array, storedHash: Uint8Array): boolean =>
  storedHash.length === presented.length && timingSafeEqual(storedHash, presented)

/** Compares a presented secret with a stored hash in constant time. */
export const secretMatches = (secret: string, storedHash: Uint8Array): boolean =>
  hashMatches(hashSecret(secret), storedHash)

/** Why an expiry is refused: it is not after now. */
export const EXPIRY_IN_PAST_MESSAGE = "Expected an instant in the future"

/** Whether `instant` is strictly after `nowMs` (milliseconds since the epoch), to the microsecond. */
export const isAfter = (instant: Instant, nowMs: number): boolean => {
  const nowMicros = Math.floor(nowMs * 1000)
  const nowSeconds = Math.floor(nowMicros / 1_000_000)
  return instant.epochSeconds > nowSeconds ||
    (instant.epochSeconds === nowSeconds && instant.micros > nowMicros - nowSeconds * 1_000_000)
}

/**
 * docs/back-office.md "API keys": a new key's `expires_at` (ISO 8601 with an
 * offset, libs/domain/src/Timestamps.ts) must lie in the future; a key that
 * expired on issue would be of no use. Undefined when accepted, else why not.
 */
export const expiryProblem = (text: string, nowMs: number): string | undefined => {
  const parsed = parseInstant(text)
  if (parsed._tag === "Invalid") return parsed.message
  return isAfter(parsed.instant, nowMs) ? undefined : EXPIRY_IN_PAST_MESSAGE
}

/** `POST /api-keys` (docs/back-office.md "API keys"): a name, a scope, and optionally when the key expires. */
export const CreateApiKeyRequest = Schema.Struct({
  name: NonEmptyName,
  scope: Scope.annotate({ message: "Expected read or write" }),
  expires_at: Schema.optionalKey(Schema.NullOr(IsoInstant)).annotate({
    description: "ISO 8601 with an offset, in the future; omitted or null: the key never expires"
  })
}).annotate({ examples: [{ name: "CRM sync", scope: "read", expires_at: "2027-11-22T12:15:03+03:00" }] })
export type CreateApiKeyRequest = typeof CreateApiKeyRequest.Type

/** The key the examples show. */
const keyExample = { id: ApiKeyId.make(3), name: "CRM sync", scope: "read" as const, prefix: "k3f9x2m1" }

/** A key as the back office lists it: never its secret nor the secret's hash. */
export const ApiKeyView = Schema.Struct({
  id: ApiKeyId,
  name: Schema.String,
  scope: Scope,
  prefix: Schema.String.annotate({ description: "The 8 characters after svc_ that identify the key" }),
  created_at: Timestamp,
  expires_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp)
}).annotate({
  examples: [{
    ...keyExample,
    created_at: "2026-11-22T09:15:03.123456Z",
    expires_at: "2027-11-22T09:15:03.000000Z",
    revoked_at: null
  }]
})
export type ApiKeyView = typeof ApiKeyView.Type

/** A key as issued: `key` is the whole `svc_<prefix>_<secret>`, shown this once. */
export const IssuedApiKey = Schema.Struct({
  id: ApiKeyId,
  name: Schema.String,
  scope: Scope,
  prefix: Schema.String,
  key: Schema.String.annotate({ description: "svc_<prefix>_<secret>: shown only in this answer, never again" }),
  created_at: Timestamp,
  expires_at: Schema.NullOr(Timestamp)
}).annotate({
  examples: [{
    ...keyExample,
    key: "svc_k3f9x2m1_Vh7Qp2Lw9Zr4Tn8Bx6Cj1Md5Fs3Gk0Ya",
    created_at: "2026-11-22T09:15:03.123456Z",
    expires_at: "2027-11-22T09:15:03.000000Z"
  }]
})
export type IssuedApiKey = typeof IssuedApiKey.Type
