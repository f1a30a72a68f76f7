/**
 * Password checks of the back office, per API process (docs/decisions.md
 * "Back-office sessions"): the sign-in and the password change both go
 * through here.
 * - **Turns.** The attempts of one client address take turns: one at a time
 *   in this process, in arrival order. Each reads the throttle state that
 *   the one before it left (`LoginThrottle`), so a burst of wrong guesses
 *   gets its free ones and then waits, a burst of right ones is all
 *   admitted, and one address never holds more than one place in the queue
 *   for a hash slot.
 * - **The throttle.** An attempt whose pair or address must wait is refused
 *   (429) and the refusal counts against its address.
 * - **Hash slots.** At most `MAX_CHECKS` scrypt computations run at once; the
 *   queue for them is first come, first served, and holds at most one
 *   attempt per address, so a spray from one address costs that address
 *   its own time and the owner waits behind one check per busy address.
 * A wait for a turn or a slot that runs out is 429 with Retry-After 1, not
 * counted against the address: no password was checked.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Semaphore from "effect/Semaphore"
import * as Errors from "@school/domain/BackOfficeErrors"
import * as LoginThrottle from "@school/domain/LoginThrottle"
import { retryAfterSeconds } from "@school/domain/RateLimit"
import { Sessions } from "@school/persistence/Sessions"
import * as Metrics from "../../Metrics.ts"

/** scrypt computations running at once in this process, at most. */
export const MAX_CHECKS = 4
/** How long an attempt waits for a hash slot before it is refused. */
export const CHECK_WAIT = Duration.seconds(2)
/** How long an attempt waits for the attempts of its address ahead of it before it is refused. */
export const TURN_WAIT = Duration.seconds(10)

const tooManyAttempts = (waitMs: number, why: string) =>
  Effect.gen(function*() {
    const retryAfter = retryAfterSeconds(waitMs * 1000)
    yield* Metrics.rateLimitRejected("sign_in")
    return yield* new Errors.TooManyAttempts({
      message: `Too many ${why}. Retry after ${retryAfter} second${retryAfter === 1 ? "" : "s"}.`,
      headers: { "retry-after": retryAfter }
    })
  })

const busy = () => tooManyAttempts(1_000, "sign-ins at the moment")

export class SignInGuard extends Context.Service<SignInGuard, {
  /**
   * Runs `attempt` for (e-mail, client address) in the address's turn, after
   * the throttle admits it. `attempt` checks the password (inside
   * `hashing`): None when it is wrong, recorded as a failure of the pair and
   * the address; Some clears the pair's failures.
   */
  readonly guarded: <A, E, R>(
    email: string,
    client: string,
    attempt: Effect.Effect<Option.Option<A>, E, R>
  ) => Effect.Effect<Option.Option<A>, E | Errors.TooManyAttempts, R>
  /** Runs a password hash computation in one of the `MAX_CHECKS` slots. */
  readonly hashing: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | Errors.TooManyAttempts, R>
}>()("school/api/SignInGuard") {
  static readonly layer = Layer.effect(
    SignInGuard,
    Effect.gen(function*() {
      const sessions = yield* Sessions
      const { interval } = LoginThrottle.ADDRESS_BUDGET
      const slots = yield* Semaphore.make(MAX_CHECKS)
      // Client address → its one-at-a-time lock and how many attempts hold or wait for it.
      const turns = new Map<string, { readonly lock: Semaphore.Semaphore; users: number }>()

      const inTurn = <A, E, R>(client: string, self: Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            const entry = turns.get(client) ?? { lock: Semaphore.makeUnsafe(1), users: 0 }
            entry.users++
            turns.set(client, entry)
            return entry
          }),
          (entry) =>
            Effect.gen(function*() {
              const taken = yield* Semaphore.take(entry.lock, 1).pipe(Effect.timeoutOption(TURN_WAIT))
              if (Option.isNone(taken)) return yield* busy()
              return yield* self.pipe(Effect.ensuring(Semaphore.release(entry.lock, 1)))
            }),
          (entry) =>
            Effect.sync(() => {
              entry.users--
              if (entry.users === 0) turns.delete(client)
            })
        )

      const admitted = Effect.fnUntraced(function*(email: string, client: string) {
        const state = yield* sessions.throttle(email, client)
        const pair = state.failures === null || state.last_failed_at_ms === null
          ? undefined
          : { failures: state.failures, lastFailedAtMs: state.last_failed_at_ms }
        const pairWait = LoginThrottle.pairWaitMs(pair, state.now_ms)
        const wait = LoginThrottle.waitMs({ pair, address: state.address_ms, nowMs: state.now_ms })
        if (wait === 0) return
        yield* sessions.recordRefusal(client, interval)
        return yield* tooManyAttempts(wait, pairWait === wait ? "failed sign-ins for this e-mail" : "failed sign-ins from this address")
      })

      return SignInGuard.of({
        guarded: (email, client, attempt) =>
          inTurn(
            client,
            Effect.gen(function*() {
              yield* admitted(email, client)
              const outcome = yield* attempt
              yield* Option.isSome(outcome)
                ? sessions.clearFailures(email, client)
                : sessions.recordFailure(email, client, interval, LoginThrottle.FORGET_AFTER_MS)
              return outcome
            })
          ),
        hashing: (self) =>
          Effect.gen(function*() {
            const permit = yield* Semaphore.take(slots, 1).pipe(Effect.timeoutOption(CHECK_WAIT))
            if (Option.isNone(permit)) return yield* busy()
            return yield* self.pipe(Effect.ensuring(Semaphore.release(slots, 1)))
          })
      })
    })
  )
}
