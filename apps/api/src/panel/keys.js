// @ts-check
/**
 * API keys (docs/back-office.md "API keys"): the list (never a secret),
 * issuing one, whose whole value is shown here once, and revoking one after
 * a confirmation. Below the Extended plan the server answers
 * `TARIFF_TOO_LOW`, shown as what it is: a matter of the school's plan.
 */
import * as Api from "./api.js"
import { badge, button, clipped, confirmAction, empty, field, form, h, hold, loading, notice, pager, problem, replace, secretBox, showOwnErrors, showSubmitFailure, table, time } from "./dom.js"

/** @typedef {import("./app.js").ViewContext} ViewContext */
/** @typedef {import("./api.js").ApiKey} ApiKey */

/** @param {ApiKey} key */
const keyState = (key) => {
  if (key.revoked_at !== null) return h("span", {}, badge("revoked", "off"), " ", time(key.revoked_at))
  if (key.expires_at !== null && new Date(key.expires_at).getTime() <= Date.now()) return badge("expired", "off")
  return badge("active", "ok")
}

/**
 * The end of the chosen day on the reader's clock, as ISO 8601 (UTC).
 * @param {string} date `YYYY-MM-DD`
 */
const endOfDay = (date) => {
  const [year, month, day] = date.split("-").map(Number)
  if (year === undefined || month === undefined || day === undefined) return date
  return new Date(year, month - 1, day, 23, 59, 59).toISOString()
}

/** @param {ViewContext} context */
export const renderKeys = async (context) => {
  const { view } = context
  context.setTitle("API keys")
  const issued = h("div", { class: "issued" })
  const list = h("section", { class: "card", "aria-labelledby": "keys-list-title" })
  let page = 1

  /** @returns {Promise<boolean>} whether the list could be read */
  const loadList = async () => {
    replace(list, h("h2", { id: "keys-list-title" }, "Keys"), loading("Loading keys…"))
    const reply = await Api.listKeys(page)
    if (!context.isCurrent()) return false
    if (!reply.ok) {
      replace(list, h("h2", { id: "keys-list-title" }, "Keys"), problem(reply, "Could not load the keys."))
      return false
    }
    const keys = reply.data
    replace(
      list,
      h("h2", { id: "keys-list-title" }, "Keys"),
      keys.length === 0
        ? empty("No keys yet.", h("p", { class: "muted" }, "Issue one above for the school's website or software."))
        : table(
          "API keys",
          ["Name", "Scope", "Prefix", "Created", "Expires", "State", ""],
          keys.map((key) => [
            clipped(key.name, "strong"),
            key.scope === "write" ? "read and write" : "read only",
            h("code", {}, `svc_${key.prefix}_…`),
            time(key.created_at),
            key.expires_at === null ? h("span", { class: "muted" }, "never") : time(key.expires_at),
            keyState(key),
            key.revoked_at === null
              ? button("Revoke", async () => {
                const sure = await confirmAction({
                  title: `Revoke the key “${key.name}”?`,
                  body: "Anything that uses it stops working at once. This cannot be undone.",
                  confirm: "Revoke key"
                })
                if (!sure) return
                const revoked = await Api.revokeKey(key.id)
                if (!revoked.ok) {
                  replace(issued, problem(revoked, "Could not revoke the key."))
                  return
                }
                replace(issued, notice("success", null, `The key “${key.name}” is revoked.`))
                await loadList()
              }, { kind: "danger" })
              : null
          ])
        ),
      pager(reply.meta, (next) => {
        page = next
        void loadList()
      })
    )
    return true
  }

  const name = field("Name", h("input", { type: "text", name: "name", maxlength: "255", required: true, autocomplete: "off" }), {
    hint: "Where it is used, e.g. “Website” or “Accounting export”."
  })
  const scope = field(
    "Scope",
    h(
      "select",
      { name: "scope" },
      h("option", { value: "read" }, "read: read data only"),
      h("option", { value: "write" }, "write: read data and create leads, enrollments…")
    )
  )
  const expires = field("Expires (optional)", h("input", { type: "date", name: "expires_at" }), {
    hint: "After the end of this day the key stops working. Leave empty for a key that does not expire."
  })
  const formProblem = h("div", { class: "form-problem" })
  const fields = { name, scope, expires_at: expires }
  const submit = h("button", { type: "submit", class: "button button-primary", "aria-describedby": "issue-held" }, "Issue key")
  // Why Issue key is not offered now, once the server has said so (the plan is not the panel's to know before).
  const held = h("p", { class: "muted small reason-line", id: "issue-held", hidden: true })

  const issueForm = form({ class: "form form-grid", "aria-labelledby": "issue-title" }, async () => {
    replace(formProblem)
    replace(issued)
    const nameValue = name.control.value.trim()
    const expiresValue = expires.control.value
    // The select offers only the contract's scopes; the server checks whatever arrives.
    /** @type {import("./api.js").Body<"apiKeys.create">} */
    const body = { name: nameValue, scope: /** @type {ApiKey["scope"]} */ (scope.control.value) }
    if (expiresValue !== "") body.expires_at = endOfDay(expiresValue)
    const reply = await Api.issueKey(body)
    if (!context.isCurrent()) return
    if (reply.ok) {
      showOwnErrors(fields, {})
      issueForm.reset()
      const key = reply.data
      replace(
        issued,
        h(
          "section",
          { class: "card card-highlight", "aria-labelledby": "new-key-title" },
          h("h2", { id: "new-key-title" }, `New key “${key.name}”`),
          notice(
            "warning",
            "Copy this key now: it will not be shown again.",
            "Only its prefix is kept. If it is lost, revoke it and issue a new one."
          ),
          secretBox("API key", key.key),
          h("p", { class: "muted" }, "Send it as ", h("code", {}, "Authorization: Bearer svc_…"), " to the public API."),
          button("I have stored it", async () => replace(issued), { kind: "secondary" })
        )
      )
      const title = issued.querySelector("h2")
      title?.setAttribute("tabindex", "-1")
      title?.focus()
      await loadList()
      return
    }
    if (reply.code === "TARIFF_TOO_LOW") {
      hold(submit, true)
      held.textContent = "Issuing keys is not possible on this school's plan."
      held.hidden = false
      replace(
        formProblem,
        notice(
          "warning",
          "API keys are not part of this school's plan.",
          h("p", {}, reply.message),
          h("p", {}, "The service's operator can move the school to a plan that includes API keys; then issue the key here.")
        )
      )
      return
    }
    showSubmitFailure(formProblem, fields, reply, "Could not issue the key.")
  },
    h("h2", { id: "issue-title" }, "Issue a key"),
    name.element,
    scope.element,
    expires.element,
    formProblem,
    h("div", { class: "actions" }, submit, held)
  )

  replace(
    view,
    h("h1", {}, "API keys"),
    h("p", { class: "lead" }, "Keys let the school's website or software use the public API. Each key is shown once, when it is issued."),
    issued,
    list
  )
  // The form is offered only once the list shows the reader may manage keys.
  if (await loadList()) list.before(h("section", { class: "card" }, issueForm))
}
