/**
 * The web panel's copy of the back-office contract (apps/cli/src/panelContract.ts):
 * `apps/api/src/panel/contract.d.ts` (the OpenAPI document's types, which `npm run typecheck`
 * checks the panel against) and `apps/api/src/panel/contract-lists.js` (the events and the roles
 * each operation admits, which the panel reads at run time) are what the generator writes from
 * the contract as it is now. This test fails when a committed file differs;
 * `UPDATE_PANEL_CONTRACT=1` rewrites them instead, as `npm run panel:contract` does.
 */
import { assert, describe, it } from "@effect/vitest"
import { PANEL_CONTRACT_FILES, panelContract, REGENERATE } from "@school/cli/panelContract"
import { Effect } from "effect"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const UPDATE = "UPDATE_PANEL_CONTRACT=1 npx vitest run test/panel/contract.test.ts"

const repoFile = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url))

describe("the web panel's copy of the back-office contract", () => {
  it.effect("is what the generator writes from the contract", () =>
    Effect.promise(async () => {
      const generated = await panelContract()
      for (const which of ["types", "lists"] as const) {
        const file = repoFile(PANEL_CONTRACT_FILES[which])
        if (process.env["UPDATE_PANEL_CONTRACT"] === "1") {
          writeFileSync(file, generated[which])
          continue
        }
        const committed = existsSync(file) ? readFileSync(file, "utf8") : ""
        assert.strictEqual(
          committed,
          generated[which],
          `${PANEL_CONTRACT_FILES[which]} is not what the back-office contract gives: run ${REGENERATE} (or ${UPDATE})`
        )
      }
    }), { timeout: 60_000 })
})
