/**
 * The web panel's screenshots (docs/back-office.md "Web panel"): sign-in,
 * API keys (with a key just issued), the webhook list, one webhook with its
 * journal, notifications and leads, each at a desktop (1280x800) and a phone
 * (360x740) width, of a school set up through the real API and dispatcher
 * processes. They are taken on every run, so a page that stops rendering
 * fails here; they are written to docs/images/ only with UPDATE_SCREENSHOTS=1,
 * else to a temporary directory (docs/decisions.md "Back-office web panel").
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { join } from "node:path"
import type { Page } from "playwright-core"
import * as BackOffice from "../support/BackOffice.ts"
import * as Receivers from "../support/Receivers.ts"
import {
  closeClean,
  crmAs,
  DESKTOP,
  Env,
  openPage,
  PanelEnv,
  PHONE,
  screenshotDirectory,
  signIn,
  until
} from "./support.ts"

const Id = Schema.Struct({ id: Schema.Int })
const Journal = Schema.Array(Schema.Struct({ status: Schema.String }))
const Hook = Schema.Struct({ status: Schema.String })

layer(Env, { excludeTestServices: true, timeout: 120_000 })("web panel screenshots", (it) => {
  it.effect("sign-in, keys, webhooks, one webhook's journal, notifications and leads, at desktop and phone widths", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      const healthy = yield* Receivers.startReceiver()
      const failing = yield* Receivers.startReceiver(() => Receivers.status(503))
      yield* Effect.promise(async () => {
        // The school: keys, three webhooks (active with deliveries, problematic, disabled), leads with a task.
        const owner = await crmAs(baseUrl, school.emails.owner)
        await owner.post("/api-keys", { name: "Accounting export", scope: "read", expires_at: "2027-06-30T23:59:59+03:00" })
        const old = Schema.decodeUnknownSync(Id)(await owner.post("/api-keys", { name: "Old CRM sync", scope: "write" }))
        await owner.delete(`/api-keys/${old.id}`)
        const main = Schema.decodeUnknownSync(Id)(
          await owner.post("/webhooks", { url: healthy.url.replace("/hook", "/webhooks/school"), events: ["lead.created", "payment.received"] })
        )
        const broken = Schema.decodeUnknownSync(Id)(
          await owner.post("/webhooks", { url: failing.url.replace("/hook", "/hooks/crm-sync"), events: ["student.created"] })
        )
        const paused = Schema.decodeUnknownSync(Id)(
          await owner.post("/webhooks", { url: healthy.url.replace("/hook", "/old-endpoint"), events: ["group.enrolled", "lesson.completed"] })
        )
        await owner.post(`/webhooks/${paused.id}/disable`)
        const funnel = Schema.decodeUnknownSync(Schema.Struct({ id: Schema.Int, statuses: Schema.Array(Id) }))(
          await owner.post("/funnels", {
            name: "Courses",
            statuses: [
              { name: "New", priority: 10 },
              { name: "Trial booked", priority: 20, auto_task_title: "Call to confirm the trial" },
              { name: "Won", priority: 30 }
            ]
          })
        )
        const leads = [
          ["Anna Petrova", "+7 999 123-45-67", "landing"],
          ["Ivan Sidorov", "+7 912 555-01-02", "instagram"],
          ["Maria Kuznetsova", "+7 903 777-88-99", "referral"]
        ]
        const created = []
        for (const [name, phone, source] of leads) {
          created.push(Schema.decodeUnknownSync(Id)(
            await owner.post("/leads", { name, phone, source, funnel_id: funnel.id, responsible_id: school.ids.owner })
          ))
        }
        const trial = funnel.statuses[1]
        if (trial !== undefined && created[0] !== undefined) await owner.post(`/leads/${created[0].id}/status`, { status_id: trial.id })
        await owner.post(`/webhooks/${main.id}/test`)
        await owner.post(`/webhooks/${broken.id}/test`)
        await until("the main webhook's deliveries are delivered", async () => {
          const journal = Schema.decodeUnknownSync(Journal)(await owner.get(`/webhooks/${main.id}/deliveries`))
          return journal.length >= 4 && journal.every((entry) => entry.status === "delivered")
        })
        await until("the failing webhook is problematic", async () =>
          Schema.decodeUnknownSync(Hook)(await owner.get(`/webhooks/${broken.id}`)).status === "problematic")

        const directory = screenshotDirectory()
        const shoot = async (page: Page, name: string, width: "desktop" | "phone") => {
          await page.waitForLoadState("networkidle")
          await page.locator(".loading").waitFor({ state: "detached" })
          // No horizontal overflow at any width: the page is as wide as the window.
          const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - document.documentElement.clientWidth")
          assert.strictEqual(overflow, 0, `${name} at ${width} overflows by ${overflow}px`)
          await page.screenshot({ path: join(directory, `panel-${name}-${width}.png`), fullPage: true })
        }

        for (const [width, viewport] of [["desktop", DESKTOP], ["phone", PHONE]] as const) {
          const watched = await openPage(browser, viewport)
          const { page } = watched
          await page.goto(`${baseUrl}/crm`)
          await page.getByLabel("E-mail").waitFor()
          await page.getByLabel("E-mail").blur()
          await shoot(page, "sign-in", width)
          await signIn(page, baseUrl, school.emails.owner)

          await page.getByRole("link", { name: "API keys" }).click()
          await page.getByLabel("Name").fill(width === "desktop" ? "Website" : "Mobile app")
          await page.getByLabel("Scope").selectOption("write")
          await page.getByRole("button", { name: "Issue key" }).click()
          await page.locator(".secret-value").waitFor()
          await page.evaluate("window.scrollTo(0, 0)")
          await shoot(page, "keys", width)

          await page.getByRole("link", { name: "Webhooks", exact: true }).click()
          await page.locator("tbody tr").nth(2).waitFor()
          await shoot(page, "webhooks", width)

          await page.goto(`${baseUrl}/crm#/webhooks/${main.id}`)
          await page.locator("tbody tr[data-status='delivered']").first().waitFor()
          await shoot(page, "webhook", width)

          await page.getByRole("link", { name: /Notifications/u }).click()
          await page.locator(".notification").nth(1).waitFor()
          await shoot(page, "notifications", width)

          await page.getByRole("link", { name: "Leads" }).click()
          await page.locator("tbody tr").nth(2).waitFor()
          await shoot(page, "leads", width)
          await closeClean(watched)
        }
      })
    }), { timeout: 90_000 })
})
