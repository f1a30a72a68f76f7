/**
 * Running a doc as written (docs/back-office.md, docs/integrators.md): its
 * ```sh blocks in order in one bash session, each with the ```json block
 * that shows what it prints; its ```js blocks as the files they name.
 */
import { assert } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..")
/** What the script prints after each block, to split its output per block. */
export const MARK = "::doc-block-end::"

export interface Block {
  /** Line of the block's fence in the doc. */
  readonly line: number
  readonly script: string
  /** The ```json block that shows what it prints, if one follows. */
  readonly expected: string | undefined
}

interface Fenced {
  readonly kind: string
  readonly body: string
  readonly index: number
  /** Just past the closing fence. */
  readonly end: number
  readonly line: number
}

const fencedBlocks = (markdown: string): ReadonlyArray<Fenced> =>
  [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gmu)].map((match) => ({
    kind: match[1] ?? "",
    body: match[2] ?? "",
    index: match.index,
    end: match.index + match[0].length,
    line: markdown.slice(0, match.index).split("\n").length
  }))

/**
 * The ```sh blocks of a doc, each with the ```json block right after it: prose
 * between is fine, another code block or a heading is not (a json block under
 * a heading of its own is an example, not an output).
 */
export const shellBlocks = (markdown: string): ReadonlyArray<Block> => {
  const found = fencedBlocks(markdown)
  return found.flatMap((block, i) => {
    if (block.kind !== "sh") return []
    const next = found[i + 1]
    const between = next === undefined ? "" : markdown.slice(block.end, next.index)
    const expected = next?.kind === "json" && !/^#/mu.test(between) ? next.body : undefined
    return [{ line: block.line, script: block.body, expected }]
  })
}

/** The doc's ```json blocks with the heading they sit under. */
export const jsonExamples = (markdown: string): ReadonlyArray<{ readonly heading: string; readonly body: string }> =>
  fencedBlocks(markdown).filter((block) => block.kind === "json").map((block) => ({
    heading: [...markdown.slice(0, block.index).matchAll(/^#+ (.*)$/gmu)].at(-1)?.[1] ?? "",
    body: block.body
  }))

/** The doc's ```js blocks, each named by its first line, `// name.mjs: …`. */
export const sourceFiles = (markdown: string): ReadonlyArray<{ readonly name: string; readonly source: string }> =>
  fencedBlocks(markdown).filter((block) => block.kind === "js").map((block) => {
    const name = /^\/\/ ([\w.-]+\.m?js)\b/u.exec(block.body)?.[1]
    if (name === undefined) throw new Error(`js block at line ${block.line} does not start with "// <file name>: …"`)
    return { name, source: block.body }
  })

/** Same keys at every level, same types; the keys in `exact` with the same values too. */
export const sameShape = (
  actual: unknown,
  expected: unknown,
  exact: ReadonlySet<string>,
  path = "$"
): ReadonlyArray<string> => {
  const kind = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value)
  if (kind(actual) !== kind(expected)) return [`${path}: ${kind(actual)}, documented ${kind(expected)}`]
  if (Array.isArray(actual) && Array.isArray(expected)) {
    if (expected.length === 0 || actual.length === 0) return []
    return sameShape(actual[0], expected[0], exact, `${path}[0]`)
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
      const problems = sameShape(value, documented, exact, `${path}.${key}`)
      return exact.has(key) && JSON.stringify(value) !== JSON.stringify(documented)
        ? [...problems, `${path}.${key}: ${JSON.stringify(value)}, documented ${JSON.stringify(documented)}`]
        : problems
    })
  }
  return []
}

const Json = Schema.fromJsonString(Schema.Unknown)

/** What a block printed, as JSON: the whole output, or its last line when earlier commands printed too. */
export const printedJson = (printed: string): Option.Option<unknown> =>
  Option.orElse(
    Schema.decodeUnknownOption(Json)(printed),
    () => Schema.decodeUnknownOption(Json)(printed.split("\n").at(-1) ?? "")
  )

export const parseJson = (text: string): Option.Option<unknown> => Schema.decodeUnknownOption(Json)(text)

/**
 * Runs `script` in bash in the project, as a user's shell would (npm's own
 * settings of this test run, npm_config_loglevel say, left out: they would
 * change what the doc's `npm run` prints). Its process group is killed when
 * it ends, so a server the script left running (it failed before its `kill`)
 * does not outlive it.
 */
export const bash = (script: string, env: Readonly<Record<string, string>>, timeoutMs = 90_000) =>
  Effect.callback<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("npm_")))
    const child = spawn("bash", ["-c", script], { cwd: ROOT, env: { ...inherited, ...env }, detached: true })
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
      } catch {
        // Already gone.
      }
    }
    const timer = setTimeout(killGroup, timeoutMs)
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.once("close", (code) => {
      clearTimeout(timer)
      killGroup()
      resume(Effect.succeed({ code, stdout, stderr }))
    })
    return Effect.sync(killGroup)
  })

/**
 * Each block's output against the ```json block the doc shows after it:
 * JSON, the same shape, the same values of the `exact` keys. Returns how
 * many outputs were compared.
 */
export const compareOutputs = (
  doc: string,
  blocks: ReadonlyArray<Block>,
  outputs: ReadonlyArray<string>,
  exact: ReadonlySet<string>
): number => {
  let compared = 0
  blocks.forEach((block, i) => {
    if (block.expected === undefined) return
    const printed = (outputs[i] ?? "").trim()
    const where = `block at ${doc}:${block.line} printed ${printed}`
    const actual = printedJson(printed)
    const documented = parseJson(block.expected)
    assert.isTrue(Option.isSome(actual), `${where}: not JSON`)
    assert.isTrue(Option.isSome(documented), `${where}: the doc's json block after it is not JSON`)
    if (Option.isSome(actual) && Option.isSome(documented)) {
      assert.deepStrictEqual(sameShape(actual.value, documented.value, exact), [], where)
      compared++
    }
  })
  return compared
}
