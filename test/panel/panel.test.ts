/**
 * The web panel at /crm in a real browser (docs/back-office.md "Web
 * panel"), against the real API and dispatcher processes, this file's
 * database and loopback receivers: signing in and out, wrong passwords and
 * TOO_MANY_ATTEMPTS, a session that expires, API keys shown once,
 * TARIFF_TOO_LOW explained, webhooks with their secret shown once, a test
 * event delivered in the journal, a failing receiver making the
 * subscription problematic and the unread count rise, disabling after a
 * confirmation that says what it means and the events skipped meanwhile
 * sent later, when a pending delivery is tried next, deleting after a
 * confirmation that says what goes, the webhook limits (a 429's wait
 * counted down on held buttons, a 409 on creation), roles, and values
 * holding `<img src=x onerror=alert(1)>` shown as text; staff (adding,
 * a role changed, disabled after a confirmation and enabled, sessions ended,
 * what the role may not change shown disabled with why) and changing one's
 * own password. Last, the
 * screenshots of docs/back-office.md "Web panel": sign-in, API keys (a key
 * just issued), the webhook list, one webhook's journal, the disable and
 * delete confirmations, events skipped while disabled, the wait after too
 * many test sends, notifications, leads, staff and the password form at
 * 1280x800 and 390x844 (checked at 360 px too); taken
 * on every run (a page that stops rendering or overflows fails here),
 * written to docs/images/ only with UPDATE_SCREENSHOTS=1, else to a
 * temporary directory (docs/decisions.md "Back-office web panel"). One
 * file, so one browser and one pair of processes serve them all and the
 * suite's other timing tests share the machine with as little as possible.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Webhook } from "standardwebhooks"
import * as BackOffice from "../support/BackOffice.ts"
import * as Receivers from "../support/Receivers.ts"
import { subscription } from "../dispatcher/support.ts"
import {
  closeClean,
  crmAs,
  DESKTOP,
  Env,
  openPage,
  PanelEnv,
  LIMITS,
  PHONE,
  shoot,
  signIn,
  tabs,
  unreadCount,
  until,
  XSS
} from "./support.ts"

const text = (value: unknown): string => typeof value === "string" ? value : ""
const Id = Schema.Struct({ id: Schema.Int })
const Journal = Schema.Array(Schema.Struct({ status: Schema.String }))
const Hook = Schema.Struct({ status: Schema.String })
const Skipped = Schema.Struct({ skipped_events: Schema.Int })

layer(Env, { excludeTestServices: true, timeout: 120_000 })("web panel", (it) => {
  it.effect("sign in, who and role; a wrong password and TOO_MANY_ATTEMPTS said as such; sign out", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      yield* Effect.promise(async () => {
        const watched = await openPage(browser)
        const { page } = watched
        await page.goto(`${baseUrl}/crm`)
        await page.getByRole("heading", { name: "Sign in" }).waitFor()

        // Empty fields: errors next to them, nothing sent.
        await page.getByRole("button", { name: "Sign in" }).click()
        await page.getByText("Enter your e-mail.").waitFor()
        assert.strictEqual(await page.getByLabel("E-mail").getAttribute("aria-invalid"), "true")

        await page.getByLabel("E-mail").fill(school.emails.administrator)
        await page.getByLabel("Password").fill("not the password")
        await page.getByRole("button", { name: "Sign in" }).click()
        await page.getByText("Wrong e-mail or password.").waitFor()
        // docs/back-office.md "Signing in": after 5 failures in a row for one e-mail, attempts wait.
        for (let attempt = 0; attempt < 5 && !(await page.getByText("Too many failed sign-ins.").isVisible()); attempt++) {
          await page.getByRole("button", { name: "Sign in" }).click()
          await page.locator("button[type='submit']:not([disabled])").waitFor()
        }
        await page.getByText("Too many failed sign-ins.").waitFor()
        assert.match(await page.locator(".notice-error").innerText(), /Wait \d+ seconds? and try again/u)

        // By keyboard alone: Tab moves from field to field to the button, which shows where focus is.
        await page.getByLabel("E-mail").fill(school.emails.owner)
        await page.keyboard.press("Tab")
        assert.strictEqual(await page.evaluate<string>("document.activeElement.name"), "password")
        await page.keyboard.type(BackOffice.PASSWORD)
        await page.keyboard.press("Tab")
        assert.strictEqual(await page.evaluate<string>("document.activeElement.textContent"), "Sign in")
        assert.strictEqual(await page.evaluate<string>("getComputedStyle(document.activeElement).outlineStyle"), "solid")
        await page.keyboard.press("Enter")
        await page.locator("#sign-out").waitFor()
        assert.strictEqual(await page.locator(".who-name").innerText(), "Olga Owner")
        assert.strictEqual(await page.locator(".who-role").innerText(), "owner")
        assert.deepStrictEqual(await tabs(page), ["Leads", "API keys", "Webhooks", "Notifications"])
        // Full access lands on the webhooks.
        await page.getByRole("heading", { name: "Webhooks", level: 1 }).waitFor()

        await page.locator("#sign-out").click()
        await page.getByText("You have signed out.").waitFor()
        assert.isTrue(await page.locator("#nav").isHidden())
        // The session is over on the server too: a reload stays signed out.
        await page.reload()
        await page.getByRole("heading", { name: "Sign in" }).waitFor()
        assert.strictEqual(await page.locator("#sign-out").count(), 0)
        await closeClean(watched)
      })
    }))

  it.effect("a session that expires sends the reader back to sign in with a clear message, then back where they were", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const sql = yield* SqlClient.SqlClient
      const school = yield* BackOffice.staffSchool("pro")
      const watched = yield* Effect.promise(async () => {
        const watched = await openPage(browser)
        await signIn(watched.page, baseUrl, school.emails.owner)
        await watched.page.getByRole("link", { name: "API keys" }).click()
        await watched.page.getByRole("heading", { name: "Keys", level: 2 }).waitFor()
        // Every call of the page has answered (the unread count too), so the next one is the first to meet the end.
        await watched.page.waitForLoadState("networkidle")
        return watched
      })
      yield* sql`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE school_id = ${school.schoolId}`.pipe(Effect.orDie)
      yield* Effect.promise(async () => {
        const { page } = watched
        await page.getByRole("link", { name: "Notifications" }).click()
        await page.getByText("Your session has expired or was ended. Sign in again to continue.").waitFor()
        assert.isTrue(await page.locator("#nav").isHidden())
        await page.getByLabel("E-mail").fill(school.emails.owner)
        await page.getByLabel("Password").fill(BackOffice.PASSWORD)
        await page.getByRole("button", { name: "Sign in" }).click()
        await page.getByRole("heading", { name: "Notifications", level: 1 }).waitFor()
        assert.isTrue(page.url().endsWith("#/notifications"))
        await closeClean(watched)
      })
    }))

  it.effect("API keys: the issued key is shown once with a copy button, gone on reload; revoked after a confirmation; a hostile name is text", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("extended")
      yield* Effect.promise(async () => {
        const watched = await openPage(browser)
        const { page } = watched
        await watched.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseUrl })
        await signIn(page, baseUrl, school.emails.administrator)
        await page.getByRole("link", { name: "API keys" }).click()
        await page.getByText("No keys yet.").waitFor()

        await page.getByLabel("Name").fill(XSS)
        await page.getByLabel("Scope").selectOption("write")
        await page.getByRole("button", { name: "Issue key" }).click()
        await page.getByText("Copy this key now: it will not be shown again.").waitFor()
        const key = await page.locator(".secret-value").innerText()
        assert.match(key, /^svc_[a-z0-9]{8}_\S+$/u)
        assert.strictEqual(await page.locator("#new-key-title").innerText(), `New key “${XSS}”`)
        await page.getByRole("button", { name: "Copy" }).click()
        await page.getByText("Copied").waitFor()
        assert.strictEqual(await page.evaluate<string>("navigator.clipboard.readText()"), key)

        // The list: the name as text, the prefix only.
        const row = page.locator("tbody tr").first()
        assert.strictEqual(await row.locator("td").first().innerText(), XSS)
        assert.strictEqual(await row.locator("code").innerText(), `${key.split("_").slice(0, 2).join("_")}_…`)
        assert.strictEqual(await page.locator("img:not(.brand img)").count(), 0)

        // Shown once: after a reload the page holds no trace of the secret.
        await page.reload()
        await page.locator("tbody tr").first().waitFor()
        assert.notInclude(await page.content(), key.split("_")[2] ?? key)
        assert.strictEqual(await page.locator(".secret-value").count(), 0)

        // Revoking asks first; Cancel keeps the key.
        await page.getByRole("button", { name: "Revoke" }).click()
        const dialog = page.getByRole("dialog")
        assert.strictEqual(await dialog.getByRole("heading").innerText(), `Revoke the key “${XSS}”?`)
        await dialog.getByRole("button", { name: "Cancel" }).click()
        assert.strictEqual(await page.locator("tbody tr .badge").first().innerText(), "active")
        await page.getByRole("button", { name: "Revoke" }).click()
        await page.getByRole("dialog").getByRole("button", { name: "Revoke key" }).click()
        await page.getByText(`The key “${XSS}” is revoked.`).waitFor()
        await until("the key shows revoked", async () => (await page.locator("tbody tr .badge").first().innerText()) === "revoked")
        assert.strictEqual(await page.getByRole("button", { name: "Revoke" }).count(), 0)
        assert.strictEqual(await page.locator("img:not(.brand img)").count(), 0)
        await closeClean(watched)
      })
    }))

  it.effect("TARIFF_TOO_LOW is explained as a matter of the plan, naming the plan that is needed", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("standard")
      yield* Effect.promise(async () => {
        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.owner)
        await page.getByRole("link", { name: "API keys" }).click()
        await page.getByLabel("Name").fill("Website")
        await page.getByRole("button", { name: "Issue key" }).click()
        const explained = page.locator(".notice-warning")
        await explained.getByText("API keys are not part of this school's plan.").waitFor()
        const said = await explained.innerText()
        assert.include(said, "Extended")
        assert.include(said, "standard plan")
        assert.strictEqual(await page.locator(".secret-value").count(), 0)
        await closeClean(watched)
      })
    }))

  it.effect("webhooks: created with its secret shown once; a test event shows delivered in the journal; edit, disable, enable, resend", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      const receiver = yield* Receivers.startReceiver()
      yield* Effect.promise(async () => {
        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.owner)
        await page.getByText("No webhooks yet.").waitFor()

        // The server's field errors show next to the fields.
        await page.getByRole("button", { name: "Create webhook" }).click()
        await page.locator("[data-field='url'] .field-error:not([hidden])").waitFor()
        await page.locator("[data-field='events'] .field-error:not([hidden])").waitFor()

        await page.getByLabel("Receiver URL").fill(receiver.url)
        await page.getByRole("checkbox", { name: /lead\.created/u }).check()
        await page.getByRole("checkbox", { name: /payment\.received/u }).check()
        await page.getByRole("button", { name: "Create webhook" }).click()
        await page.getByText("Copy the secret now: it will not be shown again.").waitFor()
        const secret = await page.locator(".secret-value").innerText()
        assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/u)
        assert.include(await page.locator("pre.code").innerText(), "standardwebhooks")
        // The list is read again after the secret shows: wait for the new row, not the old empty list.
        await page.locator("tbody tr .chips li").nth(1).waitFor()
        assert.deepStrictEqual(await page.locator("tbody tr .chips li").allInnerTexts(), ["lead.created", "payment.received"])
        assert.strictEqual(await page.locator("tbody tr .badge").innerText(), "active")

        await page.getByRole("link", { name: "Open this webhook" }).click()
        await page.getByRole("heading", { name: /^Webhook #\d+$/u, level: 1 }).waitFor()
        assert.strictEqual(await page.locator(".secret-value").count(), 0)
        await page.getByText("No deliveries yet.").waitFor()

        await page.getByRole("button", { name: "Send test event" }).click()
        // The journal refreshes by itself: the delivery appears, then shows delivered.
        await until(
          "the test event shows delivered",
          async () => (await page.locator("tbody tr[data-status='delivered']").count()) === 1
        )
        const row = page.locator("tbody tr").first()
        assert.deepStrictEqual(
          (await row.locator("td").allInnerTexts()).slice(0, 4),
          ["webhook.test", "delivered", "204", "1"]
        )
        // The secret the panel showed verifies what the receiver got.
        const [request] = await Effect.runPromise(receiver.waitFor(1))
        const signed = new Webhook(secret).verify(request?.body ?? "", {
          "webhook-id": text(request?.headers["webhook-id"]),
          "webhook-timestamp": text(request?.headers["webhook-timestamp"]),
          "webhook-signature": text(request?.headers["webhook-signature"])
        })
        assert.strictEqual(Schema.decodeUnknownSync(Schema.Struct({ event: Schema.String }))(signed).event, "webhook.test")

        // One delivery: attempts and body; resend.
        await row.getByRole("link", { name: /details/u }).click()
        await page.getByRole("heading", { name: "Attempts" }).waitFor()
        assert.deepStrictEqual((await page.locator("tbody tr td").allInnerTexts()).filter((cell) => cell === "204"), ["204"])
        assert.include(await page.locator("pre.code").innerText(), "\"event\": \"webhook.test\"")
        await page.getByRole("button", { name: "Send again" }).click()
        await page.getByText(/Queued again as delivery #\d+, with the same body\./u).waitFor()
        await Effect.runPromise(receiver.waitFor(2))
        assert.strictEqual(receiver.received[1]?.body, receiver.received[0]?.body)
        await page.getByRole("link", { name: /← Webhook #/u }).click()

        // Edit: the URL and the events.
        await page.getByRole("button", { name: "Edit" }).click()
        await page.getByRole("checkbox", { name: /student\.created/u }).check()
        await page.getByRole("checkbox", { name: /payment\.received/u }).uncheck()
        await page.getByRole("button", { name: "Save" }).click()
        await page.getByText("Saved.").waitFor()
        assert.deepStrictEqual(await page.locator(".facts .chips li").allInnerTexts(), ["student.created", "lead.created"])

        await page.getByRole("button", { name: "Disable" }).click()
        await page.getByRole("dialog").getByRole("button", { name: "Disable webhook" }).click()
        await page.getByText(/^Webhook #\d+ is disabled\.$/u).waitFor()
        await page.locator(".summary .notice-info").getByText("Disabled: nothing is sent.").waitFor()
        assert.strictEqual(await page.locator(".summary-head .badge").innerText(), "disabled")
        // The server refuses it while disabled: not offered, the reason beside it.
        assert.isTrue(await page.getByRole("button", { name: "Send test event" }).isDisabled())
        await page.getByText("Sending a test event is not possible while the webhook is disabled: enable it first.").waitFor()
        await page.getByRole("button", { name: "Enable" }).click()
        await page.getByText("Enabled: deliveries resume.").waitFor()
        assert.strictEqual(await page.locator(".summary-head .badge").innerText(), "active")
        await closeClean(watched)
      })
    }), { timeout: 60_000 })

  it.effect("a failing receiver: the subscription shows problematic, the unread count rises, the notification links to it; failed deliveries sent again", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      const receiver = yield* Receivers.startReceiver(() => Receivers.status(500))
      yield* Effect.promise(async () => {
        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.owner)
        await page.getByLabel("Receiver URL").fill(receiver.url)
        await page.getByRole("checkbox", { name: /lead\.created/u }).check()
        await page.getByRole("button", { name: "Create webhook" }).click()
        await page.getByRole("link", { name: "Open this webhook" }).click()
        assert.strictEqual(await unreadCount(page), 0)

        await page.getByRole("button", { name: "Send test event" }).click()
        // 4 attempts 100 ms apart, all 500: failed; the page (refreshing by itself) shows it.
        await until("the delivery shows failed", async () => (await page.locator("tbody tr[data-status='failed']").count()) === 1)
        await until("the subscription shows problematic", async () => (await page.locator(".summary-head .badge").innerText()) === "problematic")
        assert.deepStrictEqual(
          (await page.locator("tbody tr").first().locator("td").allInnerTexts()).slice(0, 4),
          ["webhook.test", "failed", "500", "4"]
        )
        await page.getByText("Deliveries to this receiver keep failing.").waitFor()
        await until("the unread count rises", async () => (await unreadCount(page)) === 1)

        await page.getByRole("link", { name: /Notifications/u }).click()
        const notification = page.locator(".notification.unread")
        await notification.waitFor()
        assert.strictEqual(await notification.locator(".notification-kind").innerText(), "Webhook failing")
        await notification.getByRole("link", { name: /Open webhook #\d+/u }).click()
        await page.getByRole("heading", { name: /^Webhook #\d+$/u, level: 1 }).waitFor()
        assert.strictEqual(await page.locator(".summary-head .badge").innerText(), "problematic")

        // The receiver is fixed: send the failed deliveries again.
        receiver.setBehaviour(() => Receivers.ok)
        await page.getByRole("button", { name: "Send again" }).click()
        await page.getByText("1 delivery is queued again.").waitFor()
        await until("the resent delivery shows delivered", async () => (await page.locator("tbody tr[data-status='delivered']").count()) === 1)

        await page.getByRole("link", { name: /Notifications/u }).click()
        await page.getByRole("button", { name: "Mark as read" }).click()
        await until("the unread count falls", async () => (await unreadCount(page)) === 0)
        await page.getByText("Everything is read.").waitFor()
        await closeClean(watched)
      })
    }), { timeout: 60_000 })

  it.effect("disabling asks first and says what it means; events while disabled are journaled skipped, nothing is sent; enabling sends nothing; Send skipped events sends them", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      const receiver = yield* Receivers.startReceiver()
      yield* Effect.promise(async () => {
        const owner = await crmAs(baseUrl, school.emails.owner)
        const hook = Schema.decodeUnknownSync(Id)(await owner.post("/webhooks", { url: receiver.url, events: ["lead.created"] }))
        const skippedEvents = async () => Schema.decodeUnknownSync(Skipped)(await owner.get(`/webhooks/${hook.id}`)).skipped_events
        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.administrator)
        await page.goto(`${baseUrl}/crm#/webhooks/${hook.id}`)
        await page.getByText("No deliveries yet.").waitFor()

        // The confirmation says what disabling does; Cancel keeps it active.
        await page.getByRole("button", { name: "Disable" }).click()
        const dialog = page.getByRole("dialog")
        assert.strictEqual(await dialog.getByRole("heading").innerText(), `Disable webhook #${hook.id}?`)
        assert.deepStrictEqual(await dialog.locator("p").allInnerTexts(), [
          `While it is disabled, nothing is sent to ${receiver.url}.`,
          "Each event it would have received is recorded as skipped in the journal, with no attempt and no request.",
          "Enabling it again sends nothing by itself. The skipped events can be sent later with “Send skipped events”."
        ])
        assert.strictEqual(await page.evaluate<string>("document.activeElement.textContent"), "Cancel")
        await dialog.getByRole("button", { name: "Cancel" }).click()
        await dialog.waitFor({ state: "detached" })
        assert.strictEqual(await page.locator(".summary-head .badge").innerText(), "active")
        assert.strictEqual(Schema.decodeUnknownSync(Hook)(await owner.get(`/webhooks/${hook.id}`)).status, "active")

        await page.getByRole("button", { name: "Disable" }).click()
        await dialog.getByRole("button", { name: "Disable webhook" }).click()
        await page.getByText(/^Webhook #\d+ is disabled\.$/u).waitFor()
        await page.locator(".summary .notice-info").getByText("Disabled: nothing is sent.").waitFor()
        assert.strictEqual(await page.locator(".summary-head .badge").innerText(), "disabled")

        // Two events while it is disabled: journaled skipped, never sent.
        await owner.post("/leads", { phone: "+7 999 000-00-01", name: "Skipped one" })
        await owner.post("/leads", { phone: "+7 999 000-00-02", name: "Skipped two" })
        await until("the two events are journaled skipped", async () => (await skippedEvents()) === 2)
        await page.reload()
        await page.getByText("2 events were skipped while this webhook was disabled").waitFor()
        const skipped = page.locator("tbody tr[data-status='skipped']")
        await until("both show skipped", async () => (await skipped.count()) === 2)
        assert.deepStrictEqual(
          (await skipped.first().locator("td").allInnerTexts()).slice(0, 4),
          ["lead.created", "skipped\nnot sent: disabled", "—", "0"]
        )

        // One of them: never tried, and said so, with the id its receiver will see.
        await skipped.first().getByRole("link", { name: /details/u }).click()
        await page.getByText(/^This event happened while the webhook was disabled: it was recorded, not sent\./u).waitFor()
        await page.getByText("Not tried yet.").waitFor()
        const facts = await page.locator(".facts dd").allInnerTexts()
        assert.include(facts, "skipped\nnot sent: disabled")
        assert.match(facts.at(-1) ?? "", /^msg_\w+$/u)
        await page.goBack()

        // Enabling sends nothing by itself, and says so.
        await page.getByRole("button", { name: "Enable" }).click()
        await page.getByText("Enabled: deliveries resume. The skipped events are not sent by themselves: use “Send skipped events” to send them.")
          .waitFor()
        await new Promise((done) => setTimeout(done, 1_000))
        assert.strictEqual(receiver.received.length, 0)
        assert.strictEqual(await skippedEvents(), 2)
        await page.getByText("2 events were skipped while this webhook was disabled").waitFor()

        await page.getByRole("button", { name: "Send skipped events" }).click()
        await page.getByText("2 skipped events are queued; they show in the deliveries below.").waitFor()
        await page.locator(".notice-skipped").waitFor({ state: "detached" })
        const sent = await Effect.runPromise(receiver.waitFor(2))
        assert.sameMembers(sent.map((request) => text(request.headers["x-service-event"])), ["lead.created", "lead.created"])
        await until("the two sent show delivered", async () => (await page.locator("tbody tr[data-status='delivered']").count()) === 2)
        assert.strictEqual(await skippedEvents(), 0)
        await closeClean(watched)
      })
    }), { timeout: 60_000 })

  it.effect("a pending delivery says when it is tried next: a countdown while it is near, else the time", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const sql = yield* SqlClient.SqlClient
      const school = yield* BackOffice.staffSchool("pro")
      const receiver = yield* Receivers.startReceiver()
      const owner = yield* Effect.promise(() => crmAs(baseUrl, school.emails.owner))
      const hook = Schema.decodeUnknownSync(Id)(yield* Effect.promise(() => owner.post("/webhooks", { url: receiver.url, events: ["lead.created"] })))
      yield* Effect.promise(async () => {
        await owner.post("/leads", { phone: "+7 999 000-00-03", name: "Retried" })
        await Effect.runPromise(receiver.waitFor(1))
      })
      // Two retries as the dispatcher records them after a failed attempt: one due in 42 s, one in 2 hours.
      yield* sql`
        INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, resend_of, resend_key, body, attempts,
                                        response_code, last_attempt_at, next_attempt_at)
        SELECT school_id, subscription_id, event_id, event, id, nextval('webhook_deliveries_resend_key'), body, 1, 503, now(),
               now() + make_interval(secs => later)
        FROM webhook_deliveries, unnest(ARRAY[7200, 42]) AS due (later)
        WHERE school_id = ${school.schoolId} AND subscription_id = ${hook.id}
        ORDER BY later DESC`.pipe(Effect.orDie)
      yield* Effect.promise(async () => {
        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.owner)
        await page.goto(`${baseUrl}/crm#/webhooks/${hook.id}`)
        const pending = page.locator("tbody tr[data-status='pending'] .state-detail")
        await until("both retries show", async () => (await pending.count()) === 2)
        const soon = /^next attempt in (\d+) s$/u.exec(await pending.first().innerText())
        assert.isNotNull(soon, await pending.first().innerText())
        assert.isTrue(Number(soon?.[1]) <= 42 && Number(soon?.[1]) >= 30, soon?.[1])
        assert.match(await pending.nth(1).innerText(), /^next attempt at \d{1,2} \w{3,4} \d{4}, \d{2}:\d{2}:\d{2}$/u)
        await until("the countdown runs", async () => Number(/(\d+) s$/u.exec(await pending.first().innerText())?.[1]) < Number(soon?.[1]), 5_000)
        await closeClean(watched)
      })
    }))

  it.effect("deleting a webhook asks first and says what goes; Cancel keeps it; Delete removes it and returns to the list", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      yield* Effect.promise(async () => {
        const owner = await crmAs(baseUrl, school.emails.owner)
        const url = "http://127.0.0.1:9/hooks/old-site"
        const keptUrl = "http://127.0.0.1:9/hooks/new-site"
        const hook = Schema.decodeUnknownSync(Id)(await owner.post("/webhooks", { url, events: ["lead.created"] }))
        await owner.post("/webhooks", { url: keptUrl, events: ["lead.created"] })
        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.owner)
        await page.goto(`${baseUrl}/crm#/webhooks/${hook.id}`)
        await page.getByText("No deliveries yet.").waitFor()

        await page.getByRole("button", { name: "Delete" }).click()
        const dialog = page.getByRole("dialog")
        assert.strictEqual(await dialog.getByRole("heading").innerText(), `Delete webhook #${hook.id}?`)
        assert.deepStrictEqual(await dialog.locator("p, li").allInnerTexts(), [
          "This deletes, for good:",
          `the subscription to ${url};`,
          "its pending deliveries: they will not be sent;",
          "its journal of deliveries;",
          "its signing secret.",
          "It cannot be undone. To receive these events again, create a new webhook: it gets a new secret."
        ])
        // Focus starts on Cancel, so Enter alone deletes nothing.
        assert.strictEqual(await page.evaluate<string>("document.activeElement.textContent"), "Cancel")
        await page.keyboard.press("Enter")
        await dialog.waitFor({ state: "detached" })
        await owner.get(`/webhooks/${hook.id}`)
        assert.strictEqual(await page.getByRole("heading", { name: `Webhook #${hook.id}`, level: 1 }).count(), 1)

        await page.getByRole("button", { name: "Delete" }).click()
        await dialog.getByRole("button", { name: "Delete webhook" }).click()
        await page.getByRole("heading", { name: "Webhooks", level: 1 }).waitFor()
        await page.getByText(`Webhook #${hook.id} is deleted, with its pending deliveries, its journal and its secret.`).waitFor()
        await page.locator("tbody tr").first().waitFor()
        assert.deepStrictEqual(await page.locator("tbody tr a.url").allInnerTexts(), [keptUrl])
        assert.strictEqual((await owner.request("GET", `/webhooks/${hook.id}`)).status, 404)
        // Its address now says so.
        await page.goto(`${baseUrl}/crm#/webhooks/${hook.id}`)
        await page.getByText("Not found.").waitFor()
        await closeClean(watched)
      })
    }))

  it.effect("the action limit: a 429 says how long to wait and holds the buttons, counting down, until Retry-After has passed; no double submit; a 409 on create shows the server's message", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      const receiver = yield* Receivers.startReceiver()
      yield* Effect.promise(async () => {
        const owner = await crmAs(baseUrl, school.emails.owner)
        const hook = Schema.decodeUnknownSync(Id)(await owner.post("/webhooks", { url: receiver.url, events: ["lead.created"] }))
        // All but one of the minute's calls.
        for (let call = 1; call < Number(LIMITS.WEBHOOK_ACTIONS_PER_MINUTE); call++) await owner.post(`/webhooks/${hook.id}/test`)
        const watched = await openPage(browser)
        const { page } = watched
        // The page's clock, to move past Retry-After without waiting a minute.
        await page.clock.install()
        await signIn(page, baseUrl, school.emails.owner)
        await page.goto(`${baseUrl}/crm#/webhooks/${hook.id}`)
        const sendTest = page.getByRole("button", { name: "Send test event" })
        const sendFailed = page.getByRole("button", { name: "Send again" })
        await sendTest.waitFor()

        // While its call is in flight the button is disabled, and another click sends nothing.
        const calls: Array<string> = []
        page.on("request", (request) => {
          if (request.url().endsWith(`/webhooks/${hook.id}/test`)) calls.push(request.method())
        })
        let answer = () => {}
        const held = new Promise<void>((done) => (answer = done))
        await page.route(`**/webhooks/${hook.id}/test`, async (route) => {
          await held
          await route.continue()
        })
        await sendTest.click()
        assert.isTrue(await sendTest.isDisabled())
        assert.strictEqual(await sendTest.getAttribute("aria-busy"), "true")
        await sendTest.dispatchEvent("click")
        answer()
        await page.getByText("A webhook.test event is queued; it shows in the deliveries below.").waitFor()
        await page.unroute(`**/webhooks/${hook.id}/test`)
        assert.deepStrictEqual(calls, ["POST"])
        assert.isFalse(await sendTest.isDisabled())

        // One call too many: the wait, and every button of the limited calls held, counting down.
        await sendTest.click()
        const wait = page.locator(".action-message .notice-warning .notice-title")
        await wait.waitFor()
        const said = /^Too many test sends: try again in (\d+) s$/u.exec(await wait.innerText())
        assert.isNotNull(said, await wait.innerText())
        const seconds = Number(said?.[1])
        assert.isTrue(seconds >= 1 && seconds <= 60, `${seconds}`)
        assert.isTrue(await sendTest.isDisabled())
        assert.isTrue(await sendFailed.isDisabled())
        assert.match(await sendTest.getAttribute("data-wait") ?? "", /^\d+ s$/u)
        await until("the wait counts down", async () => Number(/(\d+) s$/u.exec(await wait.innerText())?.[1]) < seconds, 5_000)
        assert.isTrue(await sendTest.isDisabled())

        // Once Retry-After has passed, they are offered again.
        await page.clock.fastForward(seconds * 1_000)
        await page.getByText("You can try again now.").waitFor()
        assert.isFalse(await sendTest.isDisabled())
        assert.isFalse(await sendFailed.isDisabled())
        assert.isNull(await sendTest.getAttribute("data-wait"))

        // The server's minute has not passed: refused again; the delivery page holds its Send again too.
        await sendTest.click()
        await wait.waitFor()
        await page.locator("tbody tr").first().getByRole("link", { name: /details/u }).click()
        await page.getByRole("heading", { name: "Attempts" }).waitFor()
        const resend = page.getByRole("button", { name: "Send again" })
        assert.isTrue(await resend.isDisabled())
        assert.match(await resend.getAttribute("data-wait") ?? "", /^\d+ s$/u)

        // As many subscriptions as the school may have: the server's 409 message, next to the form.
        for (let count = 1; count < Number(LIMITS.WEBHOOK_MAX_SUBSCRIPTIONS); count++) {
          await owner.post("/webhooks", { url: `${receiver.url}/${count}`, events: ["lead.created"] })
        }
        await page.getByRole("link", { name: "Webhooks", exact: true }).click()
        await page.getByLabel("Receiver URL").fill(`${receiver.url}/one-more`)
        await page.getByRole("checkbox", { name: /lead\.created/u }).check()
        await page.getByRole("button", { name: "Create webhook" }).click()
        const refused = page.locator(".form-problem .notice-error")
        await refused.waitFor()
        const reply = await owner.request("POST", "/webhooks", { url: `${receiver.url}/one-more`, events: ["lead.created"] })
        const expected = BackOffice.expectError(reply, 409, "CONFLICT")
        assert.include(expected.message, LIMITS.WEBHOOK_MAX_SUBSCRIPTIONS)
        assert.include(await refused.innerText(), expected.message)
        assert.strictEqual(await page.locator(".secret-value").count(), 0)
        await closeClean(watched)
      })
    }), { timeout: 60_000 })

  it.effect("a manager: leads and notifications only, a lead move shows its task, a webhook page answers the role's refusal; hostile names are text", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      // A webhook whose stored URL holds the markup (the API itself percent-encodes such a URL).
      yield* subscription(school.schoolId, `http://127.0.0.1:9/${XSS}`, ["lead.created"])
      yield* Effect.promise(async () => {
        const owner = await crmAs(baseUrl, school.emails.owner)
        const funnel = Schema.decodeUnknownSync(Schema.Struct({ id: Schema.Int }))(
          await owner.post("/funnels", {
            name: "Courses",
            statuses: [{ name: "New", priority: 10 }, { name: "Trial booked", priority: 20, auto_task_title: `Call ${XSS}` }]
          })
        )
        await owner.post("/leads", { phone: "+7 999 123-45-67", name: XSS, funnel_id: funnel.id, responsible_id: school.ids.manager })

        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.manager)
        assert.deepStrictEqual(await tabs(page), ["Leads", "Notifications"])
        await page.getByRole("heading", { name: "Leads", level: 1 }).waitFor()
        const row = page.locator("tbody tr").first()
        await row.waitFor()
        assert.strictEqual(await row.locator("td").first().innerText(), XSS)

        await row.getByRole("combobox").selectOption({ label: "Trial booked" })
        await row.getByRole("button", { name: "Move" }).click()
        await page.getByText(`Moved “${XSS}” to “Trial booked”.`).waitFor()
        await page.getByText(`Task created: “Call ${XSS}”, assigned to Maria Manager (you).`).waitFor()
        await until("the task notification is counted", async () => (await unreadCount(page)) === 1)
        await page.getByRole("link", { name: /Notifications/u }).click()
        assert.include(await page.locator(".notification-message").innerText(), XSS)

        // Not offered, and refused by the server when reached anyway.
        await page.goto(`${baseUrl}/crm#/webhooks`)
        await page.getByText("Not available for your role.").waitFor()
        assert.strictEqual(await page.getByRole("button", { name: "Create webhook" }).count(), 0)
        await page.goto(`${baseUrl}/crm#/keys`)
        await page.getByText("Not available for your role.").waitFor()
        assert.strictEqual(await page.locator("img:not(.brand img)").count(), 0)
        await closeClean(watched)

        // The owner sees the stored URL as those characters.
        const ownerPage = await openPage(browser)
        await signIn(ownerPage.page, baseUrl, school.emails.owner)
        const link = ownerPage.page.locator("tbody tr a.url")
        assert.strictEqual(await link.innerText(), `http://127.0.0.1:9/${XSS}`)
        await link.click()
        assert.strictEqual(await ownerPage.page.locator(".facts .url").innerText(), `http://127.0.0.1:9/${XSS}`)
        assert.strictEqual(await ownerPage.page.locator("img:not(.brand img)").count(), 0)
        await closeClean(ownerPage)

        // A teacher has the notifications only.
        const teacher = await openPage(browser)
        await signIn(teacher.page, baseUrl, school.emails.teacher)
        assert.deepStrictEqual(await tabs(teacher.page), ["Notifications"])
        await teacher.page.getByRole("heading", { name: "Notifications", level: 1 }).waitFor()
        await teacher.page.getByText("No notifications.").waitFor()
        await closeClean(teacher)
      })
    }), { timeout: 60_000 })

  it.effect("staff: the owner adds a teacher, makes them a manager, disables them after a confirmation (their sign-in then fails), enables them, ends their sessions", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      yield* Effect.promise(async () => {
        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.owner)
        await page.locator("#who").getByRole("link", { name: "Staff" }).click()
        await page.getByRole("heading", { name: "Staff", level: 1 }).waitFor()
        const email = `pavel@${school.emails.owner.split("@")[1] ?? "x.test"}`
        const row = page.locator(`tbody tr[data-employee="${email}"]`)

        // The owner's own row: no controls, the reason instead.
        const ownerRow = page.locator(`tbody tr[data-employee="${school.emails.owner}"]`)
        await ownerRow.getByText("Nobody can change the owner's account.").waitFor()
        assert.strictEqual(await ownerRow.locator("button, select").count(), 0)

        // Adding: a short password is refused before anything is sent, in plain words.
        await page.getByLabel("Name").fill(XSS)
        await page.getByLabel("E-mail").fill(email)
        await page.getByLabel("Password").fill("short")
        await page.getByLabel("Role", { exact: true }).selectOption("teacher")
        await page.getByRole("button", { name: "Add employee" }).click()
        await page.getByText("Choose a password of at least 10 characters.").waitFor()
        await page.getByLabel("Password").fill("a third long one")
        await page.getByRole("button", { name: "Add employee" }).click()
        await page.getByText(`${XSS} is added as a teacher and can sign in with ${email}.`).waitFor()
        await row.waitFor()
        assert.strictEqual(await row.locator("td").first().innerText(), XSS)
        assert.strictEqual(await row.locator(".badge").innerText(), "active")
        assert.strictEqual(await page.locator("img:not(.brand img)").count(), 0)

        // The same e-mail again: the server's refusal under the field.
        await page.getByLabel("Name").fill("Pavel Again")
        await page.getByLabel("E-mail").fill(email)
        await page.getByLabel("Password").fill("a third long one")
        await page.getByRole("button", { name: "Add employee" }).click()
        await page.locator("[data-field='email'] .field-error").getByText("already").waitFor()

        await row.getByRole("combobox").selectOption("manager")
        await row.getByRole("button", { name: "Change role" }).click()
        await page.getByText(`${XSS} is now a manager.`, { exact: false }).waitFor()
        await until("the row shows the manager", async () => (await row.getByRole("combobox").inputValue()) === "manager")

        // Disabling asks first and says what it means; Cancel changes nothing.
        await row.getByRole("button", { name: "Disable" }).click()
        const dialog = page.getByRole("dialog")
        assert.strictEqual(await dialog.getByRole("heading").innerText(), `Disable ${XSS}?`)
        assert.include(await dialog.innerText(), `${XSS}'s sessions end now and ${XSS} cannot sign in until enabled again.`)
        await dialog.getByRole("button", { name: "Cancel" }).click()
        assert.strictEqual(await row.locator(".badge").innerText(), "active")
        await row.getByRole("button", { name: "Disable" }).click()
        await dialog.getByRole("button", { name: "Disable" }).click()
        await page.getByText(`${XSS} is disabled`, { exact: false }).waitFor()
        await until("the row shows disabled", async () => (await row.locator(".badge").innerText()) === "disabled")

        // The disabled employee cannot sign in: the same message as a wrong password.
        const other = await openPage(browser)
        await other.page.goto(`${baseUrl}/crm`)
        await other.page.getByLabel("E-mail").fill(email)
        await other.page.getByLabel("Password").fill("a third long one")
        await other.page.getByRole("button", { name: "Sign in" }).click()
        await other.page.getByText("Wrong e-mail or password.").waitFor()

        await row.getByRole("button", { name: "Enable" }).click()
        await page.getByText(`${XSS} is enabled and can sign in again.`).waitFor()
        await until("the row shows active", async () => (await row.locator(".badge").innerText()) === "active")
        await signIn(other.page, baseUrl, email, "a third long one")
        assert.strictEqual(await other.page.locator(".who-role").innerText(), "manager")

        // Ending their sessions asks first, then says how many ended; their page goes back to sign-in.
        await row.getByRole("button", { name: "End sessions" }).click()
        assert.include(await dialog.innerText(), "signed out on every device now")
        await dialog.getByRole("button", { name: "End sessions" }).click()
        await page.getByText(`1 session ended for ${XSS}.`).waitFor()
        await other.page.getByRole("link", { name: /Notifications/u }).click()
        await other.page.getByText("Your session has expired or was ended. Sign in again to continue.").waitFor()
        await closeClean(other)
        await closeClean(watched)
      })
    }), { timeout: 60_000 })

  it.effect("staff: an administrator sees the owner's, another administrator's and their own controls disabled, with the reason; a teacher has no Staff page", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      yield* Effect.promise(async () => {
        const owner = await crmAs(baseUrl, school.emails.owner)
        const second = `second-admin@${school.emails.owner.split("@")[1] ?? "x.test"}`
        await owner.post("/employees", { name: "Alla Admin", email: second, password: "a long password", role: "administrator" })
        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.administrator)
        await page.locator("#who").getByRole("link", { name: "Staff" }).click()
        const rowOf = (email: string) => page.locator(`tbody tr[data-employee="${email}"]`)
        await rowOf(second).waitFor()

        const ownerRow = rowOf(school.emails.owner)
        assert.strictEqual(await ownerRow.locator("button, select").count(), 0)
        await ownerRow.getByText("Nobody can change the owner's account.").waitFor()

        for (const [email, reason] of [
          [second, "Only the owner can change an administrator."],
          [school.emails.administrator, "You cannot change your own role or access."]
        ] as const) {
          const row = rowOf(email)
          await row.getByText(reason).waitFor()
          assert.isTrue(await row.getByRole("combobox").isDisabled(), email)
          for (const name of ["Disable", "End sessions"]) assert.isTrue(await row.getByRole("button", { name }).isDisabled(), `${email} ${name}`)
        }
        // Managers and teachers are the administrator's to change.
        for (const email of [school.emails.manager, school.emails.teacher]) {
          const row = rowOf(email)
          assert.isTrue(await row.getByRole("combobox").isEnabled(), email)
          assert.isTrue(await row.getByRole("button", { name: "Disable" }).isEnabled(), email)
          assert.strictEqual(await row.locator(".reason").count(), 0, email)
        }
        await closeClean(watched)

        const teacher = await openPage(browser)
        await signIn(teacher.page, baseUrl, school.emails.teacher)
        assert.strictEqual(await teacher.page.locator("#who").getByRole("link", { name: "Staff" }).count(), 0)
        await teacher.page.goto(`${baseUrl}/crm#/staff`)
        await teacher.page.getByText("Not available for your role.").waitFor()
        assert.strictEqual(await teacher.page.getByRole("button", { name: "Add employee" }).count(), 0)
        await closeClean(teacher)
      })
    }), { timeout: 60_000 })

  it.effect("change password: a wrong current password is said under its field; success says other sessions ended, and the new password signs in", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      yield* Effect.promise(async () => {
        const elsewhere = await openPage(browser)
        await signIn(elsewhere.page, baseUrl, school.emails.teacher)
        const watched = await openPage(browser)
        const { page } = watched
        await signIn(page, baseUrl, school.emails.teacher)
        await page.locator("#who").getByRole("link", { name: "Change password" }).click()
        await page.getByRole("heading", { name: "Change password", level: 1 }).waitFor()
        const fresh = "a brand new password"

        // The two new ones differ: said before anything is sent.
        await page.getByLabel("Current password").fill(BackOffice.PASSWORD)
        await page.getByLabel("New password", { exact: true }).fill(fresh)
        await page.getByLabel("Repeat the new password").fill(`${fresh}!`)
        await page.getByRole("button", { name: "Change password" }).click()
        await page.locator("[data-field='repeat'] .field-error").getByText("The two new passwords are not the same.").waitFor()

        // A wrong current password: the server's answer under that field, in the panel's words.
        await page.getByLabel("Current password").fill("not my password")
        await page.getByLabel("Repeat the new password").fill(fresh)
        await page.getByRole("button", { name: "Change password" }).click()
        const currentError = page.locator("[data-field='current_password'] .field-error")
        await currentError.waitFor()
        assert.strictEqual(await currentError.innerText(), "This is not your current password. Check it and try again.")
        assert.strictEqual(await page.getByLabel("Current password").getAttribute("aria-invalid"), "true")
        assert.isTrue(await page.locator("[data-field='repeat'] .field-error").isHidden())

        await page.getByLabel("Current password").fill(BackOffice.PASSWORD)
        await page.getByRole("button", { name: "Change password" }).click()
        await page.getByText("Your password is changed.").waitFor()
        await page.getByText("You were signed out everywhere else; this window stays signed in.").waitFor()
        assert.isTrue(await currentError.isHidden())

        // The other window's session ended; this one goes on.
        await elsewhere.page.reload()
        await elsewhere.page.getByRole("heading", { name: "Sign in" }).waitFor()
        await page.getByRole("link", { name: /Notifications/u }).click()
        await page.getByRole("heading", { name: "Notifications", level: 1 }).waitFor()
        assert.strictEqual(await page.locator(".who-name").innerText(), "Tim Teacher")
        await closeClean(elsewhere)

        // Signing in: the old password no longer works, the new one does.
        await page.locator("#sign-out").click()
        await page.getByText("You have signed out.").waitFor()
        await page.getByLabel("E-mail").fill(school.emails.teacher)
        await page.getByLabel("Password").fill(BackOffice.PASSWORD)
        await page.getByRole("button", { name: "Sign in" }).click()
        await page.getByText("Wrong e-mail or password.").waitFor()
        await signIn(page, baseUrl, school.emails.teacher, fresh)
        assert.strictEqual(await page.locator(".who-name").innerText(), "Tim Teacher")
        await closeClean(watched)
      })
    }), { timeout: 60_000 })

  it.effect("screenshots: sign-in, keys, webhooks, one webhook's journal, a failed delivery's attempts, events skipped while disabled, the disable and delete confirmations, the wait after too many sends, notifications and leads, staff and the password form, at desktop and phone widths", () =>
    Effect.gen(function*() {
      const { baseUrl, browser } = yield* PanelEnv
      const school = yield* BackOffice.staffSchool("pro")
      const healthy = yield* Receivers.startReceiver()
      const failing = yield* Receivers.startReceiver(() =>
        Receivers.status(503, JSON.stringify({ error: "maintenance", detail: "The CRM sync is being upgraded; back at 14:00." }))
      )
      yield* Effect.promise(async () => {
        // The school: keys, four webhooks (active with deliveries, problematic, disabled with events it
        // skipped, one whose test sends reach the limit), leads with a task.
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
          await owner.post("/webhooks", { url: healthy.url.replace("/hook", "/old-endpoint"), events: ["lead.created", "group.enrolled"] })
        )
        const limited = Schema.decodeUnknownSync(Id)(
          await owner.post("/webhooks", { url: healthy.url.replace("/hook", "/hooks/reports"), events: ["payment.received"] })
        )
        // Delivered once, then disabled: the leads below are skipped.
        await owner.post(`/webhooks/${paused.id}/test`)
        await until("the paused webhook's test is delivered", async () =>
          Schema.decodeUnknownSync(Journal)(await owner.get(`/webhooks/${paused.id}/deliveries`)).some((entry) => entry.status === "delivered"))
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
        await until("the paused webhook skipped the leads", async () =>
          Schema.decodeUnknownSync(Skipped)(await owner.get(`/webhooks/${paused.id}`)).skipped_events === leads.length)
        /** Test sends of the limited webhook until the server refuses one: its minute is full. */
        const exhaust = async () => {
          for (let call = 0; call <= Number(LIMITS.WEBHOOK_ACTIONS_PER_MINUTE); call++) {
            if ((await owner.request("POST", `/webhooks/${limited.id}/test`)).status === 429) return
          }
          assert.fail("no 429")
        }

        // Staff: one more member of each kind, one of them disabled.
        await owner.post("/employees", { name: "Irina Volkova", email: `irina@${school.emails.owner.split("@")[1] ?? "x.test"}`, password: "a long password", role: "manager" })
        const pavel = Schema.decodeUnknownSync(Id)(
          await owner.post("/employees", { name: "Pavel Smirnov", email: `pavel@${school.emails.owner.split("@")[1] ?? "x.test"}`, password: "a long password", role: "teacher" })
        )
        const disabled = await owner.request("PATCH", `/employees/${pavel.id}`, { disabled: true })
        assert.strictEqual(disabled.status, 200, disabled.text)

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

          // The confirmations, over the page as the window shows it.
          const dialog = page.getByRole("dialog")
          await page.getByRole("button", { name: "Disable" }).click()
          await dialog.waitFor()
          await shoot(page, "disable-confirm", width, { viewport: true })
          await dialog.getByRole("button", { name: "Cancel" }).click()
          await page.getByRole("button", { name: "Delete" }).click()
          await dialog.waitFor()
          await shoot(page, "delete-confirm", width, { viewport: true })
          await dialog.getByRole("button", { name: "Cancel" }).click()
          await dialog.waitFor({ state: "detached" })

          // One failed delivery's attempts: what happened in words and the start of the receiver's answer.
          await page.goto(`${baseUrl}/crm#/webhooks/${broken.id}`)
          await page.getByRole("link", { name: "Details" }).first().click()
          await page.locator(".attempt-excerpt").first().waitFor()
          await shoot(page, "delivery", width)

          await page.goto(`${baseUrl}/crm#/webhooks/${paused.id}`)
          await page.locator("tbody tr[data-status='skipped']").nth(leads.length - 1).waitFor()
          await page.locator(".notice-skipped").waitFor()
          await shoot(page, "webhook-skipped", width)

          await exhaust()
          await until("the limited webhook's tests are delivered", async () =>
            Schema.decodeUnknownSync(Journal)(await owner.get(`/webhooks/${limited.id}/deliveries`)).every((entry) => entry.status === "delivered"))
          await page.goto(`${baseUrl}/crm#/webhooks/${limited.id}`)
          await page.locator("tbody tr[data-status='delivered']").first().waitFor()
          await page.getByRole("button", { name: "Send test event" }).click()
          await page.locator(".action-message .notice-warning").waitFor()
          await page.evaluate("window.scrollTo(0, 0)")
          await shoot(page, "webhook-wait", width)

          await page.getByRole("link", { name: /Notifications/u }).click()
          await page.locator(".notification").nth(1).waitFor()
          await shoot(page, "notifications", width)

          await page.getByRole("link", { name: "Leads" }).click()
          await page.locator("tbody tr").nth(2).waitFor()
          await shoot(page, "leads", width)

          await page.locator("#who").getByRole("link", { name: "Staff" }).click()
          await page.locator("tbody tr").nth(5).waitFor()
          await shoot(page, "staff", width)

          // The password form with the server's answer to a wrong current password.
          await page.locator("#who").getByRole("link", { name: "Change password" }).click()
          await page.getByLabel("Current password").fill("not my password")
          await page.getByLabel("New password", { exact: true }).fill("a brand new password")
          await page.getByLabel("Repeat the new password").fill("a brand new password")
          await page.getByRole("button", { name: "Change password" }).click()
          await page.locator("[data-field='current_password'] .field-error").waitFor()
          await shoot(page, "password", width)
          await closeClean(watched)
        }
      })
    }), { timeout: 90_000 })
})
