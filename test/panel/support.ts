/**
 * What the web panel's browser tests share (docs/back-office.md "Web
 * panel"): the real API and dispatcher processes over this file's database
 * (loopback receivers allowed, retries 100 ms apart so a failing receiver
 * gives up within a second, small webhook limits so a test reaches them in
 * a few calls), and one headless Chromium for the whole file,
 * from the `@sparticuz/chromium` package (no system browser), driven by
 * `playwright-core`. Each test opens its own browser context (its own
 * cookies) with a fixed locale and time zone, and every page records any
 * JavaScript dialog, page error and Content-Security-Policy report, which a
 * test asserts are none.
 */
import { assert } from "@effect/vitest"
import chromium from "@sparticuz/chromium"
import { freePort } from "@school/runtime/Ports"
import { Context, Effect, Layer, Schema } from "effect"
import { mkdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, type BrowserContext, chromium as playwright, type Page } from "playwright-core"
import { rawClient, type RawReply } from "../support/Clients.ts"
import { CRM, PASSWORD } from "../support/BackOffice.ts"
import { startApi, startDispatcher } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

/**
 * `@sparticuz/chromium`'s flags, less those that would make the tests lie
 * or flaky: it is built for serverless sandboxes and turns off the
 * same-origin policy and site isolation and runs in one process (where
 * closing a context can take the browser down). The rest, plus no outgoing
 * connections of Chromium's own (the machine's network is closed).
 */
const UNWANTED = new Set([
  "--single-process",
  "--disable-web-security",
  "--allow-running-insecure-content",
  "--disable-site-isolation-trials"
])

export const launchBrowser = Effect.acquireRelease(
  Effect.promise(async () =>
    playwright.launch({
      executablePath: await chromium.executablePath(),
      args: [
        ...chromium.args.filter((arg) => !UNWANTED.has(arg)),
        "--no-sandbox",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic"
      ],
      headless: true
    })
  ),
  (browser) => Effect.promise(() => browser.close())
)

/**
 * The API's webhook limits in these tests (docs/back-office.md "Webhook
 * limits"): subscriptions per school, and `test`, `resend` and `recover`
 * calls per subscription per minute.
 */
export const LIMITS = { WEBHOOK_MAX_SUBSCRIPTIONS: "4", WEBHOOK_ACTIONS_PER_MINUTE: "5" } as const

export class PanelEnv extends Context.Service<PanelEnv, {
  /** `http://127.0.0.1:<port>` of the API process. */
  readonly baseUrl: string
  readonly browser: Browser
}>()("test/panel/PanelEnv") {
  /** The API and dispatcher processes and the browser, for the file; stopped when the file ends. */
  static readonly layer: Layer.Layer<PanelEnv, never, TestDatabase> = Layer.effect(
    PanelEnv,
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* freePort
      const webhooks = { WEBHOOK_ALLOW_INSECURE_URLS: "true" }
      yield* Effect.orDie(startApi(database.url, port, { ...webhooks, ...LIMITS }))
      yield* Effect.orDie(startDispatcher(database.url, {
        ...webhooks,
        WEBHOOK_RETRY_DELAYS: "100ms,100ms,100ms",
        WEBHOOK_TIMEOUT: "2s"
      }))
      const browser = yield* launchBrowser
      return PanelEnv.of({ baseUrl: `http://127.0.0.1:${port}`, browser })
    })
  )
}

/** The environment of a panel test file: its database, the processes, the browser. */
export const Env = PanelEnv.layer.pipe(Layer.provideMerge(TestDatabase.layer))

export const DESKTOP = { width: 1280, height: 800 } as const
/** The phone screenshots' window (a common phone); pages are also checked at NARROW, the narrowest we support. */
export const PHONE = { width: 390, height: 844 } as const
export const NARROW = { width: 360, height: 740 } as const

/** What a page must never do; each test asserts these stay empty. */
export interface Watched {
  readonly page: Page
  readonly context: BrowserContext
  /** JavaScript dialogs (alert, confirm, prompt) that opened: an injected script would show here. */
  readonly dialogs: Array<string>
  /** Uncaught page errors and console lines about the Content-Security-Policy. */
  readonly errors: Array<string>
}

