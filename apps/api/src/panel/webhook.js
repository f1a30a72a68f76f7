// @ts-check
/**
 * One webhook subscription (docs/back-office.md "Webhooks"): its
 * state, URL and events, changing them, disabling (after saying what that
 * means: events are journaled as skipped, not sent) and enabling it,
 * deleting it, sending a test event, the journal of the last 50 deliveries
 * (which refreshes by itself while deliveries are pending, or for a while
 * after something was queued, since the dispatcher creates the delivery a
 * moment later), sending the events skipped while it was disabled, sending
 * failed deliveries again, and one delivery with its attempts and body.
 *
 * `test`, `resend` and `recover` are limited per subscription by the server
 * (docs/back-office.md "Webhook limits"): its 429 says how long to wait
 * (`Retry-After`), and until then the buttons that make those calls for
 * that subscription stay disabled, counting down. The server also refuses
 * them (409) while the subscription is disabled: then their buttons are
 * disabled, with the reason beside them (`unavailable`).
 *
 * Each attempt shows what happened in words (`attemptOutcome`: the
 * dispatcher's error kind, or the receiver's HTTP code) and the start of
 * the receiver's answer (`response_excerpt`), as text. A long URL is cut
 * (`shortUrl`) or clamped to a few lines, the whole of it on hover.
 */
import * as Api from "./api.js"
import {
  badge,
  button,
  checkboxes,
  confirmAction,
  empty,
  field,
  form,
  h,
  hold,
  loading,
  notice,
  problem,
  replace,
  showFieldErrors,
  showSubmitFailure,
  table,
  time,
  uniqueId
} from "./dom.js"
import { announce, EVENTS, eventList, statusBadge } from "./webhooks.js"

/** @typedef {import("./app.js").ViewContext} ViewContext */
/** @typedef {import("./api.js").Webhook} Webhook */
/** @typedef {import("./api.js").JournalEntry} JournalEntry */
/** @typedef {import("./api.js").DeliveryStatus} DeliveryStatus */
/** @typedef {import("./api.js").Failure} Failure */
/** @typedef {import("./api.js").Attempt} Attempt */

/** How often a journal with pending deliveries is read again. */
const REFRESH_MS = 1_500
/** After something is queued, the journal is watched this long even with nothing pending yet. */
const WATCH_AFTER_QUEUEING_MS = 30_000
/** A next attempt closer than this shows as a countdown, a later one as its time. */
const COUNTDOWN_UNDER_MS = 3_600_000

/** @param {DeliveryStatus} status */
const deliveryBadge = (status) =>
  badge(status, status === "delivered" ? "ok" : status === "failed" ? "bad" : status === "skipped" ? "skip" : "info")

/**
 * Why the server refuses `test`, `resend` and `recover` now (docs/back-office.md "Webhooks":
 * 409 while the subscription is disabled), or null when it would accept them.
 * @param {Webhook} hook
 * @param {string} what e.g. "Sending a test event"
 */
const whyUnavailable = (hook, what) =>
  hook.status === "disabled" ? `${what} is not possible while the webhook is disabled: enable it first.` : null

/**
 * Offers `control` (`reason` null) or disables it with `reason` in its
 * title and in `note` beside it. A button the action limit holds stays held
 * until both its wait has passed and it is available (`actionLimit`).
 * @param {HTMLButtonElement} control
 * @param {string | null} reason
 * @param {HTMLElement} note where the reason is written (emptied when none)
 */
const unavailable = (control, reason, note) => {
  control.toggleAttribute("data-unavailable", reason !== null)
  if (reason === null) control.removeAttribute("title")
  else control.title = reason
  if (note.id === "") note.id = uniqueId("reason")
  if (reason === null) control.removeAttribute("aria-describedby")
  else control.setAttribute("aria-describedby", note.id)
  note.textContent = reason ?? ""
  note.hidden = reason === null
  hold(control, reason !== null || control.hasAttribute("data-wait"))
}

/** Where `unavailable` writes a button's reason. */
const reasonNote = () => h("p", { class: "action-reason muted small", hidden: true })

