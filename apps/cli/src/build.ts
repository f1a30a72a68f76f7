/**
 * `npm run build` (docs/operations.md "Commands"): the production bundles of the two long-running
 * processes, `apps/api/dist/main.js` and `apps/dispatcher/dist/main.js`.
 *
 * Why (docs/decisions.md "Compiled processes"): Node 24 runs our TypeScript by stripping its
 * types, and the stripper (a WebAssembly module) stays in memory for the life of the process,
 * about 20 MiB of a budget of 150 (docs/performance.md "Memory"). A bundle is plain JavaScript,
 * so the process never loads it. Each bundle holds our workspace modules (`@school/*` and
 * relative imports); every package from node_modules stays an import, loaded from node_modules
 * as before, so there is one copy of effect and of pg, and nothing of theirs is rewritten.
 *
 * `npm run start:api` and `npm run start:dispatcher` build first (their `pre` scripts), the
 * bench builds before it starts anything, and the image builds in a stage of its own. `npm start`
 * and the tests run the sources.
 */
import { build as rolldown } from "rolldown"
import { fileURLToPath } from "node:url"

const at = (relative: string) => fileURLToPath(new URL(relative, import.meta.url))

/** The processes that run bundled: their entry point and the bundle, from the repository root. */
export const BUNDLES = [
  { name: "api", entry: "apps/api/src/main.ts", output: "apps/api/dist/main.js" },
  { name: "dispatcher", entry: "apps/dispatcher/src/main.ts", output: "apps/dispatcher/dist/main.js" }
] as const

const REPO_ROOT = at("../../../")

/** Our own modules go into the bundle; a package from node_modules, or a Node builtin, stays an import. */
const isExternal = (id: string): boolean =>
  !(id.startsWith(".") || id.startsWith("/") || id.startsWith("@school/") || id.startsWith("\0"))

/** Builds every bundle; resolves with how long it took. */
export const buildBundles = async (): Promise<number> => {
  const started = performance.now()
  for (const bundle of BUNDLES) {
    await rolldown({
      input: REPO_ROOT + bundle.entry,
      platform: "node",
      external: isExternal,
      logLevel: "warn",
      // A warning is a build error: a bundle that builds with a warning may not run as its source does.
      onLog: (level, log) => {
        if (level === "warn") throw new Error(`${bundle.entry}: ${log.message}`)
      },
      // Written beside the bundle, read by no one at run time: for reading a stack trace by hand.
      output: { file: REPO_ROOT + bundle.output, format: "esm", sourcemap: true }
    })
  }
  return performance.now() - started
}

if (import.meta.main) {
  const ms = await buildBundles()
  process.stderr.write(`build: ${BUNDLES.map((b) => b.output).join(", ")} in ${Math.round(ms)} ms\n`)
}
