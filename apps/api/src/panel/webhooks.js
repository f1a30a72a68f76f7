// @ts-check
/**
 * Webhook subscriptions (docs/back-office.md "Webhooks"): the list with each
 * one's state and events, and creating one, after which its signing secret
 * is shown here once with how a receiver verifies it.
 */
import * as Api from "./api.js"
import { EVENTS as EVENT_NAMES } from "./contract-lists.js"
import { badge, checkboxes, empty, field, form, h, hold, loading, notice, pager, problem, replace, secretBox, showOwnErrors, showSubmitFailure, table, time } from "./dom.js"

/** @typedef {import("./app.js").ViewContext} ViewContext */
/** @typedef {import("./api.js").WebhookStatus} WebhookStatus */
/** @typedef {import("./api.js").Webhook["events"][number]} Event */

/** What each event means, in a few words: every event of the contract has one. @type {{ readonly [Name in Event]: string }} */
const HINTS = {
  "student.created": "a student is registered",
  "lead.created": "a lead arrives",
  "group.enrolled": "a student joins a group",
  "lesson.completed": "a student attended a lesson",
  "payment.received": "a payment is posted"
}

/**
 * The events a subscription may receive (docs/integrators.md "Event catalog"), in the catalog's
 * order: the contract's list (contract-lists.js), each with its hint.
 */
export const EVENTS = EVENT_NAMES.map((value) => ({ value, label: value, hint: HINTS[value] }))

/** @param {WebhookStatus} status */
export const statusBadge = (status) =>
  badge(status, status === "active" ? "ok" : status === "problematic" ? "warn" : "off")

/** What the list shows above itself the next time it is drawn (e.g. that a webhook was deleted). */
let announcement = ""

/**
 * A message for the list to show once, the next time it is drawn.
 * @param {string} text
 */
export const announce = (text) => {
  announcement = text
}

/** @param {ReadonlyArray<string>} events */
export const eventList = (events) => h("ul", { class: "chips" }, events.map((event) => h("li", {}, h("code", {}, event))))

/** The receiver's side: a short verification snippet (the `standardwebhooks` libraries read the same headers). */
const VERIFY_SNIPPET = `import { Webhook } from "standardwebhooks"

const webhook = new Webhook(process.env.WEBHOOK_SECRET) // "whsec_…"
// rawBody: the request body exactly as received (a string, not parsed JSON)
const event = webhook.verify(rawBody, {
  "webhook-id": request.headers["webhook-id"],
  "webhook-timestamp": request.headers["webhook-timestamp"],
  "webhook-signature": request.headers["webhook-signature"]
}) // throws when the signature or the timestamp is wrong`

/**
 * The card that shows a new subscription's secret, once.
 * @param {import("./api.js").CreatedWebhook} created
 */
const secretCard = (created) =>
  h(
    "section",
    { class: "card card-highlight", "aria-labelledby": "new-webhook-title" },
    h("h2", { id: "new-webhook-title", tabindex: "-1" }, "Webhook created: its signing secret"),
    notice(
      "warning",
      "Copy the secret now: it will not be shown again.",
      "Give it to whoever runs the receiver. If it is lost, delete this webhook and create a new one."
    ),
    secretBox("Signing secret", created.secret),
    h("h3", {}, "Verifying a delivery"),
    h(
      "p",
      {},
      "Every delivery is signed with this secret. The ",
      h("code", {}, "webhook-id"),
      ", ",
      h("code", {}, "webhook-timestamp"),
      " and ",
      h("code", {}, "webhook-signature"),
      " headers follow Standard Webhooks, so the ",
      h("code", {}, "standardwebhooks"),
      " libraries (JavaScript, Python, Go, Ruby, PHP, Java, C#, Rust…) verify them as they are:"
    ),
    h("pre", { class: "code" }, h("code", {}, VERIFY_SNIPPET)),
    h(
      "p",
      { class: "muted" },
      "Each delivery also carries ",
      h("code", {}, "X-Service-Signature"),
      ": the hex HMAC-SHA256 of the raw body, keyed with the whole secret string."
    ),
    h("p", {}, h("a", { href: `#/webhooks/${created.id}`, class: "button button-secondary" }, "Open this webhook"))
  )