/** A URL longer than this is cut in the middle where it is named in a sentence (the whole in `title`). */
const URL_SHOWN = 120

/** `url` as a sentence names it: cut in the middle past URL_SHOWN characters, the whole of it on hover. @param {string} url */
const shortUrl = (url) =>
  h(
    "span",
    { class: "url", title: url },
    url.length <= URL_SHOWN ? url : `${url.slice(0, URL_SHOWN - 41)}…${url.slice(-40)}`
  )

/**
 * The dispatcher's error kinds (`AttemptError` of its receiver client, libs/runtime/src/Receiver.ts,
 * and the Sender's `secret_unreadable`; stored in `webhook_attempts.error`) in words, an
 * unknown one shown as it is. `seconds`: how long the attempt took.
 * @type {Readonly<Record<string, (seconds: number) => string>>}
 */
const ERROR_WORDS = {
  timeout: (seconds) => `The receiver did not answer within ${seconds} s.`,
  blocked_address: () => "Not sent: the receiver's address is not a public one (it is a private or local address).",
  invalid_url: () => "Not sent: the receiver URL is not a valid address.",
  dns_error: () => "Not sent: the receiver's host name could not be found.",
  connection_refused: () => "The receiver's server refused the connection: nothing answers at that address and port.",
  connection_closed: () => "The connection closed before the receiver's answer was complete.",
  tls_error: () => "The secure (HTTPS) connection to the receiver failed: check its certificate.",
  connection_error: () => "Could not connect to the receiver.",
  secret_unreadable: () => "Not sent: the webhook's signing secret could not be read on our side."
}

/**
 * What happened at one attempt, in words: delivered, the receiver's HTTP
 * answer when it was not 2xx, or the error kind.
 * @param {Attempt} attempt
 */
const attemptOutcome = (attempt) => {
  const code = attempt.response_code
  if (attempt.error !== null) {
    const words = ERROR_WORDS[attempt.error]
    return words === undefined ? `Failed: ${attempt.error}.` : words(Math.max(1, Math.round(attempt.duration_ms / 1000)))
  }
  if (code === null) return "No answer."
  if (code >= 200 && code <= 299) return "Delivered."
  if (code >= 300 && code <= 399) return `The receiver answered with a redirect (HTTP ${code}); redirects are not followed.`
  return code >= 500
    ? `The receiver answered with an error of its own (HTTP ${code}).`
    : `The receiver refused the delivery (HTTP ${code}).`
}

/**
 * The start of the receiver's answer, as text (never markup): "(empty)" for
 * an answer without a body, "—" when there was no whole answer.
 * @param {Attempt} attempt
 */
const excerpt = (attempt) =>
  attempt.response_excerpt === null
    ? h("span", { class: "muted" }, attempt.response_code === null || attempt.error !== null ? "—" : "(empty)")
    : h("pre", { class: "attempt-excerpt" }, attempt.response_excerpt)

/** @param {number | null} code */
const httpCode = (code) => code === null ? h("span", { class: "muted" }, "—") : h("code", {}, String(code))

/** "42 s", "90 s", "4 min 5 s": a wait in whole seconds, rounded up. @param {number} ms */
const duration = (ms) => {
  const seconds = Math.max(1, Math.ceil(ms / 1000))
  if (seconds < 120) return `${seconds} s`
  const minutes = Math.floor(seconds / 60)
  return seconds % 60 === 0 ? `${minutes} min` : `${minutes} min ${seconds % 60} s`
}

/**
 * When a pending delivery is tried next (`first`: not tried yet): a
 * countdown while it is near, else its time. Kept current by `tickNextAttempts`.
 * @param {string} iso
 * @param {boolean} first
 */
const nextAttempt = (iso, first) => {
  const element = h("span", { class: "next-attempt", "data-at": iso, "data-which": first ? "first" : "next" })
  updateNextAttempt(element)
  return element
}

