// @ts-check
/**
 * The signed-in employee's notifications (docs/back-office.md "Leads,
 * funnels and tasks"), newest first: unread ones marked, each can be marked
 * read, and a "subscription problematic" one links to its webhook.
 */
import * as Api from "./api.js"
import { badge, button, empty, h, loading, pager, problem, replace, time } from "./dom.js"

/** @typedef {import("./app.js").ViewContext} ViewContext */
/** @typedef {import("./api.js").Notification} Notification */

/** What each kind of the contract is called here. @type {{ readonly [Kind in Notification["kind"]]: string }} */
const KIND_LABEL = {
  subscription_problematic: "Webhook failing",
  task_assigned: "New task"
}

/** @param {ViewContext} context */
export const renderNotifications = async (context) => {
  const { view } = context
  context.setTitle("Notifications")
  const list = h("section", { class: "card", "aria-labelledby": "notifications-title" })
  const heading = h("h1", { id: "notifications-title" }, "Notifications")
  let page = 1

  /** @param {Notification} item */
  const entry = (item) => {
    const unread = item.read_at === null
    return h(
      "li",
      { class: unread ? "notification unread" : "notification", "data-kind": item.kind },
      h(
        "div",
        { class: "notification-head" },
        unread ? badge("unread", "info") : null,
        h("span", { class: "notification-kind" }, KIND_LABEL[item.kind] ?? item.kind),
        time(item.created_at)
      ),
      h("p", { class: "notification-message" }, item.message),
      h(
        "div",
        { class: "actions" },
        item.kind === "subscription_problematic" && item.subscription_id !== null
          ? h("a", { href: `#/webhooks/${item.subscription_id}`, class: "button button-secondary" }, `Open webhook #${item.subscription_id}`)
          : null,
        unread
          ? button("Mark as read", async () => {
            const reply = await Api.markRead(item.id)
            if (!context.isCurrent()) return
            if (!reply.ok) {
              replace(list, problem(reply, "Could not mark it read."))
              return
            }
            await load()
            await context.refreshUnread()
          })
          : h("span", { class: "muted small" }, "Read ", time(item.read_at))
      )
    )
  }

  const load = async () => {
    const reply = await Api.notifications(page)
    if (!context.isCurrent()) return
    if (!reply.ok) {
      replace(list, problem(reply, "Could not load the notifications."))
      return
    }
    const unread = reply.meta.unread ?? 0
    replace(
      list,
      h("p", { class: "muted" }, unread === 0 ? "Everything is read." : `${unread} unread.`),
      reply.data.length === 0
        ? empty("No notifications.", h("p", { class: "muted" }, "Failing webhooks and new tasks show here."))
        : h("ul", { class: "notifications" }, reply.data.map(entry)),
      pager(reply.meta, (next) => {
        page = next
        void load()
      })
    )
  }

  replace(view, heading, list)
  replace(list, loading("Loading notifications…"))
  await load()
}
