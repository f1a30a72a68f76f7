/**
 * Every citation in the code resolves inside the repository
 * (docs/development.md "Code style"): a reader has this repository and
 * nothing else, neither the specification the service was built from nor
 * the tracker it was built through. Over the source files of apps/, libs/,
 * test/, bench/ and examples/ (and the Dockerfile, docker-compose.yml, .ci/
 * and package.json; not node_modules, dist or bench/results), nothing:
 * (a) cites the specification by section: "spec" followed by a number, or
 *     "spec part";
 * (b) names a tracker issue: "issue" followed by a number, in any case;
 * (c) cites a doc that does not exist, or a heading it does not have:
 *     `docs/<file>.md "<Heading>"`, or several headings after one file
 *     (`"A", "B"`), each the exact text of a heading of any level of that
 *     file (outside fenced code blocks); a citation may wrap across comment
 *     lines. A bare `<file>.md "<Heading>"` is read as docs/<file>.md (or the
 *     root's <file>.md).
 * This file is not scanned: it has to spell the patterns.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const SELF = "test/docs/citations.test.ts"

/** Where the code is: folders walked whole, and single files. */
const FOLDERS = ["apps", "libs", "test", "bench", "examples", ".ci"]
const FILES = ["Dockerfile", "docker-compose.yml", "package.json"]
/** Never code of ours: dependencies, build output, benchmark results, local data. */
const SKIPPED_FOLDERS = new Set(["node_modules", "dist", "results", ".data", ".git"])
const SOURCE = /\.(?:[cm]?[jt]sx?|html|css|sql|sh|ya?ml)$|^(?:Dockerfile|package\.json)$/u
/** Folders whose every file is code, whatever its name (.ci/run). */
const ALL_FILES = new Set([".ci"])
/** Scratch files git ignores (.gitignore: `*.tmp.ts`). */
const SCRATCH = /\.tmp\.ts$/u


const SPEC = /\bspec(?:ification)?\s*(?:§\s*)?(?:\d|part\b)/giu
const ISSUE = /\bissues?\s*#?\s*\d/giu
/** A doc cited by heading: the file, the first heading, then any more after commas. */
const CITATION = /(?<![\w/.-])((?:docs\/)?[A-Za-z][\w-]*\.md)\s+"([^"]{1,160})"((?:\s*,\s*"[^"]{1,160}")*)/gu
/** A doc named by path, with or without a heading. */
const DOC_PATH = /(?<![\w/.-])docs\/([\w-]+\.md)\b/gu

const walk = (folder: string): ReadonlyArray<string> =>
  readdirSync(join(ROOT, folder)).flatMap((name) => {
    const path = join(folder, name)
    if (statSync(join(ROOT, path)).isDirectory()) return SKIPPED_FOLDERS.has(name) ? [] : walk(path)
    return (ALL_FILES.has(folder) || SOURCE.test(name)) && !SCRATCH.test(name) ? [path] : []
  })

const sourceFiles: ReadonlyArray<string> = [
  ...FOLDERS.filter((folder) => existsSync(join(ROOT, folder))).flatMap(walk),
  ...FILES.filter((file) => existsSync(join(ROOT, file)))
].map((path) => relative(ROOT, join(ROOT, path)).split("\\").join("/")).sort()

/**
 * A file as one line of text: each line's comment marker (`*`, `//`, `--`,
 * `#`) and indentation become one space, and `\"` a quote, so a citation that
 * wraps across comment lines, or sits in a test's title, reads as written.
 * `lineOf[i]` is the 1-based line of character i.
 */
interface Joined {
  readonly text: string
  readonly lineOf: ReadonlyArray<number>
}

