/**
 * The API process's guard against floods of failed authentications from one
 * client address (docs/decisions.md "Rate limits" and "Authentication and
 * scopes"; the rule is `@school/domain/AuthFailures`). Everything here is in
 * this process's memory, in capped maps: a rejected request costs a map
 * lookup and a hash, and the database nothing.
 *
 * Before a well-formed credential is looked up, the guard answers it itself
 * in two cases:
 * - the same credential already failed from the same client within
 *   `rememberFailures`: the same 401 (`unknown_key`, `revoked_key`,
 *   `expired_key`) again, so a client that repeats a bad key costs one
 *   lookup, not one per request;
 * - the client has spent its budget of failures (a burst, then one per
 *   interval): 429 `rate_limit_exceeded` with `Retry-After`, unless this
 *   process has seen this very credential (prefix and secret) authenticate:
 *   a key that works is never held back by the address it comes from, so an
 *   integrator behind the same NAT or proxy as an attacker keeps working.
 *
 * Every other credential goes to the database as before; a failure it
 * reports is counted against the client and remembered, a success makes the
 * credential known. The address is the client's as ClientAddress.ts finds
 * it: the socket's, or X-Forwarded-For only from a proxy in `TRUST_PROXY`
 * (anyone else can send it); see docs/operations.md "Rate limits".
 *
 * `blockedEarly` gives the 429 case alone, before the request is routed
 * (apps/api/src/Server.ts `EarlyRefusals`), so that a blocked client's flood
 * costs the process as little as it costs the database. It hashes the secret
 * only when the client is blocked, and then hands the hash to `check` of the
 * same request: a secret is hashed once per request.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ApiKey, AuthFailures, type Errors } from "@school/domain"

/** Why a credential that reached the database did not authenticate. */
export type FailureReason = Exclude<Errors.UnauthorizedReason, "missing_or_malformed_key">

export interface AuthFailureGuardOptions {
  /** The budget per client; None: the guard is off (every credential goes to the database). */
  readonly budget: Option.Option<AuthFailures.Budget>
  /**
   * Whether a blocked client's request is answered before it is routed
   * (apps/api/src/Server.ts `EarlyRefusals`); false: it goes the whole way
   * to the authentication middleware, which gives the same answer.
   */
  readonly answerEarly: boolean
  /** µs a failed credential is answered from memory for the client that sent it. */
  readonly rememberFailures: number
  /** Clients with a budget in use, at most; the least recently failing goes first. */
  readonly maxClients: number
  /** Failed (client, credential) pairs remembered, at most; the oldest goes first. */
  readonly maxFailures: number
  /** Credentials seen to authenticate, at most; the least recently used goes first. */
  readonly maxKnownKeys: number
}

export const defaultOptions: AuthFailureGuardOptions = {
  budget: Option.some(AuthFailures.DEFAULT_BUDGET),
  answerEarly: true,
  rememberFailures: 60_000_000,
  maxClients: 10_000,
  maxFailures: 10_000,
  maxKnownKeys: 10_000
}

export const AuthFailureGuardOptions = Context.Reference<AuthFailureGuardOptions>(
  "school/api/AuthFailureGuard/AuthFailureGuardOptions",
  { defaultValue: () => defaultOptions }
)

/** What to do with a well-formed credential before the database sees it. */
export type Verdict =
  /** Ask the database, then `settle` with what it said. */
  | { readonly _tag: "Lookup"; readonly client: string; readonly prefix: string; readonly secretHash: Uint8Array }
  /** This client sent this credential and it failed, recently: the same 401. */
  | { readonly _tag: "Repeat"; readonly reason: FailureReason }
  /** This client has spent its failures: 429 after `wait` µs. */
  | { readonly _tag: "Blocked"; readonly wait: number }

/** Puts `key` last in the map's order (most recent), dropping the first while the map is full. */
const touch = <V>(map: Map<string, V>, key: string, value: V, max: number) => {
  map.delete(key)
  while (map.size >= max) {
    const first = map.keys().next()
    if (first.done === true) break
    map.delete(first.value)
  }
  map.set(key, value)
}

