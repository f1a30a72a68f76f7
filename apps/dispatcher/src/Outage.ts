/**
 * The database going away, as the dispatcher's pieces report it
 * (docs/operations.md "Database away"): the first failure of any step
 * is one ERROR line, the return one INFO line, and nothing between; each
 * piece keeps trying on its own schedule meanwhile. `up` feeds
 * /health/ready.
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import type { SqlError } from "effect/sql"

export interface Outage {
  /** The step failed: logs the outage if it is news. */
  readonly failed: (step: string) => (error: SqlError.SqlError) => Effect.Effect<void>
  /** A step reached the database: logs the return if it is news. */
  readonly answered: Effect.Effect<void>
  /** Whether the last step reached the database. */
  readonly up: Effect.Effect<boolean>
}

export const make: Effect.Effect<Outage> = Effect.map(Ref.make(true), (up) => ({
  failed: (step) => (error) =>
    Effect.flatMap(Ref.getAndSet(up, false), (was) =>
      was
        ? Effect.logError("dispatcher: the database does not answer; retrying every second", { step, error: error.message })
        : Effect.void),
  answered: Effect.flatMap(Ref.getAndSet(up, true), (was) =>
    was ? Effect.void : Effect.logInfo("dispatcher: the database answers again; resuming")),
  up: Ref.get(up)
}))
