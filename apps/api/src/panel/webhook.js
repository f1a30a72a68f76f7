// @ts-check
/**
 * One webhook subscription (docs/back-office.md "Webhooks"; spec 6.1): its
 * state, URL and events, changing them, disabling and enabling it, sending a
 * test event, the journal of the last 50 deliveries (which refreshes by
 * itself while deliveries are pending, or for a while after something was
 * queued, since the dispatcher creates the delivery a moment later), sending
 * failed deliveries again, and one delivery with its attempts and body.
 */
import * as Api from "./api.js"
import { badge, button, checkboxes, empty, field, form, h, loading, notice, problem, replace, showFieldErrors, showSubmitFailure, table, time } from "./dom.js"
import { EVENTS, eventList, statusBadge } from "./webhooks.js"

/** @typedef {import("./app.js").ViewContext} ViewContext */
/** @typedef {import("./api.js").Webhook} Webhook */
/** @typedef {import("./api.js").JournalEntry} JournalEntry */

/** How often a journal with pending deliveries is read again. */
const REFRESH_MS = 1_500
/** After something is queued, the journal is watched this long even with nothing pending yet. */
const WATCH_AFTER_QUEUEING_MS = 30_000

/** @param {JournalEntry["status"]} status */
const deliveryBadge = (status) => badge(status, status === "delivered" ? "ok" : status === "failed" ? "bad" : "info")

/** @param {number | null} code */
const httpCode = (code) => code === null ? h("span", { class: "muted" }, "—") : h("code", {}, String(code))

/**
 * Calls `load` now and again every REFRESH_MS while `shouldContinue` says so
 * and the view is shown.
 * @param {ViewContext} context
 * @param {() => Promise<boolean>} load resolves whether to keep refreshing
 */
const autoRefresh = (context, load) => {
  /** @type {number | undefined} */
  let timer
  let stopped = false
  context.onLeave(() => {
    stopped = true
    clearTimeout(timer)
  })
  const tick = async () => {
    clearTimeout(timer)
    const again = await load()
    if (again && !stopped && context.isCurrent()) timer = window.setTimeout(() => void tick(), REFRESH_MS)
  }
  return { now: tick }
}

