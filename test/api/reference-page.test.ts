/**
 * The API reference pages over plain HTTP (docs/decisions.md "API
 * reference page"): `/api/public/v1/docs` and `/api/crm/v1/docs` are HTML
 * that loads nothing from another origin (Scalar is inlined), embeds this
 * server's own OpenAPI document, and carries a Content-Security-Policy
 * whose `script-src` is exactly the hashes of its inline scripts; those
 * headers are on the reference pages and no other route. The page in a
 * browser, offline, is test/panel/reference.test.ts.
 */
import { assert, layer } from "@effect/vitest"
import { CONTENT_SECURITY_POLICY as PANEL_POLICY } from "@school/api/http/Panel"
import { BACK_OFFICE_DOCS_PATH, BACK_OFFICE_OPENAPI_PATH, DOCS_PATH, OPENAPI_PATH } from "@school/api/Server"
import { Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

/** The page's tags outside raw text (script and style contents), with their attributes. */
const tagsOf = (html: string): ReadonlyArray<{ readonly name: string; readonly attributes: ReadonlyMap<string, string> }> => {
  const tags: Array<{ name: string; attributes: Map<string, string> }> = []
  const tag = /<([a-zA-Z][\w-]*)((?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))?)*)\s*\/?>/gy
  const attribute = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/gu
  let at = 0
  while (at < html.length) {
    const open = html.indexOf("<", at)
    if (open === -1) break
    tag.lastIndex = open
    const match = tag.exec(html)
    if (match === null) {
      at = open + 1
      continue
    }
    const name = (match[1] ?? "").toLowerCase()
    const attributes = new Map<string, string>()
    for (const found of (match[2] ?? "").matchAll(attribute)) {
      attributes.set((found[1] ?? "").toLowerCase(), found[2] ?? found[3] ?? found[4] ?? "")
    }
    tags.push({ name, attributes })
    at = tag.lastIndex
    // Raw text: nothing inside a script or style is markup, up to its end tag.
    if (name === "script" || name === "style") {
      const end = html.toLowerCase().indexOf(`</${name}`, at)
      assert.notStrictEqual(end, -1, `<${name}> is closed`)
      at = end + 2 + name.length
    }
  }
  return tags
}

/** The inline scripts' texts, read by position (from `<script>` to the first `</script>`), not by the server's code. */
const inlineScripts = (html: string): ReadonlyArray<string> => {
  const scripts: Array<string> = []
  let at = html.indexOf("<script>")
  while (at !== -1) {
    const end = html.indexOf("</script>", at)
    scripts.push(html.slice(at + "<script>".length, end))
    at = html.indexOf("<script>", end)
  }
  return scripts
}

