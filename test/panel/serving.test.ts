/**
 * How the API process serves the web panel (apps/api/src/http/Panel.ts;
 * docs/decisions.md "Back-office web panel"), over plain HTTP: each file of
 * the fixed list with its content type, the security headers (on the panel
 * only), revalidation with an ETag, no path that reaches another file, no
 * inline script and no address off this origin in the files, and the
 * browser code type-checked.
 */
import { assert, layer } from "@effect/vitest"
import { CONTENT_SECURITY_POLICY, PANEL_FILES, PANEL_HEADERS } from "@school/api/http/Panel"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import * as Http from "node:http"
import { fileURLToPath } from "node:url"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

const panelDirectory = fileURLToPath(new URL("../../apps/api/src/panel/", import.meta.url))

interface Reply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** A request with its path sent exactly as written (fetch would resolve `..` first). */
const send = (baseUrl: string, method: string, path: string, headers: Http.OutgoingHttpHeaders = {}) =>
  Effect.callback<Reply>((resume) => {
    const { hostname, port } = new URL(baseUrl)
    const request = Http.request({ hostname, port, method, path, headers }, (response) => {
      let body = ""
      response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
      response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, headers: response.headers, body })))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end()
  })

layer(Env, { excludeTestServices: true })("web panel serving", (it) => {
  it.effect("every file of the list: its content type, the security headers, no-cache with an ETag, 304 when unchanged", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      for (const [path, file, contentType] of PANEL_FILES) {
        const reply = yield* send(baseUrl, "GET", path)
        assert.strictEqual(reply.status, 200, path)
        assert.strictEqual(reply.headers["content-type"], contentType, path)
        assert.strictEqual(reply.body, readFileSync(`${panelDirectory}${file}`, "utf8"), path)
        for (const [name, value] of Object.entries(PANEL_HEADERS)) assert.strictEqual(reply.headers[name], value, `${path} ${name}`)
        assert.strictEqual(reply.headers["cache-control"], "no-cache", path)
        const etag = reply.headers["etag"]
        assert.match(etag ?? "", /^"[\w-]{22}"$/u, path)
        const again = yield* send(baseUrl, "GET", path, { "if-none-match": etag ?? "" })
        assert.strictEqual(again.status, 304, path)
        assert.strictEqual(again.body, "", path)
        assert.strictEqual(again.headers["etag"], etag, path)
        assert.strictEqual(again.headers["content-security-policy"], CONTENT_SECURITY_POLICY, path)
      }
      const policy = CONTENT_SECURITY_POLICY.split("; ")
      for (const directive of ["script-src 'self'", "frame-ancestors 'none'", "default-src 'self'", "base-uri 'none'"]) {
        assert.include(policy, directive)
      }
      assert.notInclude(CONTENT_SECURITY_POLICY, "unsafe-inline")
      assert.notInclude(CONTENT_SECURITY_POLICY, "unsafe-eval")
    }))

  it.effect("no path reaches anything but the list: traversal, other files of the folder, the API's sources are 404", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const paths = [
        "/crm/../package.json",
        "/crm/%2e%2e/package.json",
        "/crm/..%2fpackage.json",
        "/crm/%2e%2e%2f%2e%2e%2fServer.ts",
        "/crm/tsconfig.json",
        "/crm/contract.d.ts",
        "/crm/index.html",
        "/crm/app.js/",
        "/crm/app.js%00",
        "/crm/APP.JS",
        "/crm//app.js",
        "/crm/panel/app.js",
        "/crm/../../apps/api/src/Server.ts",
        "/crm/..\\..\\package.json"
      ]
      for (const path of paths) {
        const reply = yield* send(baseUrl, "GET", path)
        assert.strictEqual(reply.status, 404, `${path}: ${reply.body}`)
        assert.notInclude(reply.body, "devDependencies", path)
        assert.notInclude(reply.body, "compilerOptions", path)
      }
      const slash = yield* send(baseUrl, "GET", "/crm/")
      assert.strictEqual(slash.status, 308)
      assert.strictEqual(slash.headers["location"], "/crm")
      const post = yield* send(baseUrl, "POST", "/crm", { "content-type": "application/json" })
      assert.strictEqual(post.status, 405)
      assert.strictEqual(post.headers["allow"], "GET")
    }))

  it.effect("the headers are the panel's only: the APIs' answers do not carry its policy", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      for (const path of ["/health/live", "/api/crm/v1/sessions/current", "/api/public/v1/students"]) {
        const reply = yield* send(baseUrl, "GET", path)
        assert.isUndefined(reply.headers["content-security-policy"], path)
      }
    }))

  it.effect("the list is the folder: every file but the type check's (its settings, the contract's types) is served, and no script is inline or from elsewhere", () =>
    Effect.sync(() => {
      const served = PANEL_FILES.map(([, file]) => file).toSorted()
      const present = readdirSync(panelDirectory).filter((file) => file !== "tsconfig.json" && !file.endsWith(".d.ts")).toSorted()
      assert.deepStrictEqual(served, present)
      const html = readFileSync(`${panelDirectory}index.html`, "utf8")
      const scripts = [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/gu)]
      assert.isAbove(scripts.length, 0)
      for (const [tag, body] of scripts) {
        assert.match(tag, /src="\/crm\/[\w-]+\.js"/u)
        assert.strictEqual(body?.trim(), "")
      }
      for (const file of present) {
        const content = readFileSync(`${panelDirectory}${file}`, "utf8")
        assert.notMatch(content, /\bstyle="/u, `${file}: an inline style attribute`)
        assert.notMatch(content, /\son\w+="/u, `${file}: an inline event handler`)
        assert.notMatch(content, /\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write/u, `${file}: markup from text`)
        // No asset from another origin: the panel works offline (the snippet's package name is not a URL).
        assert.notMatch(content.replaceAll("http://www.w3.org/2000/svg", ""), /(?:src|href)=["']?(?:https?:)?\/\//u, file)
        assert.notMatch(content, /\bimport\s[^;]*from\s+["']https?:/u, file)
      }
    }))

  it.effect("the browser code passes tsc --checkJs, strict, against the DOM's types", () =>
    Effect.callback<void>((resume) => {
      const tsc = fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url))
      execFile(process.execPath, [tsc, "-p", `${panelDirectory}tsconfig.json`], (error, stdout, stderr) => {
        resume(Effect.sync(() => assert.isNull(error, `${stdout}${stderr}`)))
      })
    }), { timeout: 60_000 })
})
