/**
 * The arithmetic of a run: latencies recorded at full precision (autocannon's
 * own histogram keeps whole milliseconds, too coarse for sub-millisecond
 * servers), percentiles, medians.
 */

/** Latencies in milliseconds, appended as responses arrive. */
export class LatencyRecorder {
  private values = new Float64Array(1 << 16)
  private size = 0

  add(ms: number): void {
    if (this.size === this.values.length) {
      const grown = new Float64Array(this.values.length * 2)
      grown.set(this.values)
      this.values = grown
    }
    this.values[this.size++] = ms
  }

  get count(): number {
    return this.size
  }

  /** p50 and p99 in milliseconds (NaN when nothing was recorded). */
  percentiles(): { readonly p50: number; readonly p95: number; readonly p99: number } {
    const sorted = this.values.slice(0, this.size).sort()
    return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) }
  }
}

/** Nearest-rank percentile of sorted values. */
export const percentile = (sorted: ArrayLike<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p / 100 * sorted.length) - 1))
  return sorted[rank] ?? 0
}

/** The median of the finite values (NaN when there is none). */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** What one round of load measured. */
export interface RoundFigures {
  /** Responses received (any status). */
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  /** Milliseconds; NaN (null in JSON) when no response came back. */
  readonly p50: number
  /** Not in the table; a scenario that reports it reads it from its rounds (e.g. auth-failure-flood). */
  readonly p95?: number
  readonly p99: number
  /** Responses outside 2xx, and failures without a response (resets, time-outs). */
  readonly non2xx: number
  readonly errors: number
  readonly statuses: Readonly<Record<string, number>>
  /** What the server's heap did during the round, where the server measures it (bench/lib/HeapProbe.ts). */
  readonly heap?: HeapFigures | undefined
}

/** A server's V8 heap during a round (bench/lib/HeapProbe.ts). */
export interface HeapFigures {
  /** Bytes allocated on V8's heap (not Buffers' memory outside it). */
  readonly allocatedBytes: number
  /** The GCs' pauses of the main thread, ms. */
  readonly gcMs: number
  readonly gcs: number
  /** Of which full (mark-compact) collections. */
  readonly fullGcs: number
  readonly maxPauseMs: number
}

export const round = (value: number, digits = 2): number => {
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}
