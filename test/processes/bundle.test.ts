/**
 * The production bundles (apps/cli/src/build.ts; docs/decisions.md "Compiled processes"), which
 * `npm run start:api`, `start:dispatcher`, the image and the benchmark run, while every other
 * test runs the sources. Built here from this checkout, then:
 * - each bundle holds all of our modules (no `@school/*` import is left) and imports only Node's
 *   builtins and packages an install without devDependencies has;
 * - the bundled API serves what reaches a file or a lazy import at run time: a public list, its
 *   OpenAPI document, the reference page (Scalar, loaded on its first request), the back-office
 *   panel's files (found through apps/api/package.json "./panel/*"); SIGTERM exits 0;
 * - the bundled dispatcher becomes ready, delivers nothing wrong, and exits 0 on SIGTERM.
 */
import { assert, layer } from "@effect/vitest"
import { BUNDLES, buildBundles } from "@school/cli/build"
import { seedDemo } from "@school/persistence/DemoSeed"
import { hashPassword } from "@school/runtime/Passwords"
import { freePort } from "@school/runtime/Ports"
import { Effect } from "effect"
import * as Fs from "node:fs"
import { builtinModules } from "node:module"
import * as Path from "node:path"
import { rawClient, V1 } from "../support/Clients.ts"
import { entryPoints, startApi, startDispatcher } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const repoRoot = Path.resolve(import.meta.dirname, "../..")

/** The packages an `npm ci --omit=dev` install has at the top level: every workspace's dependencies. */
const productionPackages = (): ReadonlySet<string> => {
  const root = JSON.parse(Fs.readFileSync(Path.join(repoRoot, "package.json"), "utf8")) as { workspaces: ReadonlyArray<string> }
  const names = new Set<string>()
  for (const dir of [".", ...root.workspaces]) {
    const manifest = JSON.parse(Fs.readFileSync(Path.join(repoRoot, dir, "package.json"), "utf8")) as { dependencies?: Record<string, string> }
    for (const name of Object.keys(manifest.dependencies ?? {})) names.add(name)
  }
  return names
}

/** The specifiers a bundle imports, statically or with `import()`. */
const importsOf = (code: string): ReadonlyArray<string> => {
  const found = new Set<string>()
  for (const match of code.matchAll(/(?:^|[\s;])(?:import|export)\s[^"'`;]*?from\s*["']([^"']+)["']|(?:^|[\s;])import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm)) {
    found.add(match[1] ?? match[2] ?? match[3]!)
  }
  return [...found]
}

/** Builds the bundles once for this file, for whichever of its tests runs first (alone or not). */
let building: Promise<number> | undefined
const built = (): Promise<number> => (building ??= buildBundles())

/** `effect/Schema` → `effect`; `@effect/sql-pg/PgClient` → `@effect/sql-pg`. */
const packageOf = (specifier: string): string =>
  specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")

layer(TestDatabase.layer, { excludeTestServices: true })("the production bundles", (it) => {
  it.effect("hold our modules and import only builtins and production dependencies", () =>
    Effect.gen(function*() {
      yield* Effect.promise(built)
      const allowed = productionPackages()
      const builtins = new Set(builtinModules)
      for (const bundle of BUNDLES) {
        const code = Fs.readFileSync(Path.join(repoRoot, bundle.output), "utf8")
        const imports = importsOf(code)
        assert.isAbove(imports.length, 10, `${bundle.output}: imports found`)
        const wrong = imports.filter((specifier) =>
          !(specifier.startsWith("node:") || builtins.has(specifier) || allowed.has(packageOf(specifier)))
        )
        assert.deepStrictEqual(wrong, [], `${bundle.output}: imports neither a builtin nor a production dependency`)
        assert.isTrue(imports.some((specifier) => specifier.startsWith("effect/")), `${bundle.output}: effect stays an import`)
        // The check itself: a devDependency or a workspace import in a bundle would be caught.
        for (const planted of ["vitest", "@school/domain/Ids"]) {
          assert.isFalse(allowed.has(packageOf(planted)) || builtins.has(planted), planted)
        }
      }
    }), 60_000)

  it.effect("the bundled API serves lists, its document, the reference page and the panel; the bundled dispatcher runs; both exit 0 on SIGTERM", () =>
    Effect.gen(function*() {
      yield* Effect.promise(built)
      const database = yield* TestDatabase
      const demo = yield* seedDemo(hashPassword)
      const port = yield* Effect.orDie(freePort)
      const base = `http://127.0.0.1:${port}`
      const codes = yield* Effect.scoped(Effect.gen(function*() {
        const api = yield* startApi(database.url, port, {}, entryPoints.apiBundle)
        const dispatcher = yield* startDispatcher(database.url, { WEBHOOK_ALLOW_INSECURE_URLS: "true" }, entryPoints.dispatcherBundle)
        const raw = rawClient(base)
        const students = yield* raw.get(`${V1}/students?per_page=2`, demo.keys.read)
        assert.strictEqual(students.status, 200)
        assert.strictEqual((students.json as { data: ReadonlyArray<unknown> }).data.length, 2)
        const document = yield* raw.get(`${V1}/openapi.json`)
        assert.strictEqual(document.status, 200)
        const reference = yield* Effect.promise(() => fetch(`${base}${V1}/docs`))
        assert.strictEqual(reference.status, 200)
        assert.include(yield* Effect.promise(() => reference.text()), "<script")
        for (const file of ["/crm", "/crm/app.js", "/crm/panel.css"]) {
          const served = yield* Effect.promise(() => fetch(`${base}${file}`))
          const expected = Fs.readFileSync(Path.join(repoRoot, "apps/api/src/panel", file === "/crm" ? "index.html" : Path.basename(file)), "utf8")
          assert.deepStrictEqual([served.status, yield* Effect.promise(() => served.text())], [200, expected], file)
        }
        const ready = yield* Effect.promise(() => fetch(`http://127.0.0.1:${dispatcher.port}/health/ready`))
        assert.strictEqual(ready.status, 200)
        api.stop()
        dispatcher.signal("SIGTERM")
        return yield* Effect.promise(() => Promise.all([api.exited, dispatcher.exited]))
      }))
      assert.deepStrictEqual(codes, [0, 0])
    }), 60_000)
})
