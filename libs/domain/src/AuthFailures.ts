/**
 * The budget of failed authentications per client address (docs/decisions.md
 * "Rate limits", "Authentication and scopes"): the pure rule behind the API
 * process's guard (`apps/api/src/AuthFailureGuard.ts`), and how an address is
 * grouped (an IPv6 client owns its whole /64).
 *
 * The rule is a leaky bucket written as its theoretical arrival time (GCRA):
 * an address may send `burst` credentials that fail at once, then one per
 * `interval`. Each failure the database reports moves the state one
 * `interval` later; while the state is more than `burst - 1` intervals ahead
 * of now, the address is blocked: a credential the guard does not already
 * know is answered without asking the database. A blocked request changes
 * nothing (like a 429 of the per-key limit, it costs the address nothing
 * more), so an address that stops failing is let through again after at most
 * one `interval` (plus one per failure that was already in flight when the
 * block began).
 *
 * What it bounds: when each lookup's failure is recorded before the next
 * check (one request at a time), no interval of length L lets more than
 * `burst + floor(L / interval)` failing lookups through. A failure every
 * `interval` or slower is never blocked.
 *
 * State is one number per address (µs); an address whose state is not ahead
 * of now is the same as one never seen, and can be forgotten.
 */
import { isIPv4, isIPv6 } from "node:net"

export interface Budget {
  /** Failures an idle address may have at once. */
  readonly burst: number
  /** µs per further failure: the rate at which the bucket refills. */
  readonly interval: number
}

/** 30 failed authentications at once, then one every 2 s (30 per minute). */
export const DEFAULT_BUDGET: Budget = { burst: 30, interval: 2_000_000 }

/** The theoretical arrival time of the next failure, µs; any value not ahead of now means "idle". */
export type State = number

/** An address never seen. */
export const initial: State = 0

/** µs until the address may have a credential looked up again; 0: it may now. */
export const wait = (state: State, now: number, budget: Budget): number =>
  Math.max(0, state - now - (budget.burst - 1) * budget.interval)

/** The state after a lookup from the address failed at `now`. */
export const recordFailure = (state: State, now: number, budget: Budget): State =>
  Math.max(state, now) + budget.interval

/** Whether the address is back to a full bucket (nothing to remember). */
export const isIdle = (state: State, now: number): boolean => state <= now

/**
 * The client an address stands for: an IPv4 address as it is (an
 * IPv4-mapped IPv6 address, `::ffff:a.b.c.d`, is its IPv4 address); an IPv6
 * address by its /64, the smallest block one subscriber is given, so that
 * an attacker cannot get a fresh budget from each of its 2^64 addresses.
 * Anything else (no address) is one client, `unknown`.
 */
export const clientOf = (address: string | undefined): string => {
  if (address === undefined) return "unknown"
  const zoneless = address.split("%")[0] ?? address
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(zoneless)
  if (mapped !== null && isIPv4(mapped[1]!)) return mapped[1]!
  if (isIPv4(zoneless)) return zoneless
  if (!isIPv6(zoneless)) return "unknown"
  return `${expandIPv6(zoneless).slice(0, 4).join(":")}::/64`
}

/** The eight hextets of an IPv6 address (lower case, no leading zeros); a trailing dotted quad counts as two. */
const expandIPv6 = (address: string): ReadonlyArray<string> => {
  const [head = "", tail] = address.toLowerCase().split("::")
  const words = (text: string | undefined): Array<string> => {
    if (text === undefined || text === "") return []
    return text.split(":").flatMap((word) => {
      if (!word.includes(".")) return [word]
      const [a = 0, b = 0, c = 0, d = 0] = word.split(".").map(Number)
      return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)]
    })
  }
  const left = words(head)
  const right = words(tail)
  const middle = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => "0")
  return [...left, ...middle, ...right].map((word) => Number.parseInt(word, 16).toString(16))
}
