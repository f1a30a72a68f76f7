/**
 * The web panel's leads page and one webhook's pages in a real browser
 * (docs/back-office.md "Web panel"), against the real API and dispatcher
 * processes (test/panel/support.ts) and loopback receivers: the newest lead
 * first on page 1 and page 2 continuing it; each task naming its lead (its
 * name, else its phone) instead of an id; long names, comments, sources
 * and URLs cut, whole on hover (`title`), with nothing pushed out of view;
 * a failed delivery's attempts saying what happened in words (an error
 * answer, a time-out, a connection closed mid-answer, a refusal) with the
 * start of the receiver's answer shown as text, a hostile one included;
 * and, on a disabled webhook, Send test event, Send skipped events and
 * Send again disabled with the reason beside them (the server refuses them
 * then), offered again once it is enabled. Screenshots of these pages go to
 * support.ts `checkDirectory()` as panel-journal-<name>-<width>.png, for a
 * person to look at (never docs/images).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { Page } from "playwright-core"
import * as BackOffice from "../support/BackOffice.ts"
import * as Receivers from "../support/Receivers.ts"
import { closeClean, crmAs, DESKTOP, Env, openPage, PanelEnv, PHONE, shoot, signIn, until, XSS } from "./support.ts"

const Id = Schema.Struct({ id: Schema.Int })
const Journal = Schema.Array(Schema.Struct({ id: Schema.Int, status: Schema.String }))
const Funnel = Schema.Struct({ id: Schema.Int, statuses: Schema.Array(Schema.Struct({ id: Schema.Int, name: Schema.String })) })

/** A screenshot for a person to look at (support.ts `shoot`, never the docs' images), after the overflow checks. */
const snap = (page: Page, name: string, width: "desktop" | "phone", options: { viewport?: boolean } = {}) =>
  shoot(page, `journal-${name}`, width, { ...options, check: true })

/** Whether the element lies inside the window, sideways. */
const inView = async (page: Page, selector: ReturnType<Page["locator"]>) => {
  const box = await selector.boundingBox()
  const width = page.viewportSize()?.width ?? 0
  return box !== null && box.x >= 0 && box.x + box.width <= width
}

const LONG_NAME = `Anastasia ${"Konstantinovna-".repeat(16)}Rimskaya-Korsakova`.slice(0, 255)
// The server trims them: none ends with a space.
const LONG_COMMENT = `Wants the evening group; ${"called twice about the price and the timetable, ".repeat(70)}`.slice(0, 4000).trim()
const LONG_SOURCE = `partner-site-${"x".repeat(60)}`.slice(0, 64)

