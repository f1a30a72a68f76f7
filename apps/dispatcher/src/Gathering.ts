/**
 * The gathering rule the fan-out and the recorder share (docs/decisions.md
 * "The webhook dispatcher"): after a batch of at least STREAM items that was
 * not full, the stream is steady, so the next batch waits until `gatherMs`
 * after this one began and takes what came meanwhile in one statement; after
 * a smaller batch (a trickle, or two that met by chance) or a full one (a
 * backlog) it goes at once.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/**
 * The least batch that starts gathering. Not two: at 200 events a second a
 * 10 ms window finds two, so a batch of two that met once by chance kept the
 * fan-out gathering, each window finding the next two, and every event waited
 * up to the window (docs/performance.md "Webhook dispatcher"). With three the
 * gathering holds itself only where a window finds three or more.
 */
export const STREAM = 3

/** The pause before the next batch, after one of `size` items (at most `full`) that began at `began` (ms). */
export const gatherAfter = (size: number, full: number, began: number, gatherMs: number): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const wait = size >= STREAM && size < full ? began + gatherMs - now : 0
    return wait > 0 ? Effect.sleep(Duration.millis(wait)) : Effect.void
  })
