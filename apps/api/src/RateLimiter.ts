/**
 * The API process's side of the per-key rate limit (docs/integrators.md
 * "Limits", docs/decisions.md "Rate limits"): it asks the shared store
 * (`@school/persistence/RateLimits`, one statement that authenticates and
 * counts) and remembers, in a bounded in-memory map, which keys it has seen
 * over budget and until when. Until then it rejects them itself: a flood of
 * one key costs this process a map lookup and a hash per request, and the
 * database nothing, so other keys do not feel it.
 *
 * A local block is only as good as the budget it was computed with, so every
 * change that can shorten it (a plan change, a key revoked, expired or
 * deleted) reaches the process through `Notifications.rateLimitInvalidations`
 * (a LISTEN stream of school ids) and drops the school's blocks. While that
 * stream is not listening (or the process's client cannot listen), there
 * are no local blocks at all: every request goes to the database, which is
 * always exact.
 *
 * The round trips themselves are batched (docs/decisions.md "Batched
 * authentication"): every request that reaches `admit` in the same tick of
 * the event loop joins one `Effect.request` batch (`RequestResolver`, its
 * default window: one `yieldNow`, no timer), answered by ONE statement
 * (`RateLimits.admitAll`); a batch of one is the single statement of
 * before. At most `maxBatch` requests share a statement.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Request from "effect/Request"
import * as RequestResolver from "effect/RequestResolver"
import * as Stream from "effect/Stream"
import { ApiKey, type Ids, Plans, RateLimit } from "@school/domain"
import { ApiKeys } from "@school/persistence/ApiKeys"
import { Notifications } from "@school/persistence/Notifications"
import { type Admission, type Budgets, RateLimits } from "@school/persistence/RateLimits"
import * as SettingKinds from "@school/runtime/SettingKinds"

/**
 * `RATE_LIMIT_WINDOW` (docs/operations.md "Settings"): the window, 60 s by
 * default (docs/integrators.md "Limits"); None: `off`, nothing is counted
 * (for measurements only).
 */
export const RATE_LIMIT_WINDOW = SettingKinds.make("RATE_LIMIT_WINDOW", SettingKinds.durationOrOff, Option.some(RateLimit.WINDOW))

/** What the limiter takes besides its setting; tests give their own clock, budgets and batch size. */
export interface RateLimitOptions {
  /** A clock in µs since the epoch; None: the database's clock, shared by every process. Tests inject one. */
  readonly clock: Option.Option<Effect.Effect<number>>
  /** At most this many keys are blocked locally at once; the oldest block goes first. */
  readonly maxLocalBlocks: number
  /** The budgets; None: `Plans.budgetPerMinute`. */
  readonly budgets: Option.Option<Budgets>
  /** At most this many requests share one statement (a batch). */
  readonly maxBatch: number
}

export const defaultOptions: RateLimitOptions = {
  clock: Option.none(),
  maxLocalBlocks: 10_000,
  budgets: Option.none(),
  maxBatch: 64
}

/** The limiter's options; by default the database's clock and the plans' budgets. */
export const RateLimitOptions = Context.Reference<RateLimitOptions>("school/api/RateLimiter/RateLimitOptions", {
  defaultValue: () => defaultOptions
})

/** One request's authentication and count, batched with the others of its tick. */
class Admit extends Request.Class<{
  readonly prefix: string
  readonly secretHash: Uint8Array
  /** µs on the injected clock; undefined: the database's. */
  readonly at: number | undefined
}, Option.Option<Admission>> {}

interface Block {
  readonly schoolId: Ids.SchoolId
  readonly secretHash: Uint8Array
  /** µs, on the limiter's clock. */
  readonly until: number
}

