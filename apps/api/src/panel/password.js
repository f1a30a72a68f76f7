// @ts-check
/**
 * Changing one's own password (docs/back-office.md "Signing in"), for every
 * employee: the current one, the new one twice. A wrong current password is
 * the server's 422 on that field, shown under it; on success the server has
 * ended the reader's other sessions, and the page says so.
 */
import * as Api from "./api.js"
import { field, form, h, notice, PASSWORD_MIN, replace, showOwnErrors, showSubmitFailure, waitText } from "./dom.js"
import { length } from "./staff.js"

/** @typedef {import("./app.js").ViewContext} ViewContext */

/** @param {ViewContext} context */
export const renderPassword = async (context) => {
  const { view } = context
  context.setTitle("Change password")
  const done = h("div", { class: "action-message", "aria-live": "polite" })
  const current = field("Current password", h("input", { type: "password", name: "current_password", autocomplete: "current-password", required: true }))
  const fresh = field("New password", h("input", { type: "password", name: "new_password", autocomplete: "new-password", required: true }), {
    hint: `At least ${PASSWORD_MIN} characters.`
  })
  const repeat = field("Repeat the new password", h("input", { type: "password", name: "repeat", autocomplete: "new-password", required: true }))
  const formProblem = h("div", { class: "form-problem" })
  const fields = { current_password: current, new_password: fresh, repeat }

  const passwordForm = form({ class: "card form", "aria-labelledby": "password-title" }, async () => {
    replace(formProblem)
    replace(done)
    const body = { current_password: current.control.value, new_password: fresh.control.value }
    /** @type {Record<string, string>} */
    const mistakes = {}
    if (body.current_password === "") mistakes["current_password"] = "Enter your current password."
    if (length(body.new_password) < PASSWORD_MIN) mistakes["new_password"] = `Choose a password of at least ${PASSWORD_MIN} characters.`
    else if (repeat.control.value !== body.new_password) mistakes["repeat"] = "The two new passwords are not the same."
    if (Object.keys(mistakes).length > 0) {
      showOwnErrors(fields, mistakes)
      return
    }
    const reply = await Api.changePassword(body)
    if (!context.isCurrent()) return
    if (reply.ok) {
      showOwnErrors(fields, {})
      passwordForm.reset()
      replace(done, notice("success", "Your password is changed.", "You were signed out everywhere else; this window stays signed in."))
      return
    }
    if (reply.code === "TOO_MANY_ATTEMPTS") {
      const wait = waitText(reply.retryAfter)
      replace(formProblem, notice("error", "Too many wrong passwords.", `Changing the password is paused for a while (too many wrong current passwords). Wait ${wait} and try again.`))
      return
    }
    showSubmitFailure(formProblem, fields, reply, "Could not change the password.")
  },
    h("h2", { id: "password-title" }, "Your password"),
    current.element,
    fresh.element,
    repeat.element,
    formProblem,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "button button-primary" }, "Change password"))
  )

  replace(
    view,
    h("h1", {}, "Change password"),
    h("p", { class: "lead" }, "After the change, your other sessions end: any other browser or device signed in as you must sign in again."),
    done,
    h("div", { class: "narrow" }, passwordForm)
  )
}
