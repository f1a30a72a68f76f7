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
import { Effect, Option, Schema } from "effect"
import { spawn } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "@school/runtime/Ports"
import { startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..")
const DOC = join(ROOT, "docs/back-office.md")
const DOC_ORIGIN = "http://127.0.0.1:3000"
const MARK = "::doc-block-end::"
/** Files the doc's commands leave in the working directory (cookie jars). */
const LEFTOVERS = ["crm.cookies"]

interface Block {
  readonly line: number
  readonly script: string
  readonly expected: string | undefined
}

/** The ```sh blocks of the doc, each with the ```json block that follows it, if any. */
const blocksOf = (markdown: string): ReadonlyArray<Block> => {
  const fence = /^```(\w*)\n([\s\S]*?)^```$/gmu
  const found: Array<{ kind: string; body: string; index: number }> = []
  for (const match of markdown.matchAll(fence)) {
    found.push({ kind: match[1] ?? "", body: match[2] ?? "", index: match.index })
  }
  const blocks: Array<Block> = []
  found.forEach((block, i) => {
    if (block.kind !== "sh") return
    const next = found[i + 1]
    const between = next === undefined ? "" : markdown.slice(block.index + block.body.length, next.index)
    // Only a json block that directly follows (prose between is fine, another sh block is not).
    const expected = next?.kind === "json" && !between.includes("```sh") ? next.body : undefined
    blocks.push({ line: markdown.slice(0, block.index).split("\n").length, script: block.body, expected })
  })
  return blocks
}

const EXACT = new Set(["success", "code", "status", "role", "scope", "event", "events"])

/** Same keys at every level, same types; the EXACT keys with the same values. */
const sameShape = (actual: unknown, expected: unknown, path: string): ReadonlyArray<string> => {
  const kind = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value)
  if (kind(actual) !== kind(expected)) return [`${path}: ${kind(actual)}, documented ${kind(expected)}`]
  if (Array.isArray(actual) && Array.isArray(expected)) {
    if (expected.length === 0 || actual.length === 0) return []
    return sameShape(actual[0], expected[0], `${path}[0]`)
  }
  if (typeof actual === "object" && actual !== null && typeof expected === "object" && expected !== null) {
    const a = Object.entries(actual)
    const e = new Map(Object.entries(expected))
    const keys = (entries: Iterable<string>) => [...entries].sort().join(",")
    if (keys(a.map(([k]) => k)) !== keys(e.keys())) {
      return [`${path}: keys ${keys(a.map(([k]) => k))}, documented ${keys(e.keys())}`]
    }
    return a.flatMap(([key, value]) => {
      const documented = e.get(key)
      const problems = sameShape(value, documented, `${path}.${key}`)
      return EXACT.has(key) && JSON.stringify(value) !== JSON.stringify(documented)
        ? [...problems, `${path}.${key}: ${JSON.stringify(value)}, documented ${JSON.stringify(documented)}`]
        : problems
    })
  }
  return []
}

const Json = Schema.fromJsonString(Schema.Unknown)

const bash = (script: string, env: Readonly<Record<string, string>>) =>
  Effect.callback<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    // As a user's shell would run it: npm's own settings of this test run (npm_config_loglevel from
    // `npm test --loglevel=…`, say) would change what the doc's `npm run` prints.
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("npm_")))
    const child = spawn("bash", ["-c", script], { cwd: ROOT, env: { ...inherited, ...env }, timeout: 90_000 })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.once("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
  })

layer(TestDatabase.layer, { excludeTestServices: true })("docs/back-office.md", (it) => {
  it.effect("every sh block runs against the API as written, and prints what the doc shows", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* Effect.orDie(freePort)
      const blocks = blocksOf(readFileSync(DOC, "utf8"))
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
      blocks.forEach((block, i) => {
        if (block.expected === undefined) return
        const printed = (outputs[i] ?? "").trim()
        const where = `block at docs/back-office.md:${block.line} printed ${printed}`
        // The whole output, or its last line when earlier commands printed too.
        const actual = Option.orElse(
          Schema.decodeUnknownOption(Json)(printed),
          () => Schema.decodeUnknownOption(Json)(printed.split("\n").at(-1) ?? "")
        )
        const documented = Schema.decodeUnknownOption(Json)(block.expected)
        assert.isTrue(Option.isSome(actual), `${where}: not JSON`)
        assert.isTrue(Option.isSome(documented), `${where}: the doc's json block after it is not JSON`)
        if (Option.isSome(actual) && Option.isSome(documented)) {
          assert.deepStrictEqual(sameShape(actual.value, documented.value, "$"), [], where)
        }
      })
    }))
})
