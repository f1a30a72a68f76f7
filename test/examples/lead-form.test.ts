/**
 * examples/lead-form (docs/integrators.md "A lead form on your site") as a
 * real child process, started as the doc starts it (`npm run
 * example:lead-form`), against the real API process on this file's
 * database, both on free ports:
 *
 * - a browser's preflight to `POST /leads` gets no CORS grant (why the form
 *   posts to its own server);
 * - the form posted twice at once (a double click) and once more after (a
 *   retry) with the same hidden `idempotency_key` is one lead, and every
 *   post gets the thank-you page;
 * - a bad phone is the form again, 422, with the field's message in plain
 *   words and the visitor's input escaped, and no lead; it carries a new key,
 *   so the corrected form creates the lead.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { freePort } from "@school/runtime/Ports"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as Fixtures from "../support/Fixtures.ts"
import { environment, lines, startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** `npm run --silent example:lead-form` on `port`; stopped (SIGTERM, waited for) with the scope. Its JSON lines. */
const startForm = (env: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.callback<{ output: () => ReadonlyArray<Record<string, unknown>>; stop: () => Promise<void> }, Error>((resume) => {
      const child = spawn("npm", ["run", "--silent", "example:lead-form"], {
        cwd: ROOT,
        // npm's own settings of this test run left out: they would change what npm prints.
        env: Object.fromEntries(Object.entries(environment(env)).filter(([name]) => !name.startsWith("npm_"))),
        stdio: ["ignore", "pipe", "pipe"]
      })
      const exited = new Promise<void>((done) => child.once("exit", () => done()))
      let stdout = ""
      let stderr = ""
      const output = () =>
        lines(stdout).filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>)
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString()
        if (stdout.includes(`"step":"listening"`)) {
          resume(Effect.succeed({
            output,
            stop: async () => {
              child.kill("SIGTERM")
              await exited
            }
          }))
        }
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`lead form exited (${code}): ${stdout}${stderr}`))))
    }),
    ({ stop }) => Effect.promise(stop)
  )

interface Page {
  readonly status: number
  readonly html: string
}

const getPage = (url: string) =>
  Effect.promise(async (): Promise<Page> => {
    const response = await fetch(url)
    return { status: response.status, html: await response.text() }
  })

/** What a browser sends for the form: application/x-www-form-urlencoded. */
const postForm = (url: string, fields: Readonly<Record<string, string>>) =>
  Effect.promise(async (): Promise<Page> => {
    const response = await fetch(url, { method: "POST", body: new URLSearchParams(fields) })
    return { status: response.status, html: await response.text() }
  })

/** The hidden key a rendering of the form carries. */
const hiddenKey = (html: string): string => {
  const key = /name="idempotency_key" value="([^"]+)"/u.exec(html)?.[1]
  assert.isDefined(key, `a hidden idempotency_key in ${html}`)
  return key ?? ""
}

layer(TestDatabase.layer, { timeout: 120_000, excludeTestServices: true })("examples/lead-form against the real API", (it) => {
  it.effect("two posts of one form are one lead; a bad phone is the form again in plain words, and no lead", () =>
    Effect.scoped(Effect.gen(function*() {
      const database = yield* TestDatabase
      const apiPort = yield* freePort
      yield* startApi(database.url, apiPort)
      const api = `http://127.0.0.1:${apiPort}/api/public/v1`
      const { schoolId } = yield* Fixtures.school("pro", "Form school")
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
      const writeKey = yield* Fixtures.key(schoolId, { scope: "write" })

      // A page in a browser could not do it: no CORS grant for another origin.
      const preflight = yield* Effect.promise(() =>
        fetch(`${api}/leads`, {
          method: "OPTIONS",
          headers: { origin: "https://school.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization" }
        })
      )
      assert.isNull(preflight.headers.get("access-control-allow-origin"), "no CORS grant")

      const formPort = yield* freePort
      const form = yield* startForm({ PORT: String(formPort), API_URL: api, API_KEY: writeKey })
      const url = `http://127.0.0.1:${formPort}/`

      const first = yield* getPage(url)
      assert.strictEqual(first.status, 200)
      const key = hiddenKey(first.html)
      const fields = { idempotency_key: key, name: "Olga", phone: "+7 900 555-01-02", comment: "Evening classes, please" }
      // A double click: the same form twice at once; then the browser's retry of it.
      const clicks = yield* Effect.all([postForm(url, fields), postForm(url, fields)], { concurrency: 2 })
      const retry = yield* postForm(url, fields)
      for (const reply of [...clicks, retry]) {
        assert.strictEqual(reply.status, 200, reply.html)
        assert.include(reply.html, "Thank you, Olga! We will call you at +7 900 555-01-02 soon.")
      }
      const sql = yield* SqlClient.SqlClient
      const leads = yield* sql<{ name: string; phone: string; source: string; comment: string }>`
        SELECT name, phone, source, comment FROM leads WHERE school_id = ${schoolId}`
      assert.deepStrictEqual(leads, [{ name: "Olga", phone: "+7 900 555-01-02", source: "website", comment: "Evening classes, please" }])
      const created = form.output().filter((line) => line["step"] === "lead")
      assert.deepStrictEqual(created.map((line) => line["replayed"]).sort(), [false, true, true], "one creation, two replays")

      // A bad phone: the form again, in plain words, the input kept (escaped), a new key; no lead.
      const again = yield* getPage(url)
      const badKey = hiddenKey(again.html)
      assert.notStrictEqual(badKey, key, "each rendering has its own key")
      const bad = yield* postForm(url, { idempotency_key: badKey, name: "<b>Ivan</b>", phone: "12", comment: "" })
      assert.strictEqual(bad.status, 422, bad.html)
      assert.include(bad.html, "Please enter a phone number we can call: 5 to 20 digits; spaces, +, -, ( and ) are fine.")
      assert.include(bad.html, "&lt;b&gt;Ivan&lt;/b&gt;")
      assert.notInclude(bad.html, "<b>Ivan</b>")
      assert.notInclude(bad.html, "validation_failed", "plain words, not the API's codes")
      assert.strictEqual(yield* Fixtures.count("leads", schoolId), 1, "no lead from a bad phone")
      const fresh = hiddenKey(bad.html)
      assert.notStrictEqual(fresh, badKey, "the refusal is stored under the old key: the corrected form gets a new one")

      const corrected = yield* postForm(url, { idempotency_key: fresh, name: "Ivan", phone: "+7 900 555-09-09", comment: "" })
      assert.strictEqual(corrected.status, 200, corrected.html)
      assert.include(corrected.html, "Thank you, Ivan!")
      assert.strictEqual(yield* Fixtures.count("leads", schoolId), 2)
    })), 120_000)
})
