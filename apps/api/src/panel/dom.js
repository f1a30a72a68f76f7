// @ts-check
/**
 * The panel's building blocks: elements made with the DOM, never from HTML
 * text. Every string a caller passes as a child becomes a text node, so a
 * value from the server (a URL, a name) can only ever show as characters.
 */

import { waitText } from "./api.js"

export { waitText }

/** @typedef {Node | string | number | null | undefined | false} Child */
/** @typedef {Record<string, string | number | boolean | null | undefined | EventListener>} Attributes */

/**
 * An element: `attributes` are set as attributes (`true`: present, `false`,
 * null or undefined: absent), `on…` functions become listeners; children are
 * nodes or text.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attributes} [attributes]
 * @param {ReadonlyArray<Child | ReadonlyArray<Child>>} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export const h = (tag, attributes = {}, ...children) => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === "function") element.addEventListener(name.slice(2), value)
    else if (value === true) element.setAttribute(name, "")
    else if (value !== false && value !== null && value !== undefined) element.setAttribute(name, String(value))
  }
  append(element, children)
  return element
}

/**
 * @param {Element} parent
 * @param {ReadonlyArray<Child | ReadonlyArray<Child>>} children
 */
export const append = (parent, children) => {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue
    parent.append(typeof child === "number" ? String(child) : child)
  }
}

/**
 * Replaces an element's children.
 * @param {Element} parent
 * @param {ReadonlyArray<Child | ReadonlyArray<Child>>} children
 */
