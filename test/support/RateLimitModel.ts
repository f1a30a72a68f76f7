/**
 * The reference model of the per-key limiter (docs/integrators.md "Limits", docs/decisions.md
 * "Rate limits"), written the obvious way: the list of every accepted timestamp.
 * A request at `at` is accepted when fewer than `budget` accepted timestamps
 * lie in `(at - window, at]`; otherwise the wait is the time until the
 * `budget`-th newest of them leaves the window. Times must not decrease.
 *
 * The property tests hold the pure transition (`@school/domain/RateLimit`)
 * and its SQL twin (migration `0200_rate_limits`) to this model.
 */
import { Schema } from "effect"

export interface Request {
  readonly at: number
  readonly budget: number
}

export type Outcome =
  | { readonly accepted: true }
  | { readonly accepted: false; readonly wait: number }

export const reference = (requests: ReadonlyArray<Request>, window: number): Array<Outcome> => {
  const accepted: Array<number> = []
  return requests.map(({ at, budget }): Outcome => {
    const inWindow = accepted.filter((time) => time > at - window)
    if (inWindow.length < budget) {
      accepted.push(at)
      return { accepted: true }
    }
    const oldestThatCounts = inWindow[inWindow.length - budget] ?? 0
    return { accepted: false, wait: oldestThatCounts + window - at }
  })
}

/** The window of the generated sequences: a minute, in microseconds. */
export const WINDOW = 60_000_000

const between = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

/**
 * Gaps between consecutive requests (µs): bursts (0), near-bursts, and gaps
 * up to half a window, so sequences both fill the window and slide it.
 */
export const Gap = Schema.Union([Schema.Literal(0), between(1, 1_000), between(0, WINDOW / 2)])

/** Budgets small enough that short sequences reach them; `between(1, 6)` per request models plan changes. */
export const Budget = between(1, 6)

/** Longest generated sequence; pass it as the check's `size` too, or most sequences come out short. */
export const SEQUENCE_MAX = 150

export const Sequence = <S extends Schema.Top>(item: S) => Schema.Array(item).check(Schema.isMaxLength(SEQUENCE_MAX))

/** Absolute times from gaps, starting one window after the epoch (the limiter's clock origin). */
export const timesFrom = (gaps: ReadonlyArray<number>): Array<number> => {
  let at = WINDOW
  return gaps.map((gap) => (at += gap))
}
