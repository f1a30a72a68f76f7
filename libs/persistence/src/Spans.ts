/**
 * A repository method that is not a generator, as a named span boundary
 * `<Repository>.<method>` (docs/development.md "libs/persistence",
 * docs/operations.md "Traces"), the way `Effect.fn("<Repository>.<method>")`
 * names a generator: the method's effect is built and run inside the span,
 * so an outbox event it writes carries this span's `traceparent`
 * (Outbox.ts `currentTraceparent`). The span's options are made once, when
 * the repository is built, not at every call. With tracing off the span is
 * a no-op one (libs/runtime/src/Tracing.ts).
 */
import * as Effect from "effect/Effect"

export const named = <Args extends ReadonlyArray<unknown>, A, E, R>(
  name: string,
  method: (...args: Args) => Effect.Effect<A, E, R>
): (...args: Args) => Effect.Effect<A, E, R> => {
  const span = Effect.withSpan(name)
  return (...args) => span(Effect.suspend(() => method(...args)))
}