export const replace = (parent, ...children) => {
  parent.replaceChildren()
  append(parent, children)
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" })
const dateTimeSeconds = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" })

/**
 * A time as the reader's clock shows it, in a `<time>` element; "—" for none.
 * @param {string | null | undefined} iso
 * @param {{ seconds?: boolean }} [options]
 */
export const time = (iso, options = {}) => {
  if (iso === null || iso === undefined) return h("span", { class: "muted" }, "—")
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return h("span", {}, iso)
  return h("time", { datetime: iso, title: iso }, (options.seconds === true ? dateTimeSeconds : dateTime).format(date))
}

/**
 * A name or address that may be long (a key's name is up to 255
 * characters, a URL up to 2,048): shown on at most a few lines, cut with
 * "…", and whole in the tooltip (`title`), so it never pushes the rest of
 * a row out of view.
 * @param {string} text
 * @param {string} [className] e.g. "strong", "url"
 */
export const clipped = (text, className = "") => h("span", { class: `clip ${className}`.trim(), title: text }, text)

/**
 * `text` on one line, cut with an ellipsis where it is too long, whole in the tooltip: for table cells
 * whose neighbours must keep their width (a lead's name, its source, a task's title).
 * @param {string} text
 * @param {string} [className] more classes
 */
export const clippedLine = (text, className = "") => h("span", { class: `clip-line ${className}`.trim(), title: text }, text)

/**
 * A coloured label for a state: `tone` picks the colours.
 * @param {string} label
 * @param {"ok" | "warn" | "bad" | "info" | "off" | "skip"} tone
 */
export const badge = (label, tone) => h("span", { class: `badge badge-${tone}` }, label)

/**
 * A box with a message: `info`, `success`, `warning` or `error`. Errors and
 * warnings are announced to screen readers.
 * @param {"info" | "success" | "warning" | "error"} tone
 * @param {string | null} title
 * @param {ReadonlyArray<Child | ReadonlyArray<Child>>} body
 */
export const notice = (tone, title, ...body) =>
  h(
    "div",
    { class: `notice notice-${tone}`, role: tone === "error" || tone === "warning" ? "alert" : "status" },
    title === null ? null : h("p", { class: "notice-title" }, title),
    body.length === 0 ? null : h("div", { class: "notice-body" }, ...body)
  )

/** The placeholder while a part of a page loads. */
export const loading = (what = "Loading…") => h("p", { class: "loading", role: "status" }, h("span", { class: "spinner", "aria-hidden": "true" }), what)

/**
 * The line a list shows when it has nothing.
 * @param {string} text
 * @param {ReadonlyArray<Child>} more
 */
export const empty = (text, ...more) => h("div", { class: "empty" }, h("p", {}, text), ...more)

let fieldCounter = 0

/** A fresh id for a form control. */
export const uniqueId = (/** @type {string} */ prefix) => `${prefix}-${++fieldCounter}`

/**
 * A labelled form field whose error line (empty until `setError`) sits right
 * under the control and is tied to it with `aria-describedby`.
 * @template {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} C
 * @param {string} label
 * @param {C} control
 * @param {{ hint?: string, name?: string }} [options]
 */
export const field = (label, control, options = {}) => {
  const id = control.id === "" ? uniqueId("field") : control.id
  control.id = id
  const errorId = `${id}-error`
  const hintId = `${id}-hint`
  const error = h("p", { class: "field-error", id: errorId, hidden: true })
  const describedBy = options.hint === undefined ? errorId : `${hintId} ${errorId}`
  control.setAttribute("aria-describedby", describedBy)
  const element = h(
    "div",
    { class: "field", "data-field": options.name ?? control.name },
    h("label", { for: id }, label),
    options.hint === undefined ? null : h("p", { class: "field-hint", id: hintId }, options.hint),
    control,
    error
  )
  return {
    element,
    control,
    /** @param {string | null} message the panel's words; what is between backticks shows as code */
    setError: (message) => {
      replace(error, ...words(message ?? ""))
      error.hidden = message === null
      if (message === null) control.removeAttribute("aria-invalid")
      else control.setAttribute("aria-invalid", "true")
    }
  }
}

/**
 * A group of checkboxes with a legend and one error line, like `field`.
 * @param {string} legend
 * @param {string} name
 * @param {ReadonlyArray<{ value: string, label: string, hint?: string }>} options
 * @param {ReadonlyArray<string>} checked
 */
export const checkboxes = (legend, name, options, checked) => {
  const errorId = uniqueId("error")
  const error = h("p", { class: "field-error", id: errorId, hidden: true })
  const boxes = options.map((option) =>
    h("input", { type: "checkbox", name, value: option.value, checked: checked.includes(option.value) })
  )
  const element = h(
    "fieldset",
    { class: "field checkboxes", "data-field": name, "aria-describedby": errorId },
    h("legend", {}, legend),
    h(
      "div",
      { class: "checkbox-list" },
      options.map((option, index) =>
        h(
          "label",
          { class: "checkbox" },
          boxes[index],
          h("span", {}, h("code", {}, option.label), option.hint === undefined ? null : h("span", { class: "muted" }, ` ${option.hint}`))
        )
      )
    ),
    error
  )
  return {
    element,
    values: () => boxes.filter((box) => box.checked).map((box) => box.value),
    /** @param {string | null} message the panel's words; what is between backticks shows as code */
    setError: (message) => {
      replace(error, ...words(message ?? ""))
      error.hidden = message === null
      if (message === null) boxes[0]?.removeAttribute("aria-invalid")
      else boxes[0]?.setAttribute("aria-invalid", "true")
    }
  }
}

/**
 * A sentence as nodes: text, with what is between backticks as `<code>`
 * (a command to type). Never HTML.
 * @param {string} text
 * @returns {Array<Node | string>}
 */
export const words = (text) =>
  text.split("`").map((part, index) => index % 2 === 1 ? h("code", {}, part) : part).filter((part) => part !== "")

/** The least length of a password (docs/back-office.md "Staff"), counted in characters as the server counts them. */
export const PASSWORD_MIN = 10

/** What the panel says under a field whose value the server did not take, when it has no words of its own for that field. */
export const GENERIC_FIELD_WORDS = "This was not accepted. Check it and try again."

/**
 * The panel's words for a field the server refused, by the field's name
 * (docs/back-office.md, each form's section). The server's messages only
 * choose among the panel's sentences (e.g. an e-mail already taken, a
 * receiver refused only because it is local); they are never shown, as
 * they are written for programs ("Expected a non-empty name").
 * @type {Record<string, (server: string) => string>}
 */
const FIELD_WORDS = {
  name: (server) => /at most/u.test(server) ? "Use a shorter name: at most 255 characters." : "Enter a name.",
  email: (server) =>
    /already/u.test(server)
      ? "This e-mail is already someone's login e-mail: use another one."
      : "Enter an e-mail address, such as anna@school.example.",
  password: (server) => passwordWords(server),
  new_password: (server) => passwordWords(server),
  current_password: (server) =>
    /not your current/u.test(server) ? "This is not your current password. Check it and try again." : "Enter your current password.",
  role: () => "Choose one of the roles in the list.",
  scope: () => "Choose read or write.",
  expires_at: () => "Choose a date in the future, or leave it empty for a key that does not expire.",
  url: (server) => {
    const listen = /webhooks listen(?: --school \d+)?/u.exec(server)
    if (listen !== null) {
      return "Use an https:// address that is reachable from the internet. To receive webhooks on your own computer " +
        `while developing, run \`npm run cli -- ${listen[0]}\`.`
    }
    if (/at most/u.test(server)) return "Use a shorter address."
    if (/credentials/u.test(server)) return "Leave the user name and password out of the address."
    if (/absolute URL|with a host/u.test(server)) return "Enter a whole address, such as https://crm.example.com/hooks."
    return "Use an https:// address that is reachable from the internet."
  },
  events: () => "Choose at least one event.",
  since: () => "Choose a date and time in the past.",
  status_id: () => "Choose a status of this lead's funnel."
}

/** @param {string} server */
const passwordWords = (server) =>
  /at most/u.test(server)
    ? "Use a shorter password: at most 1024 characters."
    : /at least/u.test(server)
    ? `Choose a password of at least ${PASSWORD_MIN} characters.`
    : "Enter a password (letters, digits, spaces and signs)."

/**
 * The panel's sentence for a field the server refused with `messages`.
 * @param {string} name the field's name on the wire (`url`, `events[0]`…)
 * @param {string | ReadonlyArray<string>} messages the server's messages for it
 */
export const fieldWords = (name, messages) => {
  const top = name.split(/[.[]/u)[0] ?? name
  const server = typeof messages === "string" ? messages : messages.join(" ")
  return (FIELD_WORDS[name] ?? FIELD_WORDS[top])?.(server) ?? GENERIC_FIELD_WORDS
}

/**
 * Shows the panel's own messages (a check made before sending) next to
 * the fields they name. Clears earlier errors first.
 * @param {Record<string, { setError: (message: string | null) => void }>} fields
 * @param {Record<string, string>} messages
 */
export const showOwnErrors = (fields, messages) => {
  for (const entry of Object.values(fields)) entry.setError(null)
  for (const [name, message] of Object.entries(messages)) fields[name]?.setError(message)
  focusInvalid()
}

/**
 * Shows the server's `fields` (of a 422, or of a 409 that names a field)
 * next to the fields they name, each in the panel's words for that field
 * (`fieldWords`); what names no field on the form goes to `rest`. Clears
 * earlier errors first.
 * @param {Record<string, { setError: (message: string | null) => void }>} fields
 * @param {Record<string, string | ReadonlyArray<string>> | undefined} errors
 * @returns {string[]} the names the form does not have
 */
export const showFieldErrors = (fields, errors) => {
  for (const entry of Object.values(fields)) entry.setError(null)
  /** @type {string[]} */
  const rest = []
  for (const [name, messages] of Object.entries(errors ?? {})) {
    const top = name.split(/[.[]/u)[0] ?? name
    const target = fields[name] ?? fields[top]
    if (target === undefined) rest.push(name)
    else target.setError(fieldWords(name, messages))
  }
  focusInvalid()
  return rest
}

const focusInvalid = () => {
  const invalid = document.querySelector("[aria-invalid='true']")
  if (invalid instanceof HTMLElement) invalid.focus()
}

/**
 * A button that shows it is busy while `action` runs (and ignores clicks meanwhile).
 * @param {string} label
 * @param {() => Promise<void>} action
 * @param {{ kind?: "primary" | "secondary" | "danger" | "link", type?: "button" | "submit" }} [options]
 */
export const button = (label, action, options = {}) => {
  const element = h("button", { type: options.type ?? "button", class: `button button-${options.kind ?? "secondary"}` }, label)
  element.addEventListener("click", (event) => {
    if (options.type === "submit") return
    event.preventDefault()
    void busy(element, action)
  })
  return element
}

/**
 * Runs `action` with `control` disabled and marked busy. A control that is
 * held (`hold`) when the action ends stays disabled.
 * @param {HTMLButtonElement} control
 * @param {() => Promise<void>} action
 */
export const busy = async (control, action) => {
  if (control.getAttribute("aria-busy") === "true" || control.hasAttribute("data-held")) return
  control.setAttribute("aria-busy", "true")
  control.disabled = true
  try {
    await action()
  } finally {
    control.removeAttribute("aria-busy")
    control.disabled = control.hasAttribute("data-held")
  }
}

/**
 * Holds a button disabled whatever its action does (`true`), e.g. while the
 * server asks to wait, or lets it go again (`false`).
 * @param {HTMLButtonElement} control
 * @param {boolean} held
 */
export const hold = (control, held) => {
  control.toggleAttribute("data-held", held)
  control.disabled = held || control.getAttribute("aria-busy") === "true"
}

/**
 * A form whose submit runs `onSubmit` with its submit button busy.
 * @param {Attributes} attributes
 * @param {() => Promise<void>} onSubmit
 * @param {ReadonlyArray<Child | ReadonlyArray<Child>>} children
 */
export const form = (attributes, onSubmit, ...children) => {
  const element = h("form", { ...attributes, novalidate: true }, ...children)
  element.addEventListener("submit", (event) => {
    event.preventDefault()
    const submit = element.querySelector("button[type='submit']")
    if (submit instanceof HTMLButtonElement) void busy(submit, onSubmit)
    else void onSubmit()
  })
  return element
}

/**
 * A secret shown once: the value, a copy button, and what the reader must know.
 * @param {string} label
 * @param {string} value
 */
export const secretBox = (label, value) => {
  const id = uniqueId("secret")
  const output = h("output", { id, class: "secret-value", "aria-label": label }, value)
  const status = h("span", { class: "copy-status", role: "status" })
  const copy = h("button", { type: "button", class: "button button-secondary" }, "Copy")
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(value)
      status.textContent = "Copied"
    } catch {
      const range = document.createRange()
      range.selectNodeContents(output)
      const selection = window.getSelection()
      selection?.removeAllRanges()
      selection?.addRange(range)
      status.textContent = "Selected: press Ctrl+C (⌘C) to copy"
    }
  })
  return h("div", { class: "secret" }, h("div", { class: "secret-row" }, output, copy), status)
}