/** The OpenAPI document the page's starting script passes to Scalar as `content`. */
const embeddedDocument = (script: string): unknown => {
  const start = script.indexOf("content: ")
  const end = script.lastIndexOf("}")
  assert.isTrue(start !== -1 && end > start, "the starting script passes `content`")
  // What stays between `content: ` and the call's closing `})` is the document, as JSON.
  const rest = script.slice(start + "content: ".length, script.lastIndexOf("}", end - 1) + 1)
  return JSON.parse(rest)
}

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`

/** The directives of a policy, by name. */
const directives = (policy: string): ReadonlyMap<string, ReadonlyArray<string>> =>
  new Map(policy.split(";").map((directive) => {
    const [name = "", ...values] = directive.trim().split(/\s+/u)
    return [name, values] as const
  }))

const pages = [
  { page: DOCS_PATH, document: OPENAPI_PATH },
  { page: BACK_OFFICE_DOCS_PATH, document: BACK_OFFICE_OPENAPI_PATH }
] as const

layer(Env, { excludeTestServices: true })("API reference pages", (it) => {
  it.effect("HTML with nothing from another origin, this server's OpenAPI document embedded, a CSP of its scripts' hashes", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      for (const { page, document } of pages) {
        const reply = yield* server.raw.get(page)
        assert.strictEqual(reply.status, 200, page)
        assert.match(reply.headers.get("content-type") ?? "", /^text\/html\b/u, page)
        const html = reply.text

        // Every src and href is this origin's (relative); there is no script, style or link to load at all.
        const tags = tagsOf(html)
        assert.deepStrictEqual(tags.filter(({ name }) => name === "script").length, 2, `${page}: the bundle and the call that starts it`)
        for (const { name, attributes } of tags) {
          for (const key of ["src", "href", "srcset", "action", "data"]) {
            const value = attributes.get(key)
            if (value === undefined) continue
            assert.notMatch(value, /^\s*(?:[a-z][a-z\d+.-]*:|\/\/)/iu, `${page}: <${name} ${key}="${value}"> leaves the origin`)
          }
          assert.isFalse(name === "script" && attributes.has("src"), `${page}: an external script`)
          assert.isFalse(name === "link", `${page}: a <link>`)
        }
        // The CDN tag `HttpApiScalar.layerCdn` writes (the bundle itself names jsDelivr in strings).
        assert.isFalse(html.includes(`<script src="https://cdn.jsdelivr.net`), `${page}: the CDN script`)

        // The OpenAPI document it embeds is the one this server serves.
        const scripts = inlineScripts(html)
        assert.strictEqual(scripts.length, 2, page)
        const served = yield* server.raw.get(document)
        assert.strictEqual(served.status, 200, document)
        assert.deepStrictEqual(embeddedDocument(scripts[1] ?? ""), served.json, `${page} embeds ${document}`)

        // The policy: exactly these two scripts may run, no eval, nothing from elsewhere.
        const policy = reply.headers.get("content-security-policy") ?? ""
        const byName = directives(policy)
        assert.deepStrictEqual(byName.get("script-src"), scripts.map(sha256), `${page}: script-src`)
        assert.deepStrictEqual(byName.get("default-src"), ["'none'"], page)
        for (const [name, values] of byName) {
          for (const value of values) {
            assert.notMatch(value, /^(?:https?:|\*|'unsafe-eval'|'strict-dynamic')/u, `${page}: ${name} ${value}`)
          }
        }
        assert.deepStrictEqual(byName.get("frame-ancestors"), ["'none'"], page)
        assert.strictEqual(reply.headers.get("x-content-type-options"), "nosniff", page)
        assert.strictEqual(reply.headers.get("cache-control"), "no-cache", page)

        // Revalidated: the same page, the same headers, 304 with its ETag.
        const etag = reply.headers.get("etag") ?? ""
        assert.match(etag, /^"[\w-]{22}"$/u, page)
        const again = yield* server.raw.request(page, { headers: { "if-none-match": etag } })
        assert.strictEqual(again.status, 304, page)
        assert.strictEqual(again.text, "", page)
        assert.strictEqual(again.headers.get("content-security-policy"), policy, page)
        const second = yield* server.raw.get(page)
        assert.isTrue(second.text === html, `${page}: the same page again`)
        assert.strictEqual(second.headers.get("etag"), etag, page)
      }
      // Two APIs, two pages: each its own document (and so its own starting script's hash).
      const [publicPage, backOfficePage] = yield* Effect.forEach(pages, ({ page }) => server.raw.get(page))
      assert.notStrictEqual(
        publicPage?.headers.get("content-security-policy"),
        backOfficePage?.headers.get("content-security-policy")
      )
    }))

  it.effect("the page's headers are on the reference pages only", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const others = [
        yield* server.raw.get(OPENAPI_PATH),
        yield* server.raw.get(BACK_OFFICE_OPENAPI_PATH),
        yield* server.raw.get("/health/live"),
        yield* server.raw.get("/api/public/v1/students"),
        yield* server.raw.get("/api/public/v1/nothing-here"),
        yield* server.raw.get(`${DOCS_PATH}/`),
        yield* server.raw.post(DOCS_PATH),
        yield* server.raw.request(BACK_OFFICE_DOCS_PATH, { method: "DELETE" })
      ]
      assert.deepStrictEqual(others.map((reply) => reply.status), [200, 200, 200, 401, 404, 404, 405, 405])
      for (const [index, reply] of others.entries()) {
        assert.isNull(reply.headers.get("content-security-policy"), reply.text.slice(0, 200))
        // The OpenAPI documents (the first two) have ETags of their own (test/api/reference-compression.test.ts).
        if (index >= 2) assert.isNull(reply.headers.get("etag"))
      }
      // The 405 names GET (the route table knows both pages).
      assert.strictEqual(others[6]?.headers.get("allow"), "GET")
      assert.strictEqual(others[7]?.headers.get("allow"), "GET")
      // The panel keeps its own policy.
      const panel = yield* server.raw.get("/crm")
      assert.strictEqual(panel.headers.get("content-security-policy"), PANEL_POLICY)
    }))
})
