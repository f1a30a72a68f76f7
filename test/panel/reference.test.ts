/**
 * The API reference pages in a real headless Chromium, offline
 * (docs/decisions.md "API reference page"), against the real API process:
 * every request to another origin is aborted and recorded, and the page
 * must make none, raise no page error and break no line of its
 * Content-Security-Policy, and still render the reference, the public API's
 * and the back office's; "Test Request" reaches this API from the page,
 * and the search finds an endpoint. The public page's screenshot (1280x800) is
 * docs/images/reference-public.png, written there only with
 * UPDATE_SCREENSHOTS=1, else to a temporary directory. Here rather than in
 * test/api because the browser runs after the other files (vitest.config.ts).
 */
import { assert, layer } from "@effect/vitest"
import { BACK_OFFICE_DOCS_PATH, DOCS_PATH } from "@school/api/Server"
import { freePort } from "@school/runtime/Ports"
import { Context, Effect, Layer } from "effect"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Browser } from "playwright-core"
import { startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { closeClean, DESKTOP, launchBrowser, openPage, screenshotDirectory } from "./support.ts"

class ReferenceEnv extends Context.Service<ReferenceEnv, {
  readonly baseUrl: string
  readonly browser: Browser
}>()("test/panel/ReferenceEnv") {}

/** The API process over this file's database, and one browser for the file; both stopped when it ends. */
const Env = Layer.effect(
  ReferenceEnv,
  Effect.gen(function*() {
    const database = yield* TestDatabase
    const port = yield* freePort
    yield* Effect.orDie(startApi(database.url, port))
    const browser = yield* launchBrowser
    return ReferenceEnv.of({ baseUrl: `http://127.0.0.1:${port}`, browser })
  })
).pipe(Layer.provideMerge(TestDatabase.layer))

/**
 * Opens `path` with the network cut off at this origin: what asks for
 * another origin is aborted and kept; every request the page makes is kept.
 */
const openOffline = async (browser: Browser, baseUrl: string, path: string) => {
  const watched = await openPage(browser, DESKTOP)
  const origin = new URL(baseUrl).origin
  const elsewhere: Array<string> = []
  const requested: Array<string> = []
  await watched.context.route("**/*", async (route) => {
    const url = route.request().url()
    if (new URL(url).origin === origin) return route.continue()
    elsewhere.push(url)
    return route.abort("internetdisconnected")
  })
  watched.page.on("request", (request) => requested.push(request.url()))
  const consoleErrors: Array<string> = []
  watched.page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text())
  })
  const response = await watched.page.goto(`${baseUrl}${path}`)
  assert.strictEqual(response?.status(), 200, path)
  return { ...watched, origin, elsewhere, requested, consoleErrors }
}

/** Nothing asked for another origin: every request the page made (not data: or blob:) was to this one. */
const stayedHome = (opened: Awaited<ReturnType<typeof openOffline>>) => {
  assert.deepStrictEqual(opened.elsewhere, [], "no request to another origin")
  const away = opened.requested.filter((url) => !/^(?:data|blob):/u.test(url) && new URL(url).origin !== opened.origin)
  assert.deepStrictEqual(away, [], "no request to another origin")
  assert.deepStrictEqual(opened.consoleErrors, [], "no console error")
}

layer(Env, { excludeTestServices: true, timeout: 120_000 })("API reference pages in a browser, offline", (it) => {
  it.effect("the public API's reference renders with nothing from another origin; its screenshot", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* ReferenceEnv
      yield* Effect.promise(async () => {
        const opened = await openOffline(browser, baseUrl, DOCS_PATH)
        const { page } = opened
        // Scalar started (the inline bundle ran under the page's CSP) and drew the contract.
        await page.getByRole("heading", { name: "List students" }).first().waitFor({ state: "visible" })
        await page.getByText("School Management Service: Public API").first().waitFor({ state: "visible" })
        // The page as a reader sees it, once everything has settled.
        await page.waitForLoadState("networkidle")
        assert.strictEqual(await page.locator("script[src], link[href]").count(), 0, "no script or stylesheet loaded from anywhere")
        await page.screenshot({ path: join(screenshotDirectory(), "reference-public.png") })
        stayedHome(opened)

        // "Test Request" calls this API from the page (connect-src 'self'): without a key, 401.
        await page.getByRole("button", { name: "Test Request" }).first().click()
        const sent = page.waitForResponse((reply) => new URL(reply.url()).pathname.endsWith("/students"))
        await page.getByRole("button", { name: "Send" }).first().click()
        assert.strictEqual((await sent).status(), 401)
        await page.getByText("401").first().waitFor({ state: "visible" })
        // Not a docs image: for whoever reads the run (the temporary directory only).
        await page.screenshot({ path: join(tmpdir(), "school-panel-screenshots", "reference-test-request.png") })
        await page.keyboard.press("Escape")

        // The search (run in the page) finds another group's endpoint; its result opens it.
        await page.getByText("Search", { exact: true }).first().click()
        await page.keyboard.type("kopecks")
        await page.getByRole("option", { name: /List payments/u }).first().click()
        await page.getByRole("heading", { name: "List payments (amounts in whole kopecks)" }).first().waitFor({ state: "visible" })
        await page.screenshot({ path: join(tmpdir(), "school-panel-screenshots", "reference-search.png") })
        assert.deepStrictEqual(opened.elsewhere, [], "no request to another origin")
        assert.deepStrictEqual(opened.consoleErrors, [
          "Failed to load resource: the server responded with a status of 401 (Unauthorized)"
        ])
        await closeClean(opened)
      })
    }))

  it.effect("the back office's reference renders offline too", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* ReferenceEnv
      yield* Effect.promise(async () => {
        const opened = await openOffline(browser, baseUrl, BACK_OFFICE_DOCS_PATH)
        const { page } = opened
        await page.getByRole("heading", { name: "Sign in: sets the crm_session cookie and returns the token" }).first()
          .waitFor({ state: "visible" })
        await page.waitForLoadState("networkidle")
        stayedHome(opened)
        await closeClean(opened)
      })
    }))
})