/**
 * Asks before something that cannot be undone or that changes what happens
 * next, in a modal `<dialog>` (the Escape key and Cancel say no). `body`: a
 * paragraph, or several parts (a string is a paragraph, a node as it is).
 * Resolves true when confirmed.
 * @param {{ title: string, body: string | ReadonlyArray<Node | string>, confirm: string }} text
 * @returns {Promise<boolean>}
 */
export const confirmAction = (text) =>
  new Promise((resolve) => {
    const titleId = uniqueId("dialog-title")
    const bodyId = uniqueId("dialog-body")
    const yes = h("button", { type: "button", class: "button button-danger" }, text.confirm)
    const no = h("button", { type: "button", class: "button button-secondary" }, "Cancel")
    const parts = typeof text.body === "string" ? [text.body] : text.body
    const dialog = h(
      "dialog",
      { class: "dialog", "aria-labelledby": titleId, "aria-describedby": bodyId },
      h("h2", { id: titleId }, text.title),
      h("div", { id: bodyId, class: "dialog-body" }, parts.map((part) => typeof part === "string" ? h("p", {}, part) : part)),
      h("div", { class: "actions" }, yes, no)
    )
    /** @param {boolean} answer */
    const close = (answer) => {
      dialog.close()
      dialog.remove()
      resolve(answer)
    }
    yes.addEventListener("click", () => close(true))
    no.addEventListener("click", () => close(false))
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault()
      close(false)
    })
    document.body.append(dialog)
    dialog.showModal()
    no.focus()
  })

