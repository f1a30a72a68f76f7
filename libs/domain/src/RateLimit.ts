/**
 * The per-key sliding-window limiter's state and its pure transition
 * (docs/integrators.md "Limits", docs/decisions.md "Rate limits"). `libs/persistence` runs the same transition in SQL
 * (migration `0200_rate_limits`) so every API
 * process shares one state per key; the property tests hold both to the
 * reference model, a plain list of accepted timestamps.
 *
 * Semantics. Times are integer microseconds on one clock (the database's).
 * A request at `t` is accepted when fewer than `budget` requests were accepted
 * in the window `(t - window, t]`; so no half-open interval of length
 * `window` ever holds more than `budget` accepted requests. A rejected request
 * changes nothing (docs/integrators.md "Limits": a 429 does not count). When rejected, the wait
 * is the time until the oldest of the last `budget` accepted requests leaves
 * the window: a request sent after that wait is accepted, a request sent any
 * earlier is not (unless the budget grows meanwhile).
 *
 * State. A ring of the last `C` accepted timestamps and the index of its
 * oldest slot, where `C` is the budget in force at the last acceptance. Every
 * request accepted inside the current window is in the ring: the last
 * acceptance saw fewer than `C` in its window, and nothing was accepted since.
 * Hence the decision is exact even when the plan (the budget) changes between
 * requests: with `budget <= C` the request is rejected exactly when the
 * `budget`-th newest timestamp is still in the window; with `budget > C` the
 * window holds at most `C` and the request is accepted. An acceptance under an
 * unchanged budget writes one slot (O(1)); only an acceptance under a new
 * budget re-lays the ring to the new size (O(budget), once per plan change).
 * A key costs O(budget) bytes: one timestamp per request of its budget.
 *
 * Times that go backwards (two processes racing for one key) are taken as the
 * newest accepted time, so the ring stays ordered and the guarantee holds in
 * the order in which the database serialized the requests.
 */

import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

/** The budget window (docs/integrators.md "Limits"): 60 seconds (RATE_LIMIT_WINDOW's default; tests shorten it). */
export const WINDOW: Duration.Duration = Duration.minutes(1)

/** An empty slot: older than any window of a clock counted from the Unix epoch. */
export const EMPTY = 0

export interface State {
  /** Accepted timestamps (µs), oldest at `head`, newest just before it; `EMPTY` where none yet. */
  readonly ring: ReadonlyArray<number>
  /** Index of the oldest slot, which the next acceptance under the same budget overwrites. */
  readonly head: number
}

/** A key that has never been accepted. */
export const initial: State = { ring: [], head: 0 }

export type Decision =
  | { readonly _tag: "Accepted"; readonly at: number; readonly state: State }
  | { readonly _tag: "Rejected"; readonly at: number; readonly wait: number }

const mod = (a: number, n: number): number => ((a % n) + n) % n

/** The `n`-th newest accepted timestamp (1 = newest), `n <= ring.length`; `EMPTY` for an empty ring. */
export const nthNewest = (state: State, n: number): number =>
  state.ring.length === 0 ? EMPTY : state.ring[mod(state.head - n, state.ring.length)] ?? EMPTY

/** The request's time as the limiter counts it: never before the newest accepted one. */
export const effectiveTime = (state: State, at: number): number => Math.max(at, nthNewest(state, 1))

/**
 * Microseconds until a request would be accepted, 0 when it is accepted at
 * `at`. The SQL function `rate_limit_wait` is the same formula.
 */
export const wait = (state: State, at: number, budget: number, window: number): number =>
  budget > state.ring.length
    ? 0
    : Math.max(0, nthNewest(state, budget) + window - effectiveTime(state, at))

/** The state after accepting a request at `at` under `budget` (`rate_limit_ring` / `rate_limit_head` in SQL). */
export const record = (state: State, at: number, budget: number): State => {
  const now = effectiveTime(state, at)
  const size = state.ring.length
  if (size === budget) {
    const ring = state.ring.slice()
    ring[state.head] = now
    return { ring, head: (state.head + 1) % budget }
  }
  // The budget changed since the last acceptance: keep the newest
  // `budget - 1` timestamps (all the window can hold besides this one).
  const ring: Array<number> = []
  for (let slot = 1; slot < budget; slot++) {
    const n = budget - slot
    ring.push(n <= size ? nthNewest(state, n) : EMPTY)
  }
  ring.push(now)
  return { ring, head: 0 }
}

/** Decides one request of a key at `at` (µs) against `budget` requests per `window` (µs). */
export const take = (state: State, at: number, budget: number, window: number): Decision => {
  const waitFor = wait(state, at, budget, window)
  const now = effectiveTime(state, at)
  return waitFor === 0
    ? { _tag: "Accepted", at: now, state: record(state, at, budget) }
    : { _tag: "Rejected", at: now, wait: waitFor }
}

/**
 * The `Retry-After` value for a wait (docs/integrators.md "Limits": the whole
 * number of seconds):
 * whole seconds, rounded up so that waiting that long is enough, at least 1.
 */
export const retryAfterSeconds = (waitMicros: number): number => Math.max(1, Math.ceil(waitMicros / 1_000_000))

/**
 * The `Retry-After` header of every 429 (docs/integrators.md "Limits"): whole seconds, at least 1.
 * The contract declares it, so OpenAPI documents it as the header's text
 * (digits, the way it documents every integer HTTP parameter) and the typed
 * client decodes it to a number.
 */
export const RetryAfter = Schema.String.check(
  Schema.isPattern(/^[1-9][0-9]*$/u, {
    description: "Whole seconds (at least 1) to wait before repeating the same request.",
    message: "Expected whole seconds, at least 1"
  })
).pipe(
  Schema.decodeTo(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
    SchemaTransformation.transform({ decode: Number, encode: String })
  )
)