export class AuthFailureGuard extends Context.Service<AuthFailureGuard, {
  /**
   * Before the lookup; `address` is the client's (ClientAddress.clientAddress).
   * `request`: the request's source (its Node message), under which
   * `blockedEarly` may have left the secret's hash. No I/O.
   */
  check(address: Option.Option<string>, prefix: string, secret: string, request?: object): Effect.Effect<Verdict>
  /**
   * µs to wait when `check` would answer Blocked now, else undefined;
   * `address` is asked for only while some client has failures on record.
   * When it had to hash the secret (the client is blocked), the hash is kept
   * for `check` of the same `request`. Synchronous, no I/O.
   */
  blockedEarly(address: () => Option.Option<string>, prefix: string, secret: string, request: object): number | undefined
  /** After the lookup: None when the credential authenticated (the key's own checks passed), else why not. */
  settle(lookup: Verdict & { readonly _tag: "Lookup" }, failure: Option.Option<FailureReason>): Effect.Effect<void>
}>()("school/api/AuthFailureGuard") {
  static readonly layer = Layer.effect(
    AuthFailureGuard,
    Effect.gen(function*() {
      const options = yield* AuthFailureGuardOptions
      const clock = yield* Clock.Clock
      const nowMicros = () => Number(clock.currentTimeNanosUnsafe() / 1_000n)

      /** Client → its state (AuthFailures.State), only while it is not idle. */
      const clients = new Map<string, AuthFailures.State>()
      /** `client prefix hash` → the answer and until when (µs) it stands. */
      const failures = new Map<string, { readonly reason: FailureReason; readonly until: number }>()
      /** Prefix → the secret hash that authenticated with it. */
      const known = new Map<string, Uint8Array>()

      const failureKey = (client: string, prefix: string, secretHash: Uint8Array) =>
        `${client} ${prefix} ${Buffer.from(secretHash).toString("base64")}`

      const isKnown = (prefix: string, secretHash: Uint8Array) => {
        const hash = known.get(prefix)
        return hash !== undefined && hash.length === secretHash.length && Buffer.compare(hash, secretHash) === 0
      }

      /** Request (its source) → the hash `blockedEarly` computed for it, for its `check`. */
      const hashed = new WeakMap<object, { readonly prefix: string; readonly secret: string; readonly hash: Uint8Array }>()

      const hashOf = (prefix: string, secret: string, request: object | undefined) => {
        const early = request === undefined ? undefined : hashed.get(request)
        return early !== undefined && early.prefix === prefix && early.secret === secret ? early.hash : ApiKey.hashSecret(secret)
      }

      /** The failure this client had with this credential, while it stands (an expired one is dropped). */
      const standingFailure = (client: string, prefix: string, secretHash: Uint8Array, now: number) => {
        if (failures.size === 0) return undefined
        const key = failureKey(client, prefix, secretHash)
        const failed = failures.get(key)
        if (failed === undefined) return undefined
        if (failed.until > now) return failed
        failures.delete(key)
        return undefined
      }

      const blockedEarly = (address: () => Option.Option<string>, prefix: string, secret: string, request: object) => {
        if (Option.isNone(options.budget) || clients.size === 0) return undefined
        const client = AuthFailures.clientOf(Option.getOrUndefined(address()))
        const state = clients.get(client)
        if (state === undefined) return undefined
        const now = nowMicros()
        // An idle client is `check`'s to forget.
        if (AuthFailures.isIdle(state, now)) return undefined
        const wait = AuthFailures.wait(state, now, options.budget.value)
        if (wait === 0) return undefined
        // The order of `check`: a known credential, then a standing failure (Repeat), then the block.
        const secretHash = ApiKey.hashSecret(secret)
        // Kept even when it blocks: the caller may still send the request the whole way.
        hashed.set(request, { prefix, secret, hash: secretHash })
        if (isKnown(prefix, secretHash) || standingFailure(client, prefix, secretHash, now) !== undefined) return undefined
        return wait
      }

      const check = (address: Option.Option<string>, prefix: string, secret: string, request?: object) =>
        Effect.sync((): Verdict => {
          const client = AuthFailures.clientOf(Option.getOrUndefined(address))
          const secretHash = hashOf(prefix, secret, request)
          const lookup: Verdict = { _tag: "Lookup", client, prefix, secretHash }
          if (Option.isNone(options.budget) || isKnown(prefix, secretHash)) return lookup
          const now = nowMicros()
          const failed = standingFailure(client, prefix, secretHash, now)
          if (failed !== undefined) return { _tag: "Repeat", reason: failed.reason }
          const state = clients.get(client)
          if (state === undefined) return lookup
          if (AuthFailures.isIdle(state, now)) {
            clients.delete(client)
            return lookup
          }
          const wait = AuthFailures.wait(state, now, options.budget.value)
          return wait === 0 ? lookup : { _tag: "Blocked", wait }
        })

      const settle = (lookup: Verdict & { readonly _tag: "Lookup" }, failure: Option.Option<FailureReason>) =>
        Effect.sync(() => {
          const { client, prefix, secretHash } = lookup
          if (Option.isNone(failure)) {
            touch(known, prefix, secretHash, options.maxKnownKeys)
            return
          }
          if (isKnown(prefix, secretHash)) known.delete(prefix)
          if (Option.isNone(options.budget)) return
          const now = nowMicros()
          touch(failures, failureKey(client, prefix, secretHash), {
            reason: failure.value,
            until: now + options.rememberFailures
          }, options.maxFailures)
          const state = clients.get(client) ?? AuthFailures.initial
          touch(clients, client, AuthFailures.recordFailure(state, now, options.budget.value), options.maxClients)
        })

      return AuthFailureGuard.of({ check, blockedEarly, settle })
    })
  )
}
