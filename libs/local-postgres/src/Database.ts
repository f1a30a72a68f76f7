/**
 * Owns what a process knows of the database it uses (docs/operations.md
 * "Commands"): its superuser connection string and where it came from, and
 * the one-line error when the embedded one ends while the service runs. How
 * a connection string is shown, the check that a database answers and the
 * error when it cannot be started or reached are libs/runtime/src/DatabaseConnection.ts.
 */
import type * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { howItEnded } from "@school/runtime/ChildProcesses"

/** A running PostgreSQL server and how to reach it as a superuser. */
export interface Database {
  /** Connection string of the server's maintenance database, as a superuser (may CREATE DATABASE). */
  readonly url: string
  readonly origin: "url" | "embedded"
  /** The embedded server's data directory. */
  readonly dataDir?: string | undefined
  /** Why the data directory is not the default one, when it is not. */
  readonly dataDirNote?: string | undefined
  /**
   * For an embedded server this process started: completes if the server
   * ends before the scope that started it closes (killed, crashed), with how
   * it ended. Absent for a server someone else runs.
   */
  readonly exited?: Effect.Effect<{ readonly code: number | null; readonly signal: string | null }> | undefined
}

/**
 * The embedded PostgreSQL this process started ended on its own while the
 * service was running. Its own report: `runMain` prints `error: <message>`.
 */
export class DatabaseExited extends Schema.TaggedError<DatabaseExited>()("DatabaseExited", {
  dataDir: Schema.String,
  code: Schema.NullOr(Schema.Number),
  signal: Schema.NullOr(Schema.String)
}) {
  override readonly [Runtime.errorReported] = false
  override get message(): string {
    return `the embedded PostgreSQL (data in ${this.dataDir}) ${howItEnded(this.code, this.signal)}; stopped the API and the dispatcher`
  }
}

/** The given server: nothing to start or stop. */
export const fromUrl = (url: string): Database => ({ url, origin: "url" })
