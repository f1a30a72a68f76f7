/**
 * The database going away, as the dispatcher's pieces report it
 * (docs/operations.md "Database away"): the first failure of any step
 * is one ERROR line, the return one INFO line, and nothing between; each
 * piece keeps trying on its own schedule meanwhile. A database that answers
 * the connection with no (the login, the database name, too many clients,
 * starting up: libs/runtime/src/DatabaseStatus.ts `refusalOf`) says so in
 * its line, in the server's words; a change from one reason to another is a
 * new line. `up` feeds /health/ready.
 */
import * as DatabaseStatus from "@school/runtime/DatabaseStatus"
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

/** Why the database is down: away, or the reason it refused the connection. */
type Down = "away" | DatabaseStatus.Refusal

export const make: Effect.Effect<Outage> = Effect.map(Ref.make<Down | undefined>(undefined), (down) => ({
  failed: (step) => (error) => {
    const refused = DatabaseStatus.refusalOf(error)
    return Effect.flatMap(Ref.getAndSet(down, refused?.refusal ?? "away"), (was) => {
      if (was === (refused?.refusal ?? "away")) return Effect.void
      return refused === undefined
        ? Effect.logError("dispatcher: the database does not answer; retrying every second", { step, error: error.message })
        : Effect.logError(`dispatcher: ${DatabaseStatus.describe({ _tag: "Refused", ...refused })}; retrying every second`, { step })
    })
  },
  answered: Effect.flatMap(Ref.getAndSet(down, undefined), (was) =>
    was === undefined ? Effect.void : Effect.logInfo("dispatcher: the database answers again; resuming")),
  up: Effect.map(Ref.get(down), (was) => was === undefined)
}))