/** @param {HTMLElement} element a `nextAttempt` */
const updateNextAttempt = (element) => {
  const iso = element.dataset["at"] ?? ""
  const which = `${element.dataset["which"] ?? "next"} attempt`
  const left = Date.parse(iso) - Date.now()
  if (Number.isNaN(left)) replace(element, `${which}: `, iso)
  else if (left <= 0) replace(element, `${which} due now`)
  else if (left < COUNTDOWN_UNDER_MS) replace(element, `${which} in ${duration(left)}`)
  else replace(element, `${which} at `, time(iso, { seconds: true }))
  element.title = iso
}

/** @param {ParentNode} root */
const tickNextAttempts = (root) => {
  for (const element of root.querySelectorAll(".next-attempt")) {
    if (element instanceof HTMLElement) updateNextAttempt(element)
  }
}

/** What the State cell says under the badge: when a pending delivery is tried next; that a skipped one was never sent. @param {JournalEntry} entry */
const stateDetail = (entry) =>
  entry.status === "pending" && entry.next_attempt_at !== null && entry.next_attempt_at !== undefined
    ? h("span", { class: "state-detail" }, nextAttempt(entry.next_attempt_at, entry.attempts === 0))
    : entry.status === "skipped"
    ? h("span", { class: "state-detail" }, "not sent: disabled")
    : null

/** @param {JournalEntry} entry */
const stateCell = (entry) => h("div", { class: "state" }, deliveryBadge(entry.status), stateDetail(entry))

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

/** Runs `tick` every second while the view is shown. @param {ViewContext} context @param {() => void} tick */
const everySecond = (context, tick) => {
  const timer = window.setInterval(tick, 1000)
  context.onLeave(() => clearInterval(timer))
}

/**
 * Until when (the reader's clock, ms) the server asked to wait before the
 * next `test`, `resend` or `recover` of each subscription: its 429's
 * `Retry-After`. Kept across views, so the delivery page knows it too.
 * @type {Map<number, number>}
 */
const waits = new Map()

/**
 * The buttons of one view that call `test`, `resend` or `recover` for
 * subscription `id`: held (disabled, with the seconds left on them) until
 * the wait the server asked for has passed; a refusal shown where the
 * action's messages go, counting down.
 * @param {ViewContext} context
 * @param {number} id
 */
