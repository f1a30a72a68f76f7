/** Where the scripts the bench starts live (absolute, whatever the working directory). */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const at = (relative: string) => fileURLToPath(new URL(relative, import.meta.url))

export const REPO_ROOT = at("../../")
export const PACKAGE_JSON = at("../../package.json")
export const PEER = at("../peer/server.ts")
export const SQL_ONLY = at("../anchors/sql-only.ts")
export const BARE_HTTPAPI = at("../anchors/bare-httpapi.ts")
export const BARE_HTTPAPI_1RT = at("../anchors/bare-httpapi-1rt.ts")
export const RAW_HTTP = at("../anchors/raw-http.ts")
export const GRAPHILE_WORKER = at("../peer/graphile-worker.ts")
export const BARE_DISPATCH = at("../anchors/bare-dispatch.ts")
export const FULL_MIDDLEWARE = at("../servers/full-middleware.ts")
export const LADDER = at("../servers/ladder.ts")
/** Preloaded (`--import`) into a server whose allocation and GC a scenario measures. */
export const HEAP_PROBE = at("./HeapProbe.ts")
export const RESULTS_DIR = at("../results/")

/**
 * How an npm script starts its process (`[exec] [env NAME=value…] node <flags> <main>`): the
 * environment it sets, the flags and the entry point, absolute. The bench runs a process the way
 * `npm run <script>` (and the container) runs it; a script of another shape is an error, not a
 * silent run without its flags or environment.
 */
export const scriptCommand = (script: string): {
  readonly env: Readonly<Record<string, string>>
  readonly nodeFlags: ReadonlyArray<string>
  readonly main: string
} => {
  const scripts: Record<string, string> = JSON.parse(readFileSync(PACKAGE_JSON, "utf8")).scripts ?? {}
  const all = (scripts[script] ?? "").trim().split(/\s+/).filter((word) => word !== "exec")
  // `env` and its NAME=value words, up to the command (none found: the script is all assignments).
  const commandAt = all[0] === "env" ? all.findIndex((word, i) => i > 0 && !word.includes("=")) : 0
  const assignments = commandAt > 0 ? all.slice(1, commandAt) : []
  const words = commandAt === -1 ? [] : all.slice(commandAt)
  const mainAt = words.findIndex((word, i) => i > 0 && !word.startsWith("-"))
  if (words[0] !== "node" || mainAt !== words.length - 1) {
    throw new Error(`package.json script "${script}" is not "[exec] [env NAME=value…] node <flags> <main>": ${scripts[script]}`)
  }
  const env = Object.fromEntries(assignments.map((word) => {
    const at = word.indexOf("=")
    return [word.slice(0, at), word.slice(at + 1)]
  }))
  return { env, nodeFlags: words.slice(1, mainAt), main: at(`../../${words[mainAt]}`) }
}
