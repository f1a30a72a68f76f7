/**
 * The back office's sign-in throttle as a pure rule (docs/decisions.md
 * "Back-office sessions"). Failures are counted per client address, so an
 * address that fails holds back itself and nobody else:
 * - per (e-mail, address): the first `Sessions.FREE_FAILURES` are free, then
 *   the next attempt waits `Sessions.loginDelayMs` after the last failure
 *   (1 s doubling up to 60 s); a correct password forgets them, and they are
 *   forgotten `FORGET_AFTER_MS` after the last one;
 * - per address across e-mails (password spraying): the leaky bucket of the
 *   public API's failed-authentication guard (`AuthFailures`, here in
 *   milliseconds): `ADDRESS_BUDGET.burst` failures at once, then one per
 *   `ADDRESS_BUDGET.interval`.
 * A refused attempt (429) counts against its address as a failure would, so
 * polling inside the wait keeps the poller out rather than making the wait
 * cheaper. The attempts of one address take turns (one password check at a
 * time per API process, apps/api/src/http/backoffice/SignInGuard.ts), so each
 * reads the failures of those before it: concurrency buys an attacker no
 * extra guesses, and concurrent correct sign-ins are all admitted, because a
 * correct password never counts.
 */
import * as AuthFailures from "./AuthFailures.ts"
import * as Sessions from "./Sessions.ts"

/** 30 failed sign-ins from one address at once, then one every 20 s (milliseconds). */
export const ADDRESS_BUDGET: AuthFailures.Budget = { burst: 30, interval: 20_000 }

/** A pair's failures are forgotten this long after the last one (also when its rows are purged). */
export const FORGET_AFTER_MS = 15 * 60_000

/** The failures of one (e-mail, address) pair. */
export interface PairState {
  readonly failures: number
  readonly lastFailedAtMs: number
}

/** The state of one address: the theoretical arrival time of its next failure (ms); 0 or past: idle. */
export type AddressState = AuthFailures.State

/** What the throttle knows of an attempt when it arrives. */
export interface Attempt {
  /** The pair's failures; undefined when there are none (or they are forgotten). */
  readonly pair: PairState | undefined
  readonly address: AddressState
  readonly nowMs: number
}

/** Milliseconds the pair must still wait (0: it may try now). */
export const pairWaitMs = (pair: PairState | undefined, nowMs: number): number =>
  pair === undefined || nowMs - pair.lastFailedAtMs >= FORGET_AFTER_MS
    ? 0
    : Sessions.loginWaitMs(pair.failures, pair.lastFailedAtMs, nowMs)

/** Milliseconds the address must still wait (0: it may try now). */
export const addressWaitMs = (address: AddressState, nowMs: number): number =>
  AuthFailures.wait(address, nowMs, ADDRESS_BUDGET)

/** Milliseconds the attempt must wait; 0: it is admitted and its password is checked. */
export const waitMs = (attempt: Attempt): number =>
  Math.max(pairWaitMs(attempt.pair, attempt.nowMs), addressWaitMs(attempt.address, attempt.nowMs))

/** The address after a failure or a refusal at `nowMs`. */
export const addressAfterFailure = (address: AddressState, nowMs: number): AddressState =>
  AuthFailures.recordFailure(address, nowMs, ADDRESS_BUDGET)

/** The pair after a wrong password at `nowMs`. */
export const pairAfterFailure = (pair: PairState | undefined, nowMs: number): PairState => ({
  failures: pair === undefined || nowMs - pair.lastFailedAtMs >= FORGET_AFTER_MS ? 1 : pair.failures + 1,
  lastFailedAtMs: nowMs
})

/** Whether an address has nothing to remember (its bucket is full again). */
export const isIdle = (address: AddressState, nowMs: number): boolean => AuthFailures.isIdle(address, nowMs)
