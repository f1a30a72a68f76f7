/**
 * docs/back-office.md runs as written: every ```sh block, in order, in one
 * bash session (`set -euo pipefail`) against the real API process on this
 * file's database, with one substitution: the doc's `http://127.0.0.1:3000`
 * (what `npm start` listens on) becomes this test's port. A ```json block
 * right after a ```sh block is what that block prints: the reply must have
 * the same shape (keys at every level, value types) and the same `success`,
 * `code`, `status`, `role`, `scope` and `event(s)` values.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { freePort } from "@school/runtime/Ports"
import { startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { bash, compareOutputs, MARK, ROOT, shellBlocks } from "./support.ts"

const DOC = join(ROOT, "docs/back-office.md")
const DOC_ORIGIN = "http://127.0.0.1:3000"
/** Files the doc's commands leave in the working directory (cookie jars). */
const LEFTOVERS = ["crm.cookies"]

const EXACT = new Set(["success", "code", "status", "role", "scope", "event", "events"])

layer(TestDatabase.layer, { excludeTestServices: true })("docs/back-office.md", (it) => {
  it.effect("every sh block runs against the API as written, and prints what the doc shows", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* Effect.orDie(freePort)
      const blocks = shellBlocks(readFileSync(DOC, "utf8"))
      assert.isAtLeast(blocks.length, 8, "the doc has its examples")
      const script = [
        "set -euo pipefail",
        ...blocks.map((block) => `${block.script.replaceAll(DOC_ORIGIN, `http://127.0.0.1:${port}`)}\necho; echo '${MARK}'`)
      ].join("\n")
      // The API process is stopped (SIGTERM, waited for) when the scope closes.
      const result = yield* Effect.scoped(Effect.gen(function*() {
        yield* startApi(database.url, port)
        return yield* bash(script, { DATABASE_URL: database.url })
      })).pipe(
        Effect.ensuring(Effect.sync(() => LEFTOVERS.forEach((file) => rmSync(join(ROOT, file), { force: true }))))
      )
      assert.strictEqual(result.code, 0, `${result.stdout}\n${result.stderr}`)
      const outputs = result.stdout.split(MARK)
      assert.isAtLeast(compareOutputs("docs/back-office.md", blocks, outputs, EXACT), 8, "the documented outputs were compared")
    }))
})
