// @ts-check
/**
 * The panel's shell (docs/back-office.md "Web panel"): who is signed in, the
 * sections their role may use, the unread count on every page, and the
 * router that shows one section at a time (`#/keys`, `#/webhooks/3`, …).
 * Every rule stays on the server: the role only decides what is offered,
 * and a 403 that is reached anyway is shown as such.
 */
import * as Api from "./api.js"
import { ACCESS } from "./contract-lists.js"
import { h, problem, replace } from "./dom.js"
import { renderKeys } from "./keys.js"
import { renderLeads } from "./leads.js"
import { renderNotifications } from "./notifications.js"
import { renderPassword } from "./password.js"
import { renderSignIn } from "./sign-in.js"
import { renderStaff } from "./staff.js"
import { renderDelivery, renderWebhook } from "./webhook.js"
import { renderWebhooks } from "./webhooks.js"

/** @typedef {import("./api.js").Employee} Employee */
/** @typedef {import("./api.js").Role} Role */

/**
 * What a view gets: where to draw, who is signed in, the route's parameters,
 * and how to register work to stop when the reader leaves the view.
 * @typedef {{
 *   view: HTMLElement,
 *   employee: Employee,
 *   params: ReadonlyArray<string>,
 *   onLeave: (stop: () => void) => void,
 *   isCurrent: () => boolean,
 *   refreshUnread: () => Promise<void>,
 *   setTitle: (title: string) => void
 * }} ViewContext
 */

/**
 * The sections, in the navigation's order; `nav: false` is a page inside a section,
 * `nav: "account"` a page of the header's account area (next to who is signed in).
 * A section is offered to the roles that may call the operation its view reads
 * (docs/back-office.md "Roles"), as the contract says (contract-lists.js).
 * @type {ReadonlyArray<{ pattern: RegExp, label: string, href: string, roles: ReadonlyArray<Role>, nav: boolean | "account", render: (context: ViewContext) => Promise<void> }>}
 */