/**
 * Previous/next for a paged list (`meta` of the back office's lists).
 * @param {{ page: number, per_page: number, total: number }} meta
 * @param {(page: number) => void} go
 */
export const pager = (meta, go) => {
  const pages = Math.max(1, Math.ceil(meta.total / meta.per_page))
  if (pages <= 1) return null
  const previous = h("button", { type: "button", class: "button button-secondary", disabled: meta.page <= 1 }, "← Previous")
  const next = h("button", { type: "button", class: "button button-secondary", disabled: meta.page >= pages }, "Next →")
  previous.addEventListener("click", () => go(meta.page - 1))
  next.addEventListener("click", () => go(meta.page + 1))
  return h("nav", { class: "pager", "aria-label": "Pages" }, previous, h("span", {}, `Page ${meta.page} of ${pages}`), next)
}

/**
 * A table that turns into labelled cards on a narrow screen: each cell
 * carries its column's name (`data-label`) for the stylesheet.
 * @param {string} caption
 * @param {ReadonlyArray<string>} columns
 * @param {ReadonlyArray<ReadonlyArray<Child | ReadonlyArray<Child>>>} rows
 * @param {{ rowAttributes?: (index: number) => Attributes }} [options]
 */
export const table = (caption, columns, rows, options = {}) =>
  h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "table" },
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, columns.map((column) => h("th", { scope: "col" }, column)))),
      h(
        "tbody",
        {},
        rows.map((cells, index) =>
          h(
            "tr",
            options.rowAttributes?.(index) ?? {},
            cells.map((cell, column) =>
              h("td", { "data-label": columns[column] ?? "" }, h("div", { class: "cell" }, ...(Array.isArray(cell) ? cell : [cell])))
            )
          )
        )
      )
    )
  )