/** A fresh browser context and page at `viewport`, watched. */
export const openPage = async (browser: Browser, viewport: { width: number; height: number } = DESKTOP): Promise<Watched> => {
  const context = await browser.newContext({ viewport, locale: "en-GB", timezoneId: "UTC", deviceScaleFactor: 1 })
  context.setDefaultTimeout(15_000)
  const page = await context.newPage()
  const dialogs: Array<string> = []
  const errors: Array<string> = []
  page.on("dialog", (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`)
    void dialog.dismiss()
  })
  page.on("pageerror", (error) => errors.push(`page error: ${error.message}`))
  page.on("console", (message) => {
    if (/Content Security Policy/iu.test(message.text())) errors.push(`CSP: ${message.text()}`)
  })
  return { page, context, dialogs, errors }
}

/** No dialog opened, no page error, no CSP report; then the context is closed. */
export const closeClean = async (watched: Watched) => {
  assert.deepStrictEqual(watched.dialogs, [], "no JavaScript dialog may open")
  assert.deepStrictEqual(watched.errors, [], "no page error or CSP report")
  await watched.context.close()
}

/** Signs in through the form at `/crm` and waits for the signed-in header. */
export const signIn = async (page: Page, baseUrl: string, email: string, password: string = PASSWORD) => {
  await page.goto(`${baseUrl}/crm`)
  await page.getByLabel("E-mail").fill(email)
  await page.getByLabel("Password").fill(password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.locator("#sign-out").waitFor()
}

/** The texts of the navigation's tabs, in order (without the unread count). */
export const tabs = async (page: Page): Promise<ReadonlyArray<string>> =>
  page.locator("#nav a").evaluateAll((links) =>
    links.map((link) => (link.firstChild?.textContent ?? "").trim())
  )

/** The unread count on the Notifications tab (0 when it is hidden). */
export const unreadCount = async (page: Page): Promise<number> =>
  page.locator("#unread-count").evaluate((badge) => badge.hasAttribute("hidden") ? 0 : Number(badge.textContent))

/** Waits until `check` holds (polling every 100 ms), else fails with `what`. */
export const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 15_000) => {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`)
    await new Promise((done) => setTimeout(done, 100))
  }
}

/** The back office as one employee, for a test's setup (`Authorization: Session`). */
export const crmAs = async (baseUrl: string, email: string) => {
  const client = rawClient(baseUrl)
  const signedIn = await Effect.runPromise(client.post(`${CRM}/sessions`, { body: { email, password: PASSWORD } }))
  assert.strictEqual(signedIn.status, 201, signedIn.text)
  const token = Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Struct({ token: Schema.String }) }))(signedIn.json).data.token
  const send = (method: string, path: string, body?: unknown): Promise<RawReply> =>
    Effect.runPromise(client.request(`${CRM}${path}`, {
      method,
      headers: { authorization: `Session ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body })
    }))
  return {
    /** Any call, whatever it answers. */
    request: send,
    get: async (path: string) => {
      const reply = await send("GET", path)
      assert.strictEqual(reply.status, 200, reply.text)
      return Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Unknown }))(reply.json).data
    },
    post: async (path: string, body?: unknown) => {
      const reply = await send("POST", path, body)
      assert.isTrue(reply.status >= 200 && reply.status < 300, reply.text)
      return Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Unknown }))(reply.json).data
    },
    delete: async (path: string) => {
      const reply = await send("DELETE", path)
      assert.strictEqual(reply.status, 200, reply.text)
    }
  }
}

/** The `<img src=x onerror=alert(1)>` every free-text field is tried with. */
export const XSS = "<img src=x onerror=alert(1)>"

/**
 * Where screenshots go: docs/images/ when UPDATE_SCREENSHOTS=1 (to refresh
 * the ones docs/back-office.md shows), else a temporary directory, so
 * `npm test` never rewrites tracked files (docs/decisions.md "Back-office
 * web panel").
 */
export const screenshotDirectory = (): string => {
  const directory = process.env["UPDATE_SCREENSHOTS"] === "1"
    ? fileURLToPath(new URL("../../docs/images/", import.meta.url))
    : join(tmpdir(), "school-panel-screenshots")
  mkdirSync(directory, { recursive: true })
  return directory
}

/**
 * Where the screenshots a test takes for a person to look at go, never the
 * docs' images: a temporary directory, whatever UPDATE_SCREENSHOTS says.
 */
export const checkDirectory = (): string => {
  const directory = join(tmpdir(), "school-panel-checks")
  mkdirSync(directory, { recursive: true })
  return directory
}

/**
 * A screenshot of the page as `panel-<name>-<width>.png` in
 * `screenshotDirectory()` (`check`: in `checkDirectory()`), once it has
 * loaded, after checking it does not overflow sideways. The whole page, or
 * (`viewport`) what the window shows, e.g. a dialog over the page.
 */
export const shoot = async (
  page: Page,
  name: string,
  width: "desktop" | "phone",
  options: { viewport?: boolean; check?: boolean } = {}
) => {
  await page.waitForLoadState("networkidle")
  await page.locator(".loading").waitFor({ state: "detached" })
  // No horizontal overflow at any width: the page is as wide as the window (a phone's page at 360 px too).
  const overflows = () => page.evaluate<number>("document.documentElement.scrollWidth - document.documentElement.clientWidth")
  if (width === "phone") {
    const shown = page.viewportSize() ?? PHONE
    await page.setViewportSize(NARROW)
    const narrow = await overflows()
    assert.strictEqual(narrow, 0, `${name} at ${NARROW.width} px overflows by ${narrow}px`)
    await page.setViewportSize(shown)
  }
  const overflow = await overflows()
  assert.strictEqual(overflow, 0, `${name} at ${width} overflows by ${overflow}px`)
  const directory = options.check === true ? checkDirectory() : screenshotDirectory()
  await page.screenshot({ path: join(directory, `panel-${name}-${width}.png`), fullPage: options.viewport !== true })
}
