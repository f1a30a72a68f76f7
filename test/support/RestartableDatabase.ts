/**
 * An embedded PostgreSQL a test can stop and start again, on the same data
 * directory and port, to take the database away under running processes
 * and bring it back (docs/operations.md "Database away"). Each `start` runs
 * the server in a scope of its own, forked from the test's, so the test
 * stops it with `stop` and the test's scope stops whatever is left; the
 * data directory is removed with the test's scope.
 */
import { embedded } from "@school/local-postgres/EmbeddedPostgres"
import { freePort } from "@school/runtime/Ports"
import { Effect, Exit, Scope } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { embeddedBinaries } from "./TestPostgres.ts"

export interface RunningDatabase {
  readonly url: string
  /** Stops this server (its data stays for the next `start`). */
  readonly stop: Effect.Effect<void>
}

/** A data directory under the system's temporary directory (`prefix…`) and a port, kept across restarts. */
export const restartableDatabase = (prefix: string) =>
  Effect.gen(function*() {
    const dataDir = yield* Effect.acquireRelease(
      Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), prefix))),
      (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
    )
    const port = yield* freePort
    // The binaries of the run's own server (TEST_POSTGRES_VERSION, docs/operations.md "PostgreSQL versions").
    const binaries = yield* Effect.orDie(embeddedBinaries)
    const outer = yield* Scope.Scope
    const start: Effect.Effect<RunningDatabase> = Effect.gen(function*() {
      const scope = yield* Scope.fork(outer)
      const database = yield* embedded({ dataDir, persistent: true, durable: false, port, binaries }).pipe(
        Scope.provide(scope),
        Effect.orDie
      )
      return { url: database.url, stop: Scope.close(scope, Exit.void) }
    })
    return { start }
  })
