/**
 * The bounds of a school's webhook calls in the back office
 * (docs/back-office.md "Webhook limits"; docs/operations.md "Settings"):
 * how many subscriptions one school may have (WEBHOOK_MAX_SUBSCRIPTIONS),
 * and how many `test`, `resend` and `recover` calls one subscription accepts
 * in any minute (WEBHOOK_ACTIONS_PER_MINUTE), the second as a pure
 * transition over the times of the accepted calls. The database keeps those
 * times (`webhook_subscriptions.action_times`) and runs this transition
 * under the subscription's row lock (libs/persistence/src/Webhooks.ts).
 *
 * Semantics, the same as the public API's limiter (libs/domain/src/RateLimit.ts):
 * times are integer microseconds of one clock (the database's). A call at
 * `at` is accepted when fewer than `limit` calls were accepted in
 * `(at - window, at]`; a refused call changes nothing. When refused, the
 * wait is the time until the `limit`-th newest of those leaves the window: a
 * call sent after that wait is accepted, one sent a microsecond earlier is
 * not. Times that go backwards (a transaction that started before the one
 * it waited for) count as the newest accepted time, so no minute ever holds
 * more than `limit` accepted calls.
 */
import { retryAfterSeconds } from "./RateLimit.ts"

/** WEBHOOK_MAX_SUBSCRIPTIONS's default: subscriptions one school may have. */
export const DEFAULT_MAX_SUBSCRIPTIONS = 20

/** WEBHOOK_ACTIONS_PER_MINUTE's default: accepted `test`, `resend` and `recover` calls per subscription per minute. */
export const DEFAULT_ACTIONS_PER_MINUTE = 10

/** The window of the action limit: one minute, in microseconds. */
export const ACTION_WINDOW = 60_000_000

export type ActionDecision =
  /** The call is accepted at `at`; `times` are the times to keep (every one still in the window, and `at`). */
  | { readonly _tag: "Accepted"; readonly at: number; readonly times: ReadonlyArray<number> }
  /** The call is refused; a call `wait` microseconds later (`retryAfterSeconds` whole seconds) is accepted. */
  | { readonly _tag: "Refused"; readonly wait: number; readonly retryAfterSeconds: number }

/**
 * Decides one call at `at` (µs) of a subscription whose accepted calls were
 * at `times`, against `limit` calls per `window` (µs). Accepted, the times
 * to store: the ones still in the window, oldest first, and the call's own,
 * never more than `limit`.
 */
export const takeAction = (
  times: ReadonlyArray<number>,
  at: number,
  limit: number,
  window: number = ACTION_WINDOW
): ActionDecision => {
  const now = times.reduce((newest, time) => Math.max(newest, time), at)
  const counted = times.filter((time) => time > now - window).sort((x, y) => x - y)
  if (counted.length < limit) return { _tag: "Accepted", at: now, times: [...counted, now] }
  // The limit-th newest: once it leaves the window, limit - 1 remain.
  const leaving = counted[counted.length - limit] ?? now
  const wait = leaving + window - now
  return { _tag: "Refused", wait, retryAfterSeconds: retryAfterSeconds(wait) }
}
