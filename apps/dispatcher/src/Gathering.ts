/**
 * The gathering rule the fan-out and the recorder share (docs/decisions.md
 * "The webhook dispatcher"): after a batch of more than one that was not
 * full, the stream is steady, so the next batch waits until `gatherMs` after
 * this one began and takes what came meanwhile in one statement; after a lone
 * item (a trickle) or a full batch (a backlog) it goes at once.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** The pause before the next batch, after one of `size` items (at most `full`) that began at `began` (ms). */
export const gatherAfter = (size: number, full: number, began: number, gatherMs: number): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const wait = size > 1 && size < full ? began + gatherMs - now : 0
    return wait > 0 ? Effect.sleep(Duration.millis(wait)) : Effect.void
  })
