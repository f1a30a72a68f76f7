// @ts-check
/**
 * The panel's building blocks: elements made with the DOM, never from HTML
 * text. Every string a caller passes as a child becomes a text node, so a
 * value from the server (a URL, a name) can only ever show as characters.
 */

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
    /** @param {string | null} message */
    setError: (message) => {
      error.textContent = message ?? ""
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
    /** @param {string | null} message */
    setError: (message) => {
      error.textContent = message ?? ""
      error.hidden = message === null
      if (message === null) boxes[0]?.removeAttribute("aria-invalid")
      else boxes[0]?.setAttribute("aria-invalid", "true")
    }
  }
}

/**
 * Shows the server's 422 `fields` next to the fields they name; what names
 * no field on the form goes to `rest`. Clears earlier errors first.
 * @param {Record<string, { setError: (message: string | null) => void }>} fields
 * @param {Record<string, string | ReadonlyArray<string>> | undefined} errors
 * @returns {string[]} the messages for fields the form does not have
 */
export const showFieldErrors = (fields, errors) => {
  for (const entry of Object.values(fields)) entry.setError(null)
  /** @type {string[]} */
  const rest = []
  for (const [name, messages] of Object.entries(errors ?? {})) {
    const text = typeof messages === "string" ? messages : messages.join(" ")
    const top = name.split(/[.[]/u)[0] ?? name
    const target = fields[name] ?? fields[top]
    if (target === undefined) rest.push(`${name}: ${text}`)
    else target.setError(text)
  }
  const invalid = document.querySelector("[aria-invalid='true']")
  if (invalid instanceof HTMLElement) invalid.focus()
  return rest
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
 * What a failed call shows: a 403 as a matter of role, anything else with
 * the server's own message.
 * @param {Pick<import("./api.js").Failure, "status" | "code" | "message">} failure
 * @param {string} [doing] what was being done, e.g. "Could not load the keys."
 */
export const problem = (failure, doing = "Something went wrong.") =>
  failure.code === "FORBIDDEN"
    ? notice("warning", "Not available for your role.", failure.message)
    : failure.code === "NOT_FOUND"
    ? notice("warning", "Not found.", failure.message)
    : notice("error", doing, failure.message)

/**
 * How long a 429 says to wait, in words: "17 seconds", "1 second", or "a
 * little while" without `Retry-After`.
 * @param {number | undefined} retryAfter
 */
export const waitText = (retryAfter) =>
  retryAfter === undefined ? "a little while" : `${retryAfter} second${retryAfter === 1 ? "" : "s"}`

/**
 * Shows why a form's submission failed: a 422's `fields` next to the
 * fields they name (and what names no field of the form above its button,
 * in `formProblem`), anything else as one `problem`.
 * @param {Element} formProblem
 * @param {Record<string, { setError: (message: string | null) => void }>} fields
 * @param {import("./api.js").Failure} reply
 * @param {string} doing what was being done, e.g. "Could not issue the key."
 */
export const showSubmitFailure = (formProblem, fields, reply, doing) => {
  if (reply.code !== "VALIDATION_FAILED") {
    replace(formProblem, problem(reply, doing))
    return
  }
  const rest = showFieldErrors(fields, reply.fields)
  replace(formProblem, ...(rest.length > 0 || reply.fields === undefined ? [notice("error", reply.message, rest.join(" "))] : []))
}
