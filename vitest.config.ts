/**
 * One test run: every `test/**\/*.test.ts` file, files in parallel, against
 * ONE PostgreSQL started by the global setup (docs/operations.md "npm test"); each file
 * gets its own database from `test/support/TestDatabase.ts`.
 *
 * Two groups, one after the other: first every file but the browser's, then
 * the web panel's browser tests (test/panel). A headless Chromium beside the
 * dispatcher's timing tests (commit→arrival bounds) on a 2-core machine made
 * those miss their bounds; after them, the browser has the machine to itself.
 */
import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

const BROWSER = "test/panel/**/*.test.ts"

export default defineConfig({
  test: {
    globalSetup: ["test/support/globalSetup.ts"],
    fileParallelism: true,
    // Files mostly wait on PostgreSQL and on the processes they spawn: at
    // least two at a time even on a 2-CPU machine (vitest's default is CPUs - 1).
    maxWorkers: Math.max(2, availableParallelism()),
    // Starting PostgreSQL (or pulling a container image) and creating a
    // database per file happen in hooks.
    hookTimeout: 120_000,
    testTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: "service", include: ["test/**/*.test.ts"], exclude: [BROWSER], sequence: { groupOrder: 0 } }
      },
      {
        extends: true,
        test: { name: "browser", include: [BROWSER], sequence: { groupOrder: 1 } }
      }
    ]
  }
})