/** @param {ViewContext} context */
export const renderWebhooks = async (context) => {
  const { view } = context
  context.setTitle("Webhooks")
  const created = h("div", { class: "issued" })
  const list = h("section", { class: "card", "aria-labelledby": "webhooks-list-title" })
  const heading = () => h("h2", { id: "webhooks-list-title" }, "Subscriptions")
  let page = 1

  /** @returns {Promise<boolean>} whether the list could be read */
  const loadList = async () => {
    replace(list, heading(), loading("Loading webhooks…"))
    const reply = await Api.listWebhooks(page)
    if (!context.isCurrent()) return false
    if (!reply.ok) {
      replace(list, heading(), problem(reply, "Could not load the webhooks."))
      return false
    }
    replace(
      list,
      heading(),
      reply.data.length === 0
        ? empty("No webhooks yet.", h("p", { class: "muted" }, "Create one below to have events sent to your system."))
        : table(
          "Webhook subscriptions",
          ["Receiver URL", "Events", "State", "Created"],
          reply.data.map((hook) => [
            h("a", { href: `#/webhooks/${hook.id}`, class: "url clip clip-url", title: hook.url }, hook.url),
            eventList(hook.events),
            [
              statusBadge(hook.status),
              hook.skipped_events > 0
                ? h("span", { class: "small muted skipped-count" }, ` ${hook.skipped_events} skipped`)
                : null
            ],
            time(hook.created_at)
          ])
        ),
      pager(reply.meta, (next) => {
        page = next
        void loadList()
      })
    )
    return true
  }

  const url = field("Receiver URL", h("input", { type: "url", name: "url", required: true, autocomplete: "off", spellcheck: "false", placeholder: "https://example.com/webhooks" }), {
    hint: "An HTTPS address on the internet that answers 2xx when it has the event."
  })
  const events = checkboxes("Events", "events", EVENTS, [])
  const formProblem = h("div", { class: "form-problem" })
  const fields = { url, events }
  const submit = h("button", { type: "submit", class: "button button-primary", "aria-describedby": "create-held" }, "Create webhook")
  // Why Create webhook is not offered now, once the server has said the school is at its limit (docs/back-office.md "Webhook limits").
  const held = h("p", { class: "muted small reason-line", id: "create-held", hidden: true })
  const createForm = form({ class: "form", "aria-labelledby": "create-title" }, async () => {
    replace(formProblem)
    const reply = await Api.createWebhook({ url: url.control.value.trim(), events: events.values() })
    if (!context.isCurrent()) return
    if (reply.ok) {
      showOwnErrors(fields, {})
      createForm.reset()
      replace(created, secretCard(reply.data))
      created.querySelector("h2")?.focus()
      await loadList()
      return
    }
    showSubmitFailure(formProblem, fields, reply, "Could not create the webhook.")
    if (reply.code === "CONFLICT") {
      hold(submit, true)
      held.textContent = "The school has as many webhooks as it may have: delete one to add another."
      held.hidden = false
    }
  },
    h("h2", { id: "create-title" }, "New webhook"),
    url.element,
    events.element,
    formProblem,
    h("div", { class: "actions" }, submit, held)
  )

  if (announcement !== "") {
    replace(created, notice("success", null, announcement))
    announcement = ""
  }
  replace(
    view,
    h("h1", {}, "Webhooks"),
    h("p", { class: "lead" }, "The service sends the events you choose to your system's URL, signed, and retries when it does not answer."),
    created,
    list
  )
  // The form is offered only once the list shows the reader may manage webhooks.
  if (await loadList()) view.append(h("section", { class: "card" }, createForm))
}