const join1 = (source: string): Joined => {
  const pieces: Array<string> = []
  const lineOf: Array<number> = []
  source.split("\n").forEach((raw, index) => {
    const line = (index === 0 ? raw : raw.replace(/^\s*(?:\*(?!\/)|\/\/|--|#)?\s*/u, "")).replace(/\\"/gu, "\"")
    const piece = index === 0 ? line : ` ${line}`
    pieces.push(piece)
    for (let i = 0; i < piece.length; i++) lineOf.push(index + 1)
  })
  return { text: pieces.join(""), lineOf }
}

interface Scanned {
  readonly path: string
  readonly joined: Joined
}

const scanned: ReadonlyArray<Scanned> = sourceFiles.filter((path) => path !== SELF).map((path) => {
  const joined = join1(readFileSync(join(ROOT, path), "utf8"))
  return { path, joined }
})

/** Every match of a pattern, as `path:line: text`. */
const mentions = (pattern: RegExp): ReadonlyArray<string> =>
  scanned.flatMap(({ joined, path }) =>
    [...joined.text.matchAll(pattern)]
      .map((match) => {
        const line = joined.lineOf[match.index] ?? 0
        const context = joined.text.slice(Math.max(0, match.index - 30), match.index + 40).trim()
        return `${path}:${line}: …${context}…`
      })
  )

/** The headings of a markdown file, any level, outside fenced code blocks. */
const headingsOf = (markdown: string): ReadonlySet<string> => {
  const headings = new Set<string>()
  let fence: string | undefined
  for (const line of markdown.split("\n")) {
    const marker = /^ {0,3}(`{3,}|~{3,})/u.exec(line)?.[1]
    if (marker !== undefined) {
      if (fence === undefined) fence = marker
      else if (marker[0] === fence[0] && marker.length >= fence.length) fence = undefined
      continue
    }
    if (fence !== undefined) continue
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/u.exec(line)?.[1]
    if (heading !== undefined) headings.add(heading)
  }
  return headings
}

const headingCache = new Map<string, ReadonlySet<string>>()
const headingsOfFile = (path: string): ReadonlySet<string> => {
  const cached = headingCache.get(path)
  if (cached !== undefined) return cached
  const headings = headingsOf(readFileSync(join(ROOT, path), "utf8"))
  headingCache.set(path, headings)
  return headings
}

/** The file a citation names: docs/<file>.md, or for a bare name docs/<file>.md else the root's. */
const citedFile = (name: string): string | undefined => {
  if (name.startsWith("docs/")) return existsSync(join(ROOT, name)) ? name : undefined
  return [`docs/${name}`, name].find((path) => existsSync(join(ROOT, path)))
}

const unresolved: ReadonlyArray<string> = scanned.flatMap(({ joined, path }) => {
  const where = (index: number) => `${path}:${joined.lineOf[index] ?? 0}`
  const missingFiles = [...joined.text.matchAll(DOC_PATH)]
    .filter((match) => !existsSync(join(ROOT, "docs", match[1] ?? "")))
    .map((match) => `${where(match.index)}: docs/${match[1]} does not exist`)
  const missingHeadings = [...joined.text.matchAll(CITATION)].flatMap((match) => {
    const name = match[1] ?? ""
    const file = citedFile(name)
    const headings = [match[2] ?? "", ...[...(match[3] ?? "").matchAll(/"([^"]+)"/gu)].map((more) => more[1] ?? "")]
      .map((heading) => heading.replace(/\s+/gu, " ").trim())
    if (file === undefined) {
      // docs/<file>.md that does not exist is reported once, by DOC_PATH.
      return name.startsWith("docs/") ? [] : [`${where(match.index)}: ${name} is not in docs/ nor at the root`]
    }
    const present = headingsOfFile(file)
    return headings.filter((heading) => !present.has(heading)).map((heading) =>
      `${where(match.index)}: ${file} has no heading "${heading}"`
    )
  })
  return [...missingFiles, ...missingHeadings]
})

describe("citations in the code resolve inside the repository", () => {
  it("scans the code", () => {
    assert.isAbove(sourceFiles.length, 100)
    assert.include(sourceFiles, "apps/api/src/main.ts")
    assert.include(sourceFiles, SELF)
    assert.isFalse(sourceFiles.some((path) => path.includes("node_modules/") || path.includes("/dist/")))
  })

  it("(a) no citation of the specification by section", () => {
    assert.deepStrictEqual(mentions(SPEC), [])
  })

  it("(b) no tracker issue numbers", () => {
    assert.deepStrictEqual(mentions(ISSUE), [])
  })

  it("(c) every docs/<file>.md \"<Heading>\" names a file and a heading that exist", () => {
    assert.deepStrictEqual(unresolved, [])
  })


  it("reads headings of any level, outside fenced code, and citations across comment lines", () => {
    const headings = headingsOf("# Top\n## Two words\n```sh\n# not a heading\n```\n#### Deep `code` ##\n")
    assert.deepStrictEqual([...headings], ["Top", "Two words", "Deep `code`"])
    const joined = join1("/**\n * see docs/x.md \"Keeping a copy\n * in sync\", \"B\"\n */\nit(\"a docs/y.md \\\"C\\\"\")")
    const found = [...joined.text.matchAll(CITATION)].map((match) => [match[1], match[2], match[3]?.trim()])
    assert.deepStrictEqual(found, [["docs/x.md", "Keeping a copy in sync", ", \"B\""], ["docs/y.md", "C", ""]])
    assert.strictEqual(joined.lineOf[joined.text.indexOf("docs/y.md")], 5)
  })
})