/** @param {ViewContext} context */
export const renderWebhook = async (context) => {
  const { view } = context
  const id = Number(context.params[0])
  context.setTitle(`Webhook #${id}`)
  replace(view, h("p", {}, h("a", { href: "#/webhooks", class: "back" }, "← All webhooks")), h("h1", {}, `Webhook #${id}`), loading())
  const first = await Api.getWebhook(id)
  if (!context.isCurrent()) return
  if (!first.ok) {
    replace(view, h("p", {}, h("a", { href: "#/webhooks", class: "back" }, "← All webhooks")), h("h1", {}, `Webhook #${id}`), problem(first, "Could not load the webhook."))
    return
  }
  /** @type {Webhook} */
  let hook = first.data
  let watchUntil = 0
  const summary = h("div", { class: "summary" })
  const message = h("div", { class: "action-message", "aria-live": "polite" })
  const editArea = h("div")
  const journalBody = h("div", { class: "journal" }, loading("Loading deliveries…"))
  const refreshing = h("p", { class: "refreshing muted", "aria-live": "polite" })
  let shownJournal = ""

  /** Something was queued: watch the journal for a while. */
  const queued = () => {
    watchUntil = Date.now() + WATCH_AFTER_QUEUEING_MS
    void journalRefresh.now()
  }

  const drawSummary = () => {
    const toggle = hook.status === "disabled"
      ? button("Enable", async () => {
        const reply = await Api.setWebhookEnabled(id, true)
        if (!reply.ok) return replace(message, problem(reply, "Could not enable the webhook."))
        hook = reply.data
        drawSummary()
        replace(message, notice("success", null, "Enabled: deliveries resume."))
      })
      : button("Disable", async () => {
        const reply = await Api.setWebhookEnabled(id, false)
        if (!reply.ok) return replace(message, problem(reply, "Could not disable the webhook."))
        hook = reply.data
        drawSummary()
        replace(message, notice("success", null, "Disabled: nothing is sent until it is enabled again. The journal is kept."))
      })
    replace(
      summary,
      h(
        "div",
        { class: "summary-head" },
        h("h1", {}, `Webhook #${hook.id}`),
        statusBadge(hook.status)
      ),
      hook.status === "problematic"
        ? notice("warning", "Deliveries to this receiver keep failing.", "It still receives events. Check the receiver, then send the failed deliveries again below.")
        : null,
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Receiver URL"),
        h("dd", { class: "url" }, hook.url),
        h("dt", {}, "Events"),
        h("dd", {}, eventList(hook.events)),
        h("dt", {}, "Created"),
        h("dd", {}, time(hook.created_at)),
        h("dt", {}, "Changed"),
        h("dd", {}, time(hook.updated_at))
      ),
      h(
        "div",
        { class: "actions" },
        button("Send test event", async () => {
          const reply = await Api.sendTest(id)
          if (!reply.ok) return replace(message, problem(reply, "Could not send a test event."))
          replace(message, notice("success", null, "A webhook.test event is queued; it shows in the deliveries below."))
          queued()
        }, { kind: "primary" }),
        button("Edit", async () => drawEdit()),
        toggle
      )
    )
  }

  const drawEdit = () => {
    const url = field("Receiver URL", h("input", { type: "url", name: "url", value: hook.url, required: true, spellcheck: "false" }))
    const events = checkboxes("Events", "events", EVENTS, hook.events)
    const formProblem = h("div", { class: "form-problem" })
    const fields = { url, events }
    const editForm = form({ class: "form card", "aria-labelledby": "edit-title" }, async () => {
      replace(formProblem)
      const reply = await Api.updateWebhook(id, { url: url.control.value.trim(), events: events.values() })
      if (!context.isCurrent()) return
      if (reply.ok) {
        hook = reply.data
        replace(editArea)
        drawSummary()
        replace(message, notice("success", null, "Saved."))
        return
      }
      showSubmitFailure(formProblem, fields, reply, "Could not save the webhook.")
    },
      h("h2", { id: "edit-title" }, "Change the webhook"),
      url.element,
      events.element,
      formProblem,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit", class: "button button-primary" }, "Save"),
        button("Cancel", async () => replace(editArea))
      )
    )
    replace(editArea, editForm)
    url.control.focus()
  }

  /** @param {ReadonlyArray<JournalEntry>} entries */
  const drawJournal = (entries) => {
    const key = JSON.stringify(entries)
    if (key === shownJournal) return
    shownJournal = key
    replace(
      journalBody,
      entries.length === 0
        ? empty("No deliveries yet.", h("p", { class: "muted" }, "Send a test event to try the receiver."))
        : table(
          "Deliveries, newest first",
          ["Event", "State", "HTTP", "Attempts", "Created", "Last attempt", ""],
          entries.map((entry) => [
            h("code", {}, entry.event),
            deliveryBadge(entry.status),
            httpCode(entry.response_code),
            String(entry.attempts),
            time(entry.created_at, { seconds: true }),
            time(entry.last_attempt_at, { seconds: true }),
            h("a", { href: `#/webhooks/${id}/deliveries/${entry.id}`, "aria-label": `Delivery #${entry.id} details` }, "Details")
          ]),
          { rowAttributes: (index) => ({ "data-status": entries[index]?.status }) }
        )
    )
  }

  const journalRefresh = autoRefresh(context, async () => {
    const [entries, current] = await Promise.all([Api.journal(id), Api.getWebhook(id)])
    if (!context.isCurrent()) return false
    if (current.ok && JSON.stringify(current.data) !== JSON.stringify(hook) && editArea.childElementCount === 0) {
      hook = current.data
      drawSummary()
    }
    if (!entries.ok) {
      replace(journalBody, problem(entries, "Could not load the deliveries."))
      return false
    }
    drawJournal(entries.data)
    const pending = entries.data.some((entry) => entry.status === "pending")
    const again = pending || Date.now() < watchUntil
    refreshing.textContent = again ? "Updating by itself while deliveries are pending…" : ""
    void context.refreshUnread()
    return again
  })

  const since = field("Failed since", h("input", { type: "datetime-local", name: "since", step: "1" }), {
    hint: "Every delivery that ended failed at or after this time is sent again, to the current URL."
  })
  const dayAgo = new Date(Date.now() - 24 * 3600 * 1000)
  since.control.value = new Date(dayAgo.getTime() - dayAgo.getTimezoneOffset() * 60_000).toISOString().slice(0, 19)
  const recoverProblem = h("div", { class: "form-problem" })
  const recoverForm = form({ class: "form form-inline", "aria-labelledby": "recover-title" }, async () => {
    replace(recoverProblem)
    const value = since.control.value
    const at = new Date(value)
    if (value === "" || Number.isNaN(at.getTime())) {
      since.setError("Choose a date and time.")
      return
    }
    since.setError(null)
    const reply = await Api.recover(id, at.toISOString())
    if (!context.isCurrent()) return
    if (!reply.ok) {
      if (reply.code === "VALIDATION_FAILED") showFieldErrors({ since }, reply.fields)
      else replace(recoverProblem, problem(reply, "Could not send the failed deliveries again."))
      return
    }
    const count = reply.data.queued
    replace(recoverProblem, notice("success", null, count === 0 ? "No failed deliveries since then." : `${count} ${count === 1 ? "delivery is" : "deliveries are"} queued again.`))
    if (count > 0) queued()
  },
    h("h2", { id: "recover-title" }, "Send failed deliveries again"),
    since.element,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "button button-secondary" }, "Send again")),
    recoverProblem
  )

  drawSummary()
  replace(
    view,
    h("p", {}, h("a", { href: "#/webhooks", class: "back" }, "← All webhooks")),
    h("section", { class: "card" }, summary, message),
    editArea,
    h(
      "section",
      { class: "card", "aria-labelledby": "journal-title" },
      h("div", { class: "section-head" }, h("h2", { id: "journal-title" }, "Deliveries"), h("span", { class: "muted" }, "the last 50, newest first")),
      refreshing,
      journalBody
    ),
    h("section", { class: "card" }, recoverForm)
  )
  await journalRefresh.now()
}

