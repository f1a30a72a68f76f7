/** Where the scripts the bench starts live (absolute, whatever the working directory). */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const at = (relative: string) => fileURLToPath(new URL(relative, import.meta.url))

export const REPO_ROOT = at("../../")
export const PACKAGE_JSON = at("../../package.json")
export const API_MAIN = at("../../apps/api/src/main.ts")
export const PEER = at("../peer/server.ts")
export const SQL_ONLY = at("../anchors/sql-only.ts")
export const BARE_HTTPAPI = at("../anchors/bare-httpapi.ts")
export const BARE_HTTPAPI_1RT = at("../anchors/bare-httpapi-1rt.ts")
export const RAW_HTTP = at("../anchors/raw-http.ts")
export const DISPATCHER_MAIN = at("../../apps/dispatcher/src/main.ts")
export const GRAPHILE_WORKER = at("../peer/graphile-worker.ts")
export const BARE_DISPATCH = at("../anchors/bare-dispatch.ts")
export const FULL_MIDDLEWARE = at("../servers/full-middleware.ts")
export const RESULTS_DIR = at("../results/")

/**
 * The Node flags an npm script gives its entry point (`[exec] node <flags> <main>`), so the
 * bench runs a process the way `npm run <script>` (and the container) runs it.
 */
export const scriptNodeFlags = (script: string, main: string): ReadonlyArray<string> => {
  const scripts: Record<string, string> = JSON.parse(readFileSync(PACKAGE_JSON, "utf8")).scripts ?? {}
  const words = (scripts[script] ?? "").trim().split(/\s+/).filter((word) => word !== "exec")
  const mainAt = words.indexOf(main)
  return words[0] === "node" && mainAt > 0 ? words.slice(1, mainAt) : []
}
