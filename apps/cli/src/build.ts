/**
 * `npm run build` (docs/operations.md "Commands"): the production bundles of the two long-running
 * processes, `apps/api/dist/main.js` and `apps/dispatcher/dist/main.js`.
 *
 * Why (docs/decisions.md "Compiled processes"): memory. Node 24 runs our TypeScript by stripping
 * its types, and the stripper (a WebAssembly module) stays in memory for the life of the process,
 * about 20 MiB; a bundle is plain JavaScript, so the process never loads it. And V8 keeps the
 * source text of every module it loads on its heap: effect's modules, loaded from node_modules,
 * were ~10 MB of it, most of it documentation comments, in a process with ~37 MB live. So each
 * bundle holds everything the process imports, our modules and the packages alike (one copy of
 * each, as from node_modules), without comments, in ASCII (a single character beyond it makes
 * V8 keep the whole text at two bytes a character); only Node's builtins stay imports. What
 * is imported lazily (`import()`: effect's Scalar page, built on its first request) stays lazy,
 * a chunk beside `main.js`. Beside them, `THIRD_PARTY_LICENSES.txt`: every package the bundle
 * carries, its version and its licence text, since the comments that held notices are gone and
 * what runs is the bundle, not the packages' own files (`thirdPartyLicenses`).
 *
 * `npm run start:api` and `npm run start:dispatcher` build first (their `pre` scripts), the
 * bench builds before it starts anything, and the image builds in a stage of its own. `npm start`
 * and the tests run the sources.
 */
import * as Fs from "node:fs"
import { builtinModules } from "node:module"
import * as Path from "node:path"
import { build as rolldown } from "rolldown"
import { fileURLToPath } from "node:url"

const at = (relative: string) => fileURLToPath(new URL(relative, import.meta.url))

/** The file each bundle's process starts from, in its `dist/`. */
const MAIN_FILE = "main.js"

/** A process that runs bundled: its entry point, its `dist/` and the bundle's main file, from the repository root. */
const bundled = <const Dir extends string>(name: string, entry: string, dir: Dir) =>
  ({ name, entry, dir, output: `${dir}/${MAIN_FILE}` as const })

/** The processes that run bundled. */
export const BUNDLES = [
  bundled("api", "apps/api/src/main.ts", "apps/api/dist"),
  bundled("dispatcher", "apps/dispatcher/src/main.ts", "apps/dispatcher/dist")
] as const

const REPO_ROOT = at("../../../")

/** Everything goes into the bundle but Node's builtins. */
const isExternal = (id: string): boolean => id.startsWith("node:") || builtinModules.includes(id)

/** The licence file written beside each bundle. */
export const LICENSES_FILE = "THIRD_PARTY_LICENSES.txt"

/** The package directory (under a node_modules) a bundled module comes from, or undefined for ours. */
const packageDirOf = (moduleId: string): string | undefined => {
  const marker = "/node_modules/"
  const at = moduleId.lastIndexOf(marker)
  if (at < 0) return undefined
  const base = moduleId.slice(0, at + marker.length)
  const rest = moduleId.slice(base.length).split("/")
  const name = rest[0]?.startsWith("@") ? rest.slice(0, 2).join("/") : rest[0]
  return name === undefined ? undefined : base + name
}

/**
 * Every package among `moduleIds`: name, version, the licence its package.json names, and its
 * LICENSE file's text (or a line saying there is none), sorted by name.
 */
const thirdPartyLicenses = (moduleIds: ReadonlyArray<string>): string => {
  const dirs = [...new Set(moduleIds.flatMap((id) => packageDirOf(id) ?? []))]
  const entries = dirs.map((dir) => {
    const manifest = JSON.parse(Fs.readFileSync(Path.join(dir, "package.json"), "utf8")) as {
      readonly name: string
      readonly version: string
      readonly license?: string
    }
    const file = Fs.readdirSync(dir).find((name) => /^(licen[cs]e|copying)(\.|$)/i.test(name))
    const text = file === undefined
      ? `(no licence file in the package; package.json says ${manifest.license ?? "nothing"})`
      : Fs.readFileSync(Path.join(dir, file), "utf8").trim()
    return { title: `${manifest.name}@${manifest.version} (${manifest.license ?? "no licence named"})`, text }
  }).sort((a, b) => a.title.localeCompare(b.title))
  return entries.map((entry) => `${entry.title}\n${"-".repeat(entry.title.length)}\n${entry.text}\n`).join("\n")
}

/** Builds every bundle; resolves with how long it took. */
export const buildBundles = async (): Promise<number> => {
  const started = performance.now()
  for (const bundle of BUNDLES) {
    // A lazy chunk's name carries its content's hash: the last build's chunks go, not pile up.
    Fs.rmSync(REPO_ROOT + bundle.dir, { recursive: true, force: true })
    const built = await rolldown({
      input: REPO_ROOT + bundle.entry,
      platform: "node",
      external: isExternal,
      logLevel: "warn",
      // A warning is a build error: a bundle that builds with a warning may not run as its source does.
      onLog: (level, log) => {
        if (level === "warn") throw new Error(`${bundle.entry}: ${log.message}`)
      },
      output: {
        dir: REPO_ROOT + bundle.dir,
        entryFileNames: MAIN_FILE,
        chunkFileNames: "[name]-[hash].js",
        format: "esm",
        // Licence notices stay; documentation and annotations go.
        comments: { legal: true, annotation: false, jsdoc: false },
        charset: "ascii",
        // Written beside the bundle, read by no one at run time: for reading a stack trace by hand.
        sourcemap: true
      }
    })
    const moduleIds = built.output.flatMap((file) => file.type === "chunk" ? file.moduleIds : [])
    Fs.writeFileSync(Path.join(REPO_ROOT, bundle.dir, LICENSES_FILE), thirdPartyLicenses(moduleIds))
  }
  return performance.now() - started
}

if (import.meta.main) {
  const ms = await buildBundles()
  process.stderr.write(`build: ${BUNDLES.map((b) => b.output).join(", ")} in ${Math.round(ms)} ms\n`)
}