const ROUTES = [
  { pattern: /^#\/leads$/u, label: "Leads", href: "#/leads", roles: ACCESS["leads.list"], nav: true, render: renderLeads },
  { pattern: /^#\/keys$/u, label: "API keys", href: "#/keys", roles: ACCESS["apiKeys.list"], nav: true, render: renderKeys },
  { pattern: /^#\/webhooks$/u, label: "Webhooks", href: "#/webhooks", roles: ACCESS["webhooks.list"], nav: true, render: renderWebhooks },
  { pattern: /^#\/webhooks\/(\d+)$/u, label: "Webhooks", href: "#/webhooks", roles: ACCESS["webhooks.get"], nav: false, render: renderWebhook },
  {
    pattern: /^#\/webhooks\/(\d+)\/deliveries\/(\d+)$/u,
    label: "Webhooks",
    href: "#/webhooks",
    roles: ACCESS["webhooks.delivery"],
    nav: false,
    render: renderDelivery
  },
  {
    pattern: /^#\/notifications$/u,
    label: "Notifications",
    href: "#/notifications",
    roles: ACCESS["inbox.notifications"],
    nav: true,
    render: renderNotifications
  },
  { pattern: /^#\/staff$/u, label: "Staff", href: "#/staff", roles: ACCESS["employees.list"], nav: "account", render: renderStaff },
  {
    pattern: /^#\/password$/u,
    label: "Change password",
    href: "#/password",
    roles: ACCESS["password.change"],
    nav: "account",
    render: renderPassword
  }
]

/** Where a role lands after signing in: the webhooks, else the leads, else the notifications. */
const home = (/** @type {Role} */ role) =>
  ACCESS["webhooks.list"].includes(role) ? "#/webhooks" : ACCESS["leads.list"].includes(role) ? "#/leads" : "#/notifications"

const main = /** @type {HTMLElement} */ (document.getElementById("main"))
const nav = /** @type {HTMLElement} */ (document.getElementById("nav"))
const who = /** @type {HTMLElement} */ (document.getElementById("who"))

/** @type {{ employee: Employee | null, leave: Array<() => void>, generation: number, unreadTimer: number | undefined }} */
const state = { employee: null, leave: [], generation: 0, unreadTimer: undefined }

/** How often the unread count is asked for while a page stays open. */
const UNREAD_EVERY_MS = 30_000

const unreadBadge = h("span", { class: "count", id: "unread-count", hidden: true })

/** Fetches the unread count and shows it on the Notifications tab. */
const refreshUnread = async () => {
  if (state.employee === null) return
  const reply = await Api.notifications(1, 1)
  if (!reply.ok) return
  const unread = reply.meta.unread ?? 0
  unreadBadge.textContent = String(unread)
  unreadBadge.hidden = unread === 0
  unreadBadge.setAttribute("aria-label", `${unread} unread`)
  document.title = document.title.replace(/^\(\d+\) /u, "")
  if (unread > 0) document.title = `(${unread}) ${document.title}`
}

/** Stops the work of the view being left (timers, polling). */
const leaveView = () => {
  for (const stop of state.leave.splice(0)) stop()
  state.generation += 1
}

const drawChrome = () => {
  const employee = state.employee
  nav.hidden = employee === null
  who.hidden = employee === null
  if (employee === null) {
    nav.replaceChildren()
    who.replaceChildren()
    return
  }
  const current = ROUTES.find((route) => route.pattern.test(location.hash))
  replace(
    nav,
    h(
      "ul",
      {},
      ROUTES.filter((route) => route.nav === true && route.roles.includes(employee.role)).map((route) =>
        h(
          "li",
          {},
          h(
            "a",
            { href: route.href, "aria-current": current?.href === route.href ? "page" : null },
            route.label,
            route.href === "#/notifications" ? unreadBadge : null
          )
        )
      )
    )
  )
  const signOut = h("button", { type: "button", class: "button button-link", id: "sign-out" }, "Sign out")
  signOut.addEventListener("click", async () => {
    signOut.disabled = true
    await Api.signOut()
    endSession({ tone: "success", text: "You have signed out." })
  })
  replace(
    who,
    h("span", { class: "who-name", title: employee.name }, employee.name),
    h("span", { class: "who-role" }, employee.role),
    ROUTES.filter((route) => route.nav === "account" && route.roles.includes(employee.role)).map((route) =>
      h("a", { href: route.href, class: "account-link", "aria-current": current?.href === route.href ? "page" : null }, route.label)
    ),
    signOut
  )
}

/**
 * Back to the sign-in form, with a message; `returnTo` is where to go after.
 * @param {{ tone: "info" | "success" | "warning", text: string } | null} message
 */
const endSession = (message, returnTo = "") => {
  leaveView()
  state.employee = null
  if (state.unreadTimer !== undefined) clearInterval(state.unreadTimer)
  state.unreadTimer = undefined
  drawChrome()
  if (location.hash !== "#/sign-in") history.replaceState(null, "", "#/sign-in")
  const view = h("div", { class: "view view-narrow" })
  main.replaceChildren(view)
  renderSignIn(view, message, async (employee) => {
    startSession(employee)
    location.hash = returnTo !== "" && returnTo !== "#/sign-in" ? returnTo : home(employee.role)
    await route()
  })
}

/** @param {Employee} employee */
const startSession = (employee) => {
  state.employee = employee
  if (state.unreadTimer !== undefined) clearInterval(state.unreadTimer)
  state.unreadTimer = window.setInterval(() => void refreshUnread(), UNREAD_EVERY_MS)
}

Api.onSessionEnded(() => {
  if (state.employee === null) return
  endSession({ tone: "warning", text: "Your session has expired or was ended. Sign in again to continue." }, location.hash)
})

/** Shows the view the address names. */
const route = async () => {
  const employee = state.employee
  if (employee === null) return
  leaveView()
  const generation = state.generation
  if (!location.hash.startsWith("#/") || location.hash === "#/" || location.hash === "#/sign-in") {
    history.replaceState(null, "", home(employee.role))
  }
  drawChrome()
  const view = h("div", { class: "view" })
  main.replaceChildren(view)
  const found = ROUTES.map((route) => ({ route, match: route.pattern.exec(location.hash) })).find(({ match }) => match !== null)
  /** @param {string} title */
  const setTitle = (title) => {
    document.title = `${title} · School CRM`
    void refreshUnread()
  }
  /** @type {ViewContext} */
  const context = {
    view,
    employee,
    params: found?.match?.slice(1) ?? [],
    onLeave: (stop) => {
      state.leave.push(stop)
    },
    isCurrent: () => state.generation === generation,
    refreshUnread,
    setTitle
  }
  if (found === undefined) {
    setTitle("Not found")
    replace(view, h("h1", { tabindex: "-1" }, "Page not found"), h("p", {}, h("a", { href: home(employee.role) }, "Go to the start page")))
  } else {
    await found.route.render(context)
  }
}

/** Moves focus to the page's heading after a navigation, so a screen reader starts there. */
const focusHeading = () => {
  const heading = main.querySelector("h1")
  if (heading instanceof HTMLElement) {
    heading.setAttribute("tabindex", "-1")
    heading.focus({ preventScroll: true })
  }
}

window.addEventListener("hashchange", async () => {
  if (state.employee === null) return
  await route()
  focusHeading()
})

document.querySelector(".skip-link")?.addEventListener("click", (event) => {
  event.preventDefault()
  main.focus()
})

const boot = async () => {
  const reply = await Api.currentSession()
  if (reply.ok) {
    startSession(reply.data.employee)
    await route()
  } else if (reply.status === 401) {
    endSession(null, location.hash)
  } else {
    replace(main, h("div", { class: "view view-narrow" }, h("h1", {}, "School CRM"), problem(reply, "Could not open the back office.")))
  }
}

void boot()
