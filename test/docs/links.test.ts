/**
 * Every relative link of the docs resolves (docs/development.md "docs"): in
 * docs/*.md, README.md and bench/README.md, each `[text](target)` outside
 * code names a file that exists, and a `#anchor` after a markdown file (or
 * alone, for the same file) is the anchor GitHub gives one of that file's
 * headings: lower-cased, punctuation dropped, each space a `-`, and `-1`,
 * `-2`… after a heading's repeats. And each citation by heading in prose,
 * `<file>.md "<Heading>"` (several after commas; `docs/`, `bench/` or a
 * page's neighbour), is the exact text of a heading of that file, as
 * test/docs/citations.test.ts requires of the code. Headings are renamed as
 * the docs change; this keeps the docs from pointing at nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** The pages whose links are checked, relative to the root. */
const PAGES: ReadonlyArray<string> = [
  ...readdirSync(join(ROOT, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`),
  "README.md",
  "bench/README.md"
].sort()

/** A page's lines outside fenced code blocks (a fenced line is blank, so line numbers stay). */
const outsideFences = (markdown: string): ReadonlyArray<string> => {
  let fence: string | undefined
  return markdown.split("\n").map((line) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/u.exec(line)?.[1]
    if (marker !== undefined) {
      if (fence === undefined) fence = marker
      else if (marker[0] === fence[0] && marker.length >= fence.length) fence = undefined
      return ""
    }
    return fence === undefined ? line : ""
  })
}

/** The exact text of a page's headings, any level, outside fenced code. */
const headingsOf = (markdown: string): ReadonlyArray<string> =>
  outsideFences(markdown).flatMap((line) => {
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/u.exec(line)?.[1]
    return heading === undefined ? [] : [heading]
  })

/** GitHub's anchor for a heading's text: its rendered text lower-cased, punctuation dropped, spaces as `-`. */
const anchorOf = (heading: string): string =>
  heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/gu, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /gu, "-")

/** Every anchor of a page's headings, repeats numbered as GitHub numbers them. */
const anchorsOf = (markdown: string): ReadonlySet<string> => {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const heading of headingsOf(markdown)) {
    const anchor = anchorOf(heading)
    const count = seen.get(anchor) ?? 0
    anchors.add(count === 0 ? anchor : `${anchor}-${count}`)
    seen.set(anchor, count + 1)
  }
  return anchors
}

interface Link {
  readonly page: string
  readonly line: number
  readonly target: string
}

/** The relative links of a page, outside code: `[text](target)`, the text possibly wrapped across lines. */
const linksOf = (page: string): ReadonlyArray<Link> => {
  const lines = outsideFences(readFileSync(join(ROOT, page), "utf8")).map((line) =>
    // Inline code is no link: blank it, keeping the length.
    line.replace(/`+[^`]*`+/gu, (code) => " ".repeat(code.length))
  )
  const text = lines.join("\n")
  const lineAt = (index: number): number => text.slice(0, index).split("\n").length
  return [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/gu)]
    .map((match) => ({ page, line: lineAt(match.index), target: match[1] ?? "" }))
    .filter((link) => !/^[a-z][a-z0-9+.-]*:/iu.test(link.target))
}

/** Why a link does not resolve, or undefined when it does. */
const brokenBecause = (link: Link): string | undefined => {
  const [pathPart = "", anchor] = link.target.split("#", 2)
  const file = pathPart === "" ? join(ROOT, link.page) : join(ROOT, dirname(link.page), decodeURIComponent(pathPart))
  if (!existsSync(file)) return `no file ${relative(ROOT, file)}`
  if (anchor === undefined || anchor === "") return undefined
  if (!file.endsWith(".md") || statSync(file).isDirectory()) return undefined
  return anchorsOf(readFileSync(file, "utf8")).has(decodeURIComponent(anchor))
    ? undefined
    : `${relative(ROOT, file)} has no heading with the anchor #${anchor}`
}

/** A citation by heading: the file, its first heading, more after commas. */
const CITATION = /(?<![\w.-])((?:docs\/|bench\/)?[A-Za-z][\w-]*\.md)`?\s+"([^"]{1,160})"((?:\s*,\s*"[^"]{1,160}")*)/gu

/** The file a citation in `page` names: as written from the root, else beside the page, else in docs/, else at the root. */
const citedFile = (page: string, name: string): string | undefined =>
  (/^(?:docs|bench)\//u.test(name) ? [name] : [join(dirname(page), name), `docs/${name}`, name])
    .find((path) => existsSync(join(ROOT, path)))

const headingSets = new Map<string, ReadonlySet<string>>()
/** The headings of a file, read once. */
const headingSet = (file: string): ReadonlySet<string> => {
  const known = headingSets.get(file)
  if (known !== undefined) return known
  const headings = new Set(headingsOf(readFileSync(join(ROOT, file), "utf8")))
  headingSets.set(file, headings)
  return headings
}

/** Every citation by heading in a page's prose that names no heading of its file, as `page:line: …`. */
const unresolvedCitations = (page: string): ReadonlyArray<string> => {
  const lines = outsideFences(readFileSync(join(ROOT, page), "utf8"))
  // One line of text, so a citation may wrap; lineOf maps a character back to its line.
  const lineOf: Array<number> = []
  const text = lines.map((line, index) => {
    const piece = `${line.trim()} `
    for (let i = 0; i < piece.length; i++) lineOf.push(index + 1)
    return piece
  }).join("")
  return [...text.matchAll(CITATION)].flatMap((match) => {
    const name = match[1] ?? ""
    const where = `${page}:${lineOf[match.index] ?? 0}`
    const file = citedFile(page, name)
    if (file === undefined) return [`${where}: ${name} does not exist`]
    const present = headingSet(file)
    return [match[2] ?? "", ...[...(match[3] ?? "").matchAll(/"([^"]+)"/gu)].map((more) => more[1] ?? "")]
      .map((heading) => heading.replace(/\s+/gu, " ").trim())
      .filter((heading) => !present.has(heading))
      .map((heading) => `${where}: ${relative(ROOT, join(ROOT, file))} has no heading "${heading}"`)
  })
}

describe("links between the docs", () => {
  it("GitHub's anchors, as this test computes them", () => {
    assert.strictEqual(anchorOf("Keeping a copy in sync"), "keeping-a-copy-in-sync")
    assert.strictEqual(
      anchorOf("Past one database: distributing by `school_id` (Citus)"),
      "past-one-database-distributing-by-school_id-citus"
    )
    assert.strictEqual(anchorOf("GET /students/{id} with active_groups"), "get-studentsid-with-active_groups")
    assert.strictEqual(anchorOf("The back office's documented answers"), "the-back-offices-documented-answers")
  })

  it("every relative link names a file that exists, and a heading that exists", () => {
    const links = PAGES.flatMap(linksOf)
    // Not vacuous: the pages link to each other, with anchors.
    assert.isAbove(links.filter((link) => link.target.includes(".md#")).length, 10)
    const broken = links.flatMap((link) => {
      const why = brokenBecause(link)
      return why === undefined ? [] : [`${link.page}:${link.line}: (${link.target}): ${why}`]
    })
    assert.deepStrictEqual(broken, [])
  })

  it("every citation by heading in the docs names a heading of its file", () => {
    // Not vacuous: the pages cite each other by heading.
    assert.isAbove(PAGES.flatMap((page) => [...readFileSync(join(ROOT, page), "utf8").matchAll(CITATION)]).length, 20)
    assert.deepStrictEqual(PAGES.flatMap(unresolvedCitations), [])
  })
})
