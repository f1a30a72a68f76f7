// @ts-check
/**
 * Signing in (docs/back-office.md "Signing in"): e-mail and password. A
 * wrong pair is one message, as the server answers it (it never says which
 * was wrong); `TOO_MANY_ATTEMPTS` says how long to wait.
 */
import * as Api from "./api.js"
import { field, form, h, notice, replace, showOwnErrors, showSubmitFailure, waitText } from "./dom.js"

/**
 * @param {HTMLElement} view
 * @param {{ tone: "info" | "success" | "warning", text: string } | null} message why the form is shown (session expired, signed out)
 * @param {(employee: import("./api.js").Employee) => Promise<void>} signedIn
 */
export const renderSignIn = (view, message, signedIn) => {
  document.title = "Sign in · School CRM"
  const email = field("E-mail", h("input", { type: "email", name: "email", autocomplete: "username", required: true, spellcheck: "false" }))
  const password = field("Password", h("input", { type: "password", name: "password", autocomplete: "current-password", required: true }))
  const problem = h("div", { class: "form-problem" })
  const submit = h("button", { type: "submit", class: "button button-primary button-wide" }, "Sign in")
  const fields = { email, password }

  const signInForm = form({ class: "card form", "aria-labelledby": "sign-in-title" }, async () => {
    replace(problem)
    const emailValue = email.control.value.trim()
    const passwordValue = password.control.value
    /** @type {Record<string, string>} */
    const missing = {}
    if (emailValue === "") missing["email"] = "Enter your e-mail."
    if (passwordValue === "") missing["password"] = "Enter your password."
    if (Object.keys(missing).length > 0) {
      showOwnErrors(fields, missing)
      return
    }
    showOwnErrors(fields, {})
    const reply = await Api.signIn(emailValue, passwordValue)
    if (reply.ok) {
      await signedIn(reply.data.employee)
      return
    }
    if (reply.code === "UNAUTHENTICATED") {
      replace(problem, notice("error", "Wrong e-mail or password.", "Check both and try again."))
      password.control.focus()
    } else if (reply.code === "TOO_MANY_ATTEMPTS") {
      const wait = waitText(reply.retryAfter)
      replace(
        problem,
        notice("error", "Too many failed sign-ins.", `Signing in is paused for a while (too many failed attempts for this e-mail or from this network). Wait ${wait} and try again.`)
      )
    } else {
      showSubmitFailure(problem, fields, reply, "Could not sign in.")
    }
  },
    h("h1", { id: "sign-in-title" }, "Sign in"),
    h("p", { class: "muted" }, "The back office of your school: API keys, webhooks, leads and notifications."),
    message === null ? null : notice(message.tone, null, message.text),
    email.element,
    password.element,
    problem,
    submit
  )
  replace(view, signInForm)
  email.control.focus()
}
