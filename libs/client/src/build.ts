/**
 * The package's build (`npm pack` runs it as `prepack`; docs/integrators.md
 * "Client kit and examples"): `dist/index.js`, one ESM file holding the
 * client and the parts of `@school/domain` it uses (the contract, the
 * errors, the models), with `effect` left an import (a peer dependency: one
 * copy of effect in the integrator's project, shared with their own Effect
 * code). The types are `types/index.d.ts`, written out and held to this
 * code by test/client/package-types.test.ts.
 */
import { build } from "rolldown"
import { fileURLToPath } from "node:url"

const at = (relative: string) => fileURLToPath(new URL(relative, import.meta.url))

/** effect and Node's builtins stay imports; everything else (our workspace modules, relative imports) goes in. */
const isExternal = (id: string): boolean => id === "effect" || id.startsWith("effect/") || id.startsWith("node:")

export const buildPackage = async (): Promise<void> => {
  await build({
    input: at("./index.ts"),
    platform: "node",
    external: isExternal,
    logLevel: "warn",
    onLog: (level, log) => {
      if (level === "warn") throw new Error(`libs/client: ${log.message}`)
    },
    output: { file: at("../dist/index.js"), format: "esm" }
  })
}

if (import.meta.main) await buildPackage()