const actionLimit = (context, id) => {
  /** @type {Set<HTMLButtonElement>} */
  const controls = new Set()
  /** The refusal on screen: where, and the line that counts down. @type {{ target: Element, left: HTMLElement } | null} */
  let shown = null
  /** @type {number | undefined} */
  let timer
  const left = () => (waits.get(id) ?? 0) - Date.now()

  const tick = () => {
    const ms = left()
    const waiting = ms > 0
    // Buttons drawn again replace the old ones, which stay in the set until the view is left: harmless.
    for (const control of controls) {
      hold(control, waiting || control.hasAttribute("data-unavailable"))
      if (waiting) control.dataset["wait"] = duration(ms)
      else delete control.dataset["wait"]
    }
    if (shown !== null) {
      if (waiting) shown.left.textContent = duration(ms)
      else {
        replace(shown.target, notice("info", null, "You can try again now."))
        shown = null
      }
    }
    if (!waiting) {
      waits.delete(id)
      clearInterval(timer)
      timer = undefined
    }
  }
  const start = () => {
    if (timer === undefined && left() > 0) timer = window.setInterval(tick, 1000)
    tick()
  }
  context.onLeave(() => {
    clearInterval(timer)
    controls.clear()
  })

  return {
    /**
     * A button that makes one of the limited calls: held while a wait is on.
     * @param {HTMLButtonElement} control
     */
    add: (control) => {
      controls.add(control)
      if (left() > 0) start()
      return control
    },
    /**
     * Shows why a limited call failed, in `target`: a 429 as the wait (every
     * button of the subscription's limited calls held until it passes),
     * anything else as the server said it.
     * @param {Element} target
     * @param {Failure} reply
     * @param {string} tooMany e.g. "Too many test sends"
     * @param {string} doing e.g. "Could not send a test event."
     */
    refused: (target, reply, tooMany, doing) => {
      if (reply.status !== 429 || reply.retryAfter === undefined) {
        replace(target, problem(reply, doing))
        return
      }
      waits.set(id, Math.max(waits.get(id) ?? 0, Date.now() + reply.retryAfter * 1000))
      const seconds = h("span", { "aria-live": "off" }, duration(left()))
      replace(
        target,
        h(
          "div",
          { class: "notice notice-warning wait", role: "alert" },
          h("p", { class: "notice-title" }, `${tooMany}: try again in `, seconds),
          h("div", { class: "notice-body" }, reply.message)
        )
      )
      shown = { target, left: seconds }
      start()
    }
  }
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
  const limit = actionLimit(context, id)
  const summary = h("div", { class: "summary" })
  const message = h("div", { class: "action-message", "aria-live": "polite" })
  const editArea = h("div")
  const journalBody = h("div", { class: "journal" }, loading("Loading deliveries…"))
  const refreshing = h("p", { class: "refreshing muted", "aria-live": "polite" })
  let shownJournal = ""
  everySecond(context, () => tickNextAttempts(journalBody))

  /** Something was queued: watch the journal for a while. */
  const queued = () => {
    watchUntil = Date.now() + WATCH_AFTER_QUEUEING_MS
    void journalRefresh.now()
  }

  /** Reads the subscription again (e.g. its count of skipped events) and redraws it. */
  const reloadHook = async () => {
    const reply = await Api.getWebhook(id)
    if (!context.isCurrent() || !reply.ok) return
    hook = reply.data
    drawSummary()
  }

  const disable = async () => {
    const sure = await confirmAction({
      title: `Disable webhook #${hook.id}?`,
      body: [
        h("p", {}, "While it is disabled, nothing is sent to ", shortUrl(hook.url), "."),
        "Each event it would have received is recorded as skipped in the journal, with no attempt and no request.",
        "Enabling it again sends nothing by itself. The skipped events can be sent later with “Send skipped events”."
      ],
      confirm: "Disable webhook"
    })
    if (!sure || !context.isCurrent()) return
    const reply = await Api.setWebhookEnabled(id, false)
    if (!context.isCurrent()) return
    if (!reply.ok) return replace(message, problem(reply, "Could not disable the webhook."))
    hook = reply.data
    drawSummary()
    replace(message, notice("success", null, `Webhook #${hook.id} is disabled.`))
  }

  const enable = async () => {
    const reply = await Api.setWebhookEnabled(id, true)
    if (!context.isCurrent()) return
    if (!reply.ok) return replace(message, problem(reply, "Could not enable the webhook."))
    hook = reply.data
    drawSummary()
    replace(
      message,
      notice(
        "success",
        null,
        hook.skipped_events > 0
          ? "Enabled: deliveries resume. The skipped events are not sent by themselves: use “Send skipped events” to send them."
          : "Enabled: deliveries resume."
      )
    )
  }

  const remove = async () => {
    const sure = await confirmAction({
      title: `Delete webhook #${hook.id}?`,
      body: [
        "This deletes, for good:",
        h(
          "ul",
          { class: "dialog-list" },
          h("li", {}, "the subscription to ", shortUrl(hook.url), ";"),
          h("li", {}, "its pending deliveries: they will not be sent;"),
          h("li", {}, "its journal of deliveries;"),
          h("li", {}, "its signing secret.")
        ),
        "It cannot be undone. To receive these events again, create a new webhook: it gets a new secret."
      ],
      confirm: "Delete webhook"
    })
    if (!sure || !context.isCurrent()) return
    const reply = await Api.deleteWebhook(id)
    if (!context.isCurrent()) return
    if (!reply.ok && reply.code !== "NOT_FOUND") return replace(message, problem(reply, "Could not delete the webhook."))
    announce(
      reply.ok
        ? `Webhook #${id} is deleted, with its pending deliveries, its journal and its secret.`
        : `Webhook #${id} no longer exists: it was already deleted.`
    )
    location.hash = "#/webhooks"
  }

  const sendSkipped = async () => {
    // Which skipped events: all of them, however old. The journal holds only
    // the last 50 deliveries, so its oldest skipped row may not be the
    // oldest skipped event; nothing of this subscription is older than the
    // subscription itself, so its creation time covers every one, and the
    // server queues only those not yet sent again (what `skipped_events` counts).
    const reply = await Api.recover(id, hook.created_at, "skipped")
    if (!context.isCurrent()) return
    if (!reply.ok) return limit.refused(message, reply, "Too many sends of skipped events", "Could not send the skipped events.")
    const count = reply.data.queued
    replace(
      message,
      notice(
        "success",
        null,
        count === 0
          ? "No skipped events were left to send."
          : `${count} skipped ${count === 1 ? "event is" : "events are"} queued; ${count === 1 ? "it shows" : "they show"} in the deliveries below.`
      )
    )
    await reloadHook()
    if (count > 0) queued()
  }

  const skippedBanner = () => {
    const count = hook.skipped_events
    return h(
      "div",
      { class: "notice notice-skipped", role: "status" },
      h("p", { class: "notice-title" }, `${count} ${count === 1 ? "event was" : "events were"} skipped while this webhook was disabled`),
      h(
        "div",
        { class: "notice-body" },
        h(
          "p",
          {},
          hook.status === "disabled"
            ? "They were not sent. Enable the webhook, then send them to the current URL with “Send skipped events”."
            : "They were not sent. “Send skipped events” sends them now, to the current URL."
        ),
        // While disabled the next step is Enable, so this one is not the primary button then (and the server refuses it).
        offered(
          limit.add(button("Send skipped events", sendSkipped, { kind: hook.status === "disabled" ? "secondary" : "primary" })),
          whyUnavailable(hook, "Sending the skipped events")
        )
      )
    )
  }

  /**
   * A button of the limited calls in its actions row, disabled with the
   * reason beside it when the server would refuse it now.
   * @param {HTMLButtonElement} control
   * @param {string | null} reason
   * @param {ReadonlyArray<HTMLElement>} others more buttons of the row
   */
  const offered = (control, reason, ...others) => {
    const note = reasonNote()
    unavailable(control, reason, note)
    return [h("div", { class: "actions" }, control, ...others), note]
  }

  const drawSummary = () => {
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
      hook.status === "disabled"
        ? notice(
          "info",
          "Disabled: nothing is sent.",
          "Each event it would have received is recorded as skipped in the journal. Enabling it sends nothing by itself."
        )
        : null,
      hook.skipped_events > 0 ? skippedBanner() : null,
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Receiver URL"),
        h("dd", { class: "url url-clamp", title: hook.url }, hook.url),
        h("dt", {}, "Events"),
        h("dd", {}, eventList(hook.events)),
        h("dt", {}, "Created"),
        h("dd", {}, time(hook.created_at)),
        h("dt", {}, "Changed"),
        h("dd", {}, time(hook.updated_at))
      ),
      offered(
        limit.add(button("Send test event", async () => {
          const reply = await Api.sendTest(id)
          if (!context.isCurrent()) return
          if (!reply.ok) return limit.refused(message, reply, "Too many test sends", "Could not send a test event.")
          replace(message, notice("success", null, "A webhook.test event is queued; it shows in the deliveries below."))
          queued()
        }, { kind: hook.status === "disabled" ? "secondary" : "primary" })),
        whyUnavailable(hook, "Sending a test event"),
        button("Edit", async () => drawEdit()),
        // While disabled, Enable is the next step.
        hook.status === "disabled" ? button("Enable", enable, { kind: "primary" }) : button("Disable", disable),
        h("span", { class: "actions-end" }, button("Delete", remove, { kind: "danger" }))
      )
    )
    unavailable(recoverButton, whyUnavailable(hook, "Sending failed deliveries again"), recoverReason)
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
            stateCell(entry),
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
    // Not redrawn while the reader edits it or while one of its buttons waits for an answer.
    if (
      current.ok && JSON.stringify(current.data) !== JSON.stringify(hook) && editArea.childElementCount === 0 &&
      summary.querySelector("[aria-busy='true']") === null
    ) {
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
  const recoverButton = limit.add(h("button", { type: "submit", class: "button button-secondary" }, "Send again"))
  const recoverReason = reasonNote()
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
      else limit.refused(recoverProblem, reply, "Too many resends", "Could not send the failed deliveries again.")
      return
    }
    const count = reply.data.queued
    replace(recoverProblem, notice("success", null, count === 0 ? "No failed deliveries since then." : `${count} ${count === 1 ? "delivery is" : "deliveries are"} queued again.`))
    if (count > 0) queued()
  },
    h("h2", { id: "recover-title" }, "Send failed deliveries again"),
    since.element,
    h("div", { class: "actions" }, recoverButton),
    recoverReason,
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
  const content = h("div", { class: "stack" }, loading())
  const message = h("div", { class: "action-message", "aria-live": "polite" })
  replace(view, back, h("h1", {}, `Delivery #${deliveryId}`), message, content)
  let shown = ""
  const limit = actionLimit(context, id)
  everySecond(context, () => tickNextAttempts(content))

  /** Send again, disabled with the reason when the server would refuse it now. @param {string | null} reason */
  const resendRow = (reason) => {
    const control = limit.add(button("Send again", async () => {
      const sent = await Api.resend(id, deliveryId)
      if (!context.isCurrent()) return
      if (!sent.ok) return limit.refused(message, sent, "Too many resends", "Could not send the delivery again.")
      const next = sent.data.delivery_id
      replace(
        message,
        notice("success", null, "Queued again as ", h("a", { href: `#/webhooks/${id}/deliveries/${next}` }, `delivery #${next}`), ", with the same body.")
      )
    }, { kind: "primary" }))
    const note = reasonNote()
    unavailable(control, reason, note)
    return [h("div", { class: "actions" }, control), note]
  }

  const refresh = autoRefresh(context, async () => {
    // The subscription too: while it is disabled the server refuses Send again.
    const [reply, subscription] = await Promise.all([Api.delivery(id, deliveryId), Api.getWebhook(id)])
    if (!context.isCurrent()) return false
    if (!reply.ok) {
      replace(content, problem(reply, "Could not load the delivery."))
      return false
    }
    const entry = reply.data
    const again = entry.status === "pending"
    // Not known (the subscription could not be read): offered, and the server's answer says why if refused.
    const resendReason = subscription.ok ? whyUnavailable(subscription.data, "Sending it again") : null
    // Drawn again only when something changed, so focus and selection stay while it refreshes.
    const key = JSON.stringify([entry, resendReason])
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
          h("dd", {}, stateCell(entry)),
          h("dt", {}, "HTTP code"),
          h("dd", {}, httpCode(entry.response_code)),
          h("dt", {}, "Attempts"),
          h("dd", {}, String(entry.attempts)),
          h("dt", {}, "Created"),
          h("dd", {}, time(entry.created_at, { seconds: true })),
          h("dt", {}, "Last attempt"),
          h("dd", {}, time(entry.last_attempt_at, { seconds: true })),
          // The delivery's id as its receiver sees it (the `webhook-id` header), to find it in the receiver's logs.
          typeof entry.webhook_id === "string" ? [h("dt", {}, "webhook-id"), h("dd", {}, h("code", { class: "url" }, entry.webhook_id))] : null
        ),
        entry.status === "skipped"
          ? notice(
            "info",
            null,
            resendReason === null
              ? "This event happened while the webhook was disabled: it was recorded, not sent. Send again sends it now, to the current URL."
              : "This event happened while the webhook was disabled: it was recorded, not sent. Enable the webhook, then Send again sends it to the current URL."
          )
          : null,
        resendRow(resendReason)
      ),
      h(
        "section",
        { class: "card", "aria-labelledby": "attempts-title" },
        h("h2", { id: "attempts-title" }, "Attempts"),
        entry.attempts_detail.length === 0
          ? empty("Not tried yet.")
          : table(
            "Attempts",
            ["#", "Time", "HTTP", "What happened", "Took", "The receiver's answer"],
            entry.attempts_detail.map((attempt) => [
              String(attempt.attempt),
              time(attempt.at, { seconds: true }),
              httpCode(attempt.response_code),
              h(
                "span",
                { class: "attempt-outcome", "data-error": attempt.error ?? "" },
                attemptOutcome(attempt)
              ),
              `${attempt.duration_ms} ms`,
              excerpt(attempt)
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
