/**
 * Starts the one PostgreSQL server of a test run (`TestPostgres.ts`:
 * TEST_DATABASE_URL, else testcontainers when Docker answers, else embedded;
 * TEST_POSTGRES_VERSION=15 the embedded 15), says on stderr which one and
 * its version, and hands its superuser URL to the test files as
 * `adminDatabaseUrl` (vitest `provide` / `inject`). Stops it when the run
 * ends.
 */
import { versionName } from "@school/runtime/DatabaseConnection"
import { Effect, Exit, Scope } from "effect"
import type { TestProject } from "vitest/node"
import { forTests } from "./TestPostgres.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of the run's PostgreSQL server (may CREATE DATABASE). */
    readonly adminDatabaseUrl: string
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const scope = Effect.runSync(Scope.make())
  const stop = () => Effect.runPromise(Scope.close(scope, Exit.void))
  try {
    const database = await Effect.runPromise(forTests.pipe(Scope.provide(scope)))
    process.stderr.write(`tests on PostgreSQL ${versionName(database.version)} (${database.origin})\n`)
    project.provide("adminDatabaseUrl", database.url)
  } catch (error) {
    await stop()
    throw error
  }
  return stop
}