/** One delivery: the journal's fields, every attempt and the body as sent. @param {ViewContext} context */
export const renderDelivery = async (context) => {
  const { view } = context
  const id = Number(context.params[0])
  const deliveryId = Number(context.params[1])
  context.setTitle(`Delivery #${deliveryId}`)
  const back = h("p", {}, h("a", { href: `#/webhooks/${id}`, class: "back" }, `← Webhook #${id}`))
  const content = h("div", {}, loading())
  const message = h("div", { class: "action-message", "aria-live": "polite" })
  replace(view, back, h("h1", {}, `Delivery #${deliveryId}`), message, content)
  let shown = ""

  const refresh = autoRefresh(context, async () => {
    const reply = await Api.delivery(id, deliveryId)
    if (!context.isCurrent()) return false
    if (!reply.ok) {
      replace(content, problem(reply, "Could not load the delivery."))
      return false
    }
    const entry = reply.data
    const again = entry.status === "pending"
    // Drawn again only when something changed, so focus and selection stay while it refreshes.
    const key = JSON.stringify(entry)
    if (key === shown) return again
    shown = key
    const body = entry.body === null ? null : prettyJson(entry.body)
    replace(
      content,
      h(
        "section",
        { class: "card" },
        h(
          "dl",
          { class: "facts" },
          h("dt", {}, "Event"),
          h("dd", {}, h("code", {}, entry.event)),
          h("dt", {}, "State"),
          h("dd", {}, deliveryBadge(entry.status)),
          h("dt", {}, "HTTP code"),
          h("dd", {}, httpCode(entry.response_code)),
          h("dt", {}, "Attempts"),
          h("dd", {}, String(entry.attempts)),
          h("dt", {}, "Created"),
          h("dd", {}, time(entry.created_at, { seconds: true })),
          h("dt", {}, "Last attempt"),
          h("dd", {}, time(entry.last_attempt_at, { seconds: true }))
        ),
        h(
          "div",
          { class: "actions" },
          button("Send again", async () => {
            const sent = await Api.resend(id, deliveryId)
            if (!sent.ok) return replace(message, problem(sent, "Could not send the delivery again."))
            const next = sent.data.delivery_id
            replace(
              message,
              notice("success", null, "Queued again as ", h("a", { href: `#/webhooks/${id}/deliveries/${next}` }, `delivery #${next}`), ", with the same body.")
            )
          }, { kind: "primary" })
        )
      ),
      h(
        "section",
        { class: "card", "aria-labelledby": "attempts-title" },
        h("h2", { id: "attempts-title" }, "Attempts"),
        entry.attempts_detail.length === 0
          ? empty("Not tried yet.")
          : table(
            "Attempts",
            ["#", "Time", "HTTP", "Error", "Took"],
            entry.attempts_detail.map((attempt) => [
              String(attempt.attempt),
              time(attempt.at, { seconds: true }),
              httpCode(attempt.response_code),
              attempt.error === null ? h("span", { class: "muted" }, "—") : attempt.error,
              `${attempt.duration_ms} ms`
            ])
          )
      ),
      h(
        "section",
        { class: "card", "aria-labelledby": "body-title" },
        h("h2", { id: "body-title" }, "Body"),
        body === null ? empty("The body is written at the first attempt.") : h("pre", { class: "code" }, h("code", {}, body))
      )
    )
    return again
  })
  await refresh.now()
}

/** The body indented when it is JSON, else as it is. @param {string} text */
const prettyJson = (text) => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}