export class RateLimiter extends Context.Service<RateLimiter, {
  /** Some(µs to wait) when this process already knows the key with this secret is over budget. No I/O. */
  blocked(prefix: string, secret: string): Effect.Effect<Option.Option<number>>
  /**
   * Whether `blocked` may answer Some for this prefix (a local block under
   * it), synchronously: what answers before routing leaves such a request to
   * the authentication (apps/api/src/Server.ts `EarlyRefusals`). No I/O.
   */
  holdsBlock(prefix: string): boolean
  /**
   * Authenticates and counts the request in one round trip; None when no key has this prefix.
   * `secretHash`: the presented secret's (`ApiKey.hashSecret`), hashed once by the caller.
   */
  admit(prefix: string, secretHash: Uint8Array): Effect.Effect<Option.Option<Admission>>
  /**
   * Drops this process's local blocks of a school's keys at once, as the
   * NOTIFY that every process receives will (a key revoked here answers
   * `revoked_key` on the very next request here, not after the notification).
   */
  forgetSchool(schoolId: Ids.SchoolId): Effect.Effect<void>
}>()("school/api/RateLimiter") {
  static readonly layerNoDeps = Layer.effect(
    RateLimiter,
    Effect.gen(function*() {
      const options = yield* RateLimitOptions
      const window = yield* RATE_LIMIT_WINDOW
      const store = yield* RateLimits
      const keys = yield* ApiKeys
      const notifications = yield* Notifications
      const clock = yield* Clock.Clock
      const nowMicros = Option.getOrElse(
        options.clock,
        () => Effect.sync(() => Number(clock.currentTimeNanosUnsafe() / 1_000n))
      )

      const blocks = new Map<string, Block>()
      let listening = false
      /** Moves on every invalidation, so an answer computed before one does not become a block after it. */
      let epoch = 0

      const invalidate = (schoolId: Ids.SchoolId) => {
        epoch++
        for (const [prefix, block] of blocks) {
          if (block.schoolId === schoolId) blocks.delete(prefix)
        }
      }

      if (Option.isSome(window)) {
        // Its stop is logged once until it listens again, not at every retry (docs/operations.md "Database away").
        let stopLogged = false
        const listen = Effect.scoped(Effect.gen(function*() {
          const invalidations = yield* notifications.rateLimitInvalidations
          listening = true
          stopLogged = false
          yield* Stream.runForEach(invalidations, (schoolId) => Effect.sync(() => invalidate(schoolId)))
        })).pipe(
          Effect.ensuring(Effect.sync(() => {
            listening = false
            epoch++
            blocks.clear()
          })),
          Effect.catchCause((cause) => {
            if (stopLogged) return Effect.void
            stopLogged = true
            return Effect.logWarning("rate limit: the invalidation listener stopped; local blocks are off until it is back", cause)
          }),
          Effect.andThen(Effect.sleep(Duration.seconds(1))),
          Effect.forever
        )
        yield* Effect.forkScoped(listen)
      }

      const blocked = Effect.fnUntraced(function*(prefix: string, secret: string) {
        if (!listening || !blocks.has(prefix)) return Option.none<number>()
        // Let the I/O that already arrived run first, then the listener's
        // fiber, which that I/O woke: an invalidation that arrived with this
        // request (a plan change committed before it was sent) is applied
        // before the block is read.
        yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
        yield* Effect.yieldNow
        const block = blocks.get(prefix)
        if (block === undefined) return Option.none<number>()
        const now = yield* nowMicros
        if (block.until <= now) {
          blocks.delete(prefix)
          return Option.none<number>()
        }
        // Another secret under this prefix is the database's to answer (401).
        return ApiKey.secretMatches(secret, block.secretHash) ? Option.some(block.until - now) : Option.none<number>()
      })

      const limit = Option.isSome(window)
        ? {
          window: window.value,
          ...(Option.isSome(options.budgets) ? { budgets: options.budgets.value } : {})
        }
        : undefined
      // Every request that arrives in the same tick joins one batch; the
      // default delay is one `yieldNow` (no timer), so a lone request waits
      // for nothing but the I/O already queued. A failure of the statement
      // (a defect) completes every request of the batch with it.
      const resolver = RequestResolver.make<Admit>((entries) =>
        Effect.gen(function*() {
          if (limit === undefined) return
          if (entries.length === 1) {
            const [{ request }] = entries
            const answer = yield* store.admit(request.prefix, request.secretHash, {
              ...limit,
              ...(request.at === undefined ? {} : { at: request.at })
            })
            entries[0].completeUnsafe(Exit.succeed(answer))
            return
          }
          const answers = yield* store.admitAll(
            entries.map(({ request }) => ({ prefix: request.prefix, secretHash: request.secretHash, at: request.at })),
            limit
          )
          for (const [i, entry] of entries.entries()) entry.completeUnsafe(Exit.succeed(answers[i] ?? Option.none()))
        })
      ).pipe(RequestResolver.batchN(options.maxBatch))

      const remember = (prefix: string, block: Block) => {
        blocks.delete(prefix)
        if (blocks.size >= options.maxLocalBlocks) {
          const oldest = blocks.keys().next()
          if (oldest.done !== true) blocks.delete(oldest.value)
        }
        blocks.set(prefix, block)
      }

      const admit = Option.match(window, {
        onNone: () =>
          // RATE_LIMIT_WINDOW=off: the plain lookup, nothing counted.
          Effect.fnUntraced(function*(prefix: string, secretHash: Uint8Array) {
            const found = yield* keys.findByPrefix(prefix)
            return Option.map(found, (key): Admission => ({
              key: { ...key, budget: Plans.budgetPerMinute(key.plan), expires_in: null },
              outcome: ApiKey.hashMatches(secretHash, key.secret_hash) && !key.revoked && !key.expired
                ? { _tag: "Accepted" }
                : { _tag: "NotCounted" }
            }))
          }),
        onSome: () =>
          Effect.fnUntraced(function*(prefix: string, secretHash: Uint8Array) {
            const startedIn = epoch
            const at = Option.isSome(options.clock) ? yield* options.clock.value : undefined
            const admission = yield* Effect.request(new Admit({ prefix, secretHash, at }), resolver)
            if (Option.isSome(admission) && listening && epoch === startedIn) {
              const { key, outcome } = admission.value
              if (outcome._tag === "Rejected") {
                // Never past the key's expiry: from then on it is a 401.
                const wait = key.expires_in === null ? outcome.wait : Math.min(outcome.wait, key.expires_in)
                if (wait > 0) {
                  remember(prefix, { schoolId: key.school_id, secretHash, until: (yield* nowMicros) + wait })
                }
              }
            }
            return admission
          })
      })

      return RateLimiter.of({
        blocked,
        holdsBlock: (prefix) => listening && blocks.has(prefix),
        admit,
        forgetSchool: (schoolId) => Effect.sync(() => invalidate(schoolId))
      })
    })
  )

  static readonly layer = RateLimiter.layerNoDeps.pipe(
    Layer.provide([RateLimits.layer, ApiKeys.layer, Notifications.layer])
  )
}
