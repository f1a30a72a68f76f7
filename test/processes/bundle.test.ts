/**
 * The production bundles (apps/cli/src/build.ts; docs/decisions.md "Compiled processes"), which
 * `npm run start:api`, `start:dispatcher`, the image and the benchmark run, while every other
 * test runs the sources. Built here from this checkout, then:
 * - each bundle holds everything its process imports, our modules and the packages alike: what
 *   it imports is Node's builtins and its own lazy chunks, files beside it; no comment is left
 *   but licence notices, and the text is ASCII (docs/decisions.md "Compiled processes"); the
 *   licences of the packages it carries lie beside it;
 * - the bundled API serves what reaches a file or a lazy import at run time: a public list, its
 *   OpenAPI document, the reference page (Scalar, loaded on its first request), the back-office
 *   panel's files (found through apps/api/package.json "./panel/*"); SIGTERM exits 0;
 * - the bundled dispatcher becomes ready, delivers nothing wrong, and exits 0 on SIGTERM.
 */
import { assert, layer } from "@effect/vitest"
import { BUNDLES, buildBundles, LICENSES_FILE } from "@school/cli/build"
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

layer(TestDatabase.layer, { excludeTestServices: true })("the production bundles", (it) => {
  it.effect("hold every module and package of their process: they import only builtins and their own chunks, in ASCII, without documentation", () =>
    Effect.gen(function*() {
      yield* Effect.promise(built)
      const builtins = new Set(builtinModules)
      for (const bundle of BUNDLES) {
        const files = Fs.readdirSync(Path.join(repoRoot, bundle.dir)).filter((file) => file.endsWith(".js"))
        assert.include(files, "main.js")
        // The API's one lazy import, Scalar's page (effect's httpApiScalar), is a chunk of its own.
        if (bundle === BUNDLES[0]) assert.isTrue(files.some((file) => file !== "main.js"), "the API's lazy chunk")
        /** A builtin, or a chunk beside the bundle. */
        const allowed = (specifier: string): boolean =>
          specifier.startsWith("node:") || builtins.has(specifier) ||
          (specifier.startsWith("./") && files.includes(specifier.slice(2)))
        for (const file of files) {
          const code = Fs.readFileSync(Path.join(repoRoot, bundle.dir, file), "utf8")
          const imports = importsOf(code)
          if (file === "main.js") assert.isAbove(imports.length, 5, `${bundle.output}: imports found`)
          const wrong = imports.filter((specifier) => !allowed(specifier))
          assert.deepStrictEqual(wrong, [], `${bundle.dir}/${file}: imports neither a builtin nor a chunk beside it`)
          assert.notMatch(code, /[^\x00-\x7f]/, `${bundle.dir}/${file}: ASCII only`)
          // effect's modules open with their documentation (`/**\n * Describes …`); none is left.
          assert.notInclude(code, "/**\n", `${bundle.dir}/${file}: no documentation comment`)
        }
        // The check itself: a package or a workspace import left in a bundle would be caught.
        for (const planted of ["effect/Schema", "@school/domain/Ids", "../src/main.ts"]) {
          assert.isFalse(allowed(planted), planted)
        }
      }
      // The licences of what they carry, beside them: effect's (in both) and ws's (the API's WebSocket support).
      const versionOf = (name: string): string =>
        (JSON.parse(Fs.readFileSync(Path.join(repoRoot, "node_modules", name, "package.json"), "utf8")) as { version: string }).version
      for (const [bundle, names] of [[BUNDLES[0], ["effect", "@effect/platform-node", "@effect/sql-pg", "ipaddr.js", "ws"]], [BUNDLES[1], ["effect", "@effect/sql-pg"]]] as const) {
        const licenses = Fs.readFileSync(Path.join(repoRoot, bundle.dir, LICENSES_FILE), "utf8")
        for (const name of names) assert.include(licenses, `${name}@${versionOf(name)} (MIT)\n`, `${bundle.dir}: ${name}`)
        assert.include(licenses, "Permission is hereby granted, free of charge", bundle.dir)
        assert.notInclude(licenses, "@school/", bundle.dir)
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