layer(Env, { excludeTestServices: true, timeout: 120_000 })("web panel: leads and the webhook journal", (it) => {
  it.effect("leads: the newest first on page 1, page 2 continues; a task names its lead; long names, comments and sources cut, whole on hover", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      yield* Effect.promise(async () => {
        const owner = await crmAs(baseUrl, school.emails.owner)
        const funnel = Schema.decodeUnknownSync(Funnel)(
          await owner.post("/funnels", {
            name: "Evening courses",
            statuses: [{ name: "New", priority: 10 }, { name: "Trial booked", priority: 20, auto_task_title: "Call to confirm the trial" }]
          })
        )
        const trial = funnel.statuses.find((status) => status.name === "Trial booked")?.id ?? 0
        // 21 leads, "Lead 1" the oldest; lead 2 has no name.
        const ids: Array<number> = []
        for (let n = 1; n <= 21; n++) {
          const body = n === 2
            ? { phone: "+7 999 000-00-02", funnel_id: funnel.id, responsible_id: school.ids.manager }
            : { phone: `+7 999 000-00-${String(n).padStart(2, "0")}`, name: `Lead ${n}`, funnel_id: funnel.id, responsible_id: school.ids.manager }
          ids.push(Schema.decodeUnknownSync(Id)(await owner.post("/leads", body)).id)
        }
        // The newest: a long name, comment and source.
        const long = Schema.decodeUnknownSync(Id)(
          await owner.post("/leads", {
            phone: "+7 999 000-00-99",
            name: LONG_NAME,
            comment: LONG_COMMENT,
            source: LONG_SOURCE,
            funnel_id: funnel.id,
            responsible_id: school.ids.manager
          })
        )
        // Tasks: for "Lead 1" (named), for lead 2 (no name: its phone), for the long one.
        for (const id of [ids[0], ids[1], long.id]) await owner.post(`/leads/${id}/status`, { status_id: trial })

        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.owner)
        await page.getByRole("link", { name: "Leads" }).click()
        await page.getByRole("heading", { name: "22 leads" }).waitFor()
        const leadRows = page.locator("section[aria-labelledby='leads-title'] tbody tr")
        await leadRows.first().waitFor()
        // Newest first: the long one, then Lead 21, 20…
        const firstCell = leadRows.first().locator("td").first()
        assert.strictEqual(await firstCell.locator(".clip-line").getAttribute("title"), LONG_NAME)
        assert.strictEqual(await firstCell.locator(".clip-lines").getAttribute("title"), LONG_COMMENT)
        assert.strictEqual(await leadRows.first().locator("td").nth(2).locator("[title]").getAttribute("title"), LONG_SOURCE)
        const names = async () => (await page.locator("section[aria-labelledby='leads-title'] tbody tr td:first-child .strong").allInnerTexts())
        const pageOne = await names()
        assert.strictEqual(pageOne.length, 20)
        assert.deepStrictEqual(pageOne.slice(1, 4), ["Lead 21", "Lead 20", "Lead 19"])
        assert.strictEqual(pageOne.at(-1), "Lead 3")
        // The long name takes one line: every column fits, the row's Move button in view.
        assert.isTrue(await inView(page, leadRows.first().getByRole("button", { name: "Move" })))
        const sideways = (section: string) =>
          page.locator(`section[aria-labelledby='${section}'] .table-wrap`).evaluate((wrap) => wrap.scrollWidth - wrap.clientWidth)
        assert.strictEqual(await sideways("leads-title"), 0)

        // The tasks name their leads: by name, by phone when it has none, the long one cut with its whole name on hover.
        const taskRows = page.locator("section[aria-labelledby='tasks-title'] tbody tr")
        await until("three tasks", async () => (await taskRows.count()) === 3)
        const leadCells = await taskRows.locator("td:nth-child(2)").allInnerTexts()
        assert.deepStrictEqual(leadCells.slice(0, 2), ["Lead 1", "+7 999 000-00-02"])
        assert.strictEqual(await taskRows.nth(2).locator("td:nth-child(2) [title]").getAttribute("title"), LONG_NAME)
        assert.notInclude((await page.locator("section[aria-labelledby='tasks-title']").innerText()), `#${ids[0]}`)
        assert.strictEqual(await sideways("tasks-title"), 0)
        await snap(page, "leads", "desktop")

        // Page 2 continues where page 1 ended.
        await page.getByRole("button", { name: "Next →" }).click()
        await page.getByText("Page 2 of 2").waitFor()
        await until("page 2 shows", async () => (await names()).length === 2)
        assert.deepStrictEqual(await names(), ["(no name)", "Lead 1"])

        // At a phone's width the long lead's row is a card that fits, its Move button in view.
        await page.setViewportSize(PHONE)
        await page.getByRole("button", { name: "← Previous" }).click()
        await page.getByText("Page 1 of 2").waitFor()
        await leadRows.first().locator(".clip-line").first().waitFor()
        assert.isTrue(await inView(page, leadRows.first().getByRole("button", { name: "Move" })))
        await snap(page, "leads", "phone")
        // What a phone shows at once: the top of the list, and the tasks.
        await snap(page, "leads-top", "phone", { viewport: true })
        await page.locator("section[aria-labelledby='tasks-title']").scrollIntoViewIfNeeded()
        await snap(page, "tasks", "phone", { viewport: true })
        await closeClean(watched)
      })
    }), { timeout: 90_000 })

  it.effect("a failed delivery: each attempt says what happened in words, with the start of the receiver's answer as text, a hostile one included", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      const hostile = `${XSS}<script>alert(2)</script> {"error":"database \\"main\\" is restarting"}`
      // 500 with a hostile body; no answer (the dispatcher's 2 s time-out); cut off mid-answer; 404 with an empty body.
      const receiver = yield* Receivers.startReceiver((index) =>
        index === 0
          ? Receivers.status(500, hostile)
          : index === 1
          ? Receivers.hang
          : index === 2
          ? Receivers.closeMidResponse
          : Receivers.status(404, "")
      )
      yield* Effect.promise(async () => {
        const owner = await crmAs(baseUrl, school.emails.owner)
        const hook = Schema.decodeUnknownSync(Id)(await owner.post("/webhooks", { url: receiver.url, events: ["lead.created"] }))
        await owner.post(`/webhooks/${hook.id}/test`)
        let delivery = 0
        await until("the delivery fails after 4 attempts", async () => {
          const [entry] = Schema.decodeUnknownSync(Journal)(await owner.get(`/webhooks/${hook.id}/deliveries`))
          delivery = entry?.id ?? 0
          return entry?.status === "failed"
        }, 30_000)

        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.owner)
        await page.goto(`${baseUrl}/crm#/webhooks/${hook.id}/deliveries/${delivery}`)
        await page.getByRole("heading", { name: "Attempts" }).waitFor()
        const rows = page.locator("section[aria-labelledby='attempts-title'] tbody tr")
        await until("four attempts", async () => (await rows.count()) === 4)
        assert.deepStrictEqual(await rows.locator(".attempt-outcome").allInnerTexts(), [
          "The receiver answered with an error of its own (HTTP 500).",
          "The receiver did not answer within 2 s.",
          "The connection closed before the receiver's answer was complete.",
          "The receiver refused the delivery (HTTP 404)."
        ])
        // The hostile answer is those characters: no element was made of it, no script ran (closeClean: no dialog).
        assert.strictEqual(await rows.first().locator(".attempt-excerpt").innerText(), hostile)
        assert.strictEqual(await page.locator("#main img, #main script").count(), 0)
        assert.deepStrictEqual(await rows.locator("td:last-child").allInnerTexts().then((cells) => cells.slice(1)), ["—", "—", "(empty)"])
        await snap(page, "delivery", "desktop")
        await page.setViewportSize(PHONE)
        await snap(page, "delivery", "phone")
        await closeClean(watched)
      })
    }), { timeout: 90_000 })

  it.effect("a disabled webhook: Send test event, Send skipped events and Send again are disabled with the reason; a long URL is cut, whole on hover; enabled, they are offered", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      const receiver = yield* Receivers.startReceiver()
      yield* Effect.promise(async () => {
        const owner = await crmAs(baseUrl, school.emails.owner)
        const url = `${receiver.url}/hooks/${"very-long-segment-".repeat(90)}end`
        const hook = Schema.decodeUnknownSync(Id)(await owner.post("/webhooks", { url, events: ["lead.created"] }))
        await owner.post(`/webhooks/${hook.id}/disable`)
        await owner.post("/leads", { phone: "+7 999 000-00-01", name: "While disabled" })
        let skipped = 0
        await until("the event is journaled skipped", async () => {
          const [entry] = Schema.decodeUnknownSync(Journal)(await owner.get(`/webhooks/${hook.id}/deliveries`))
          skipped = entry?.id ?? 0
          return entry?.status === "skipped"
        })

        const watched = await openPage(browser)
        const { page } = watched
        const calls: Array<string> = []
        page.on("request", (request) => {
          if (request.method() === "POST") calls.push(new URL(request.url()).pathname)
        })
        await signIn(page, baseUrl, school.emails.owner)
        await page.goto(`${baseUrl}/crm#/webhooks/${hook.id}`)
        await page.getByText("1 event was skipped while this webhook was disabled").waitFor()
        const reason = "is not possible while the webhook is disabled: enable it first."
        const expectations = [
          ["Send test event", `Sending a test event ${reason}`],
          ["Send skipped events", `Sending the skipped events ${reason}`],
          ["Send again", `Sending failed deliveries again ${reason}`]
        ] as const
        for (const [name, why] of expectations) {
          const control = page.getByRole("button", { name, exact: true })
          assert.isTrue(await control.isDisabled(), name)
          assert.strictEqual(await control.getAttribute("title"), why)
          // The reason is on the page, and is the button's description.
          const described = await control.getAttribute("aria-describedby")
          assert.strictEqual(await page.locator(`[id="${described}"]`).innerText(), why)
          assert.isTrue(await page.locator(`[id="${described}"]`).isVisible())
        }
        await page.getByRole("button", { name: "Send test event" }).click({ force: true })
        assert.notInclude(calls, `/api/crm/v1/webhooks/${hook.id}/test`)

        // The URL: three lines at most, whole on hover.
        const shown = page.locator(".facts .url")
        assert.strictEqual(await shown.getAttribute("title"), url)
        assert.isAtMost((await shown.boundingBox())?.height ?? 999, 80)
        await snap(page, "webhook-disabled", "desktop")

        // A dialog names it cut in the middle, whole on hover.
        await page.getByRole("button", { name: "Delete" }).click()
        const dialog = page.getByRole("dialog")
        const named = dialog.locator(".url")
        assert.strictEqual(await named.getAttribute("title"), url)
        assert.include(await named.innerText(), "…")
        assert.isTrue(await inView(page, dialog.getByRole("button", { name: "Delete webhook" })))
        await snap(page, "dialog-long-url", "desktop", { viewport: true })
        await dialog.getByRole("button", { name: "Cancel" }).click()
        await dialog.waitFor({ state: "detached" })

        // The skipped delivery's page: Send again is refused now, and says why.
        await page.goto(`${baseUrl}/crm#/webhooks/${hook.id}/deliveries/${skipped}`)
        await page.getByText("Not tried yet.").waitFor()
        const resend = page.getByRole("button", { name: "Send again" })
        assert.isTrue(await resend.isDisabled())
        await page.getByText(`Sending it again ${reason}`).waitFor()
        await page.getByText(/Enable the webhook, then Send again sends it to the current URL\./u).waitFor()
        await page.setViewportSize(PHONE)
        await snap(page, "delivery-disabled", "phone")
        await page.setViewportSize(DESKTOP)

        // Enabled: offered again, no reason shown.
        await page.goto(`${baseUrl}/crm#/webhooks/${hook.id}`)
        await page.getByRole("button", { name: "Enable" }).click()
        await page.getByText(/^Enabled: deliveries resume\./u).waitFor()
        for (const [name] of expectations) {
          const control = page.getByRole("button", { name, exact: true })
          await until(`${name} is offered`, async () => !(await control.isDisabled()))
          assert.isNull(await control.getAttribute("title"))
        }
        assert.strictEqual(await page.locator(".action-reason:visible").count(), 0)
        await page.getByRole("button", { name: "Send test event" }).click()
        await page.getByText("A webhook.test event is queued; it shows in the deliveries below.").waitFor()
        await page.setViewportSize(PHONE)
        await snap(page, "webhook-enabled", "phone")
        await closeClean(watched)
      })
    }), { timeout: 90_000 })
})