/**
 * What a failed call shows, in the panel's words (api.js `explain`: never a
 * route, never a schema phrase): a 403 as a matter of role, a 404 as not
 * found, a refusal of the plan as such, anything else under `doing`.
 * @param {Pick<import("./api.js").Failure, "status" | "code" | "message">} failure
 * @param {string} [doing] what was being done, e.g. "Could not load the keys."
 */
export const problem = (failure, doing = "Something went wrong.") => {
  switch (failure.code) {
    case "FORBIDDEN":
      return notice("warning", "Not available for your role.", failure.message)
    case "NOT_FOUND":
      return notice("warning", "Not found.", failure.message)
    case "TARIFF_TOO_LOW":
      return notice("warning", "Not part of this school's plan.", failure.message)
    case "TOO_MANY_ATTEMPTS":
    case "SERVICE_UNAVAILABLE":
      return notice("warning", doing, failure.message)
    default:
      return notice("error", doing, failure.message)
  }
}

/**
 * Shows why a form's submission failed: the server's `fields` (a 422's, or
 * any other code's that names fields, such as a 409 on an e-mail already
 * taken) under the fields they name, in the panel's words, with a line
 * above the button for what names no field of the form; anything else as
 * one `problem`.
 * @param {Element} formProblem
 * @param {Record<string, { setError: (message: string | null) => void }>} fields
 * @param {import("./api.js").Failure} reply
 * @param {string} doing what was being done, e.g. "Could not issue the key."
 */
export const showSubmitFailure = (formProblem, fields, reply, doing) => {
  const named = reply.fields !== undefined && Object.keys(reply.fields).length > 0
  if (!named) {
    showOwnErrors(fields, {})
    replace(formProblem, reply.code === "VALIDATION_FAILED"
      ? notice("error", doing, "Some of what was entered was not accepted. Check the form and try again.")
      : problem(reply, doing))
    return
  }
  const rest = showFieldErrors(fields, reply.fields)
  replace(formProblem, ...(rest.length > 0 ? [notice("error", doing, `${rest.length === 1 ? "A value" : "Some values"} the form does not show ${rest.length === 1 ? "was" : "were"} not accepted. Reload the page and try again.`)] : []))
}
