/**
 * One test run: every `test/**\/*.test.ts` file, files in parallel, against
 * ONE PostgreSQL started by the global setup (docs/operators.md "npm test"); each file
 * gets its own database from `test/support/TestDatabase.ts`.
 */
import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    fileParallelism: true,
    // Files mostly wait on PostgreSQL and on the processes they spawn: at
    // least two at a time even on a 2-CPU machine (vitest's default is CPUs - 1).
    maxWorkers: Math.max(2, availableParallelism()),
    // Starting PostgreSQL (or pulling a container image) and creating a
    // database per file happen in hooks.
    hookTimeout: 120_000,
    testTimeout: 60_000
  }
})
