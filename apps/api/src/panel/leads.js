// @ts-check
/**
 * The school's leads (docs/back-office.md "Leads, funnels and tasks"): the
 * general list with each lead's funnel and status, moving a lead to another
 * status of its funnel, and the task the status's automation created, with
 * the reader's tasks below. Newest leads first (the server's order); each
 * task names its lead (`lead_name`). Long names, comments, sources and
 * task titles are cut to a line or two, the whole text in `title` (hover).
 */
import * as Api from "./api.js"
import { ACCESS } from "./contract-lists.js"
import { busy, clippedLine, empty, h, loading, notice, pager, problem, replace, table, time } from "./dom.js"

/** @typedef {import("./app.js").ViewContext} ViewContext */
/** @typedef {import("./api.js").Lead} Lead */
/** @typedef {import("./api.js").Funnel} Funnel */
/** @typedef {import("./api.js").Task} Task */

/** A lead's comment under its name: at most two lines, the whole of it on hover. @param {string} comment */
const commentLines = (comment) => comment === "" ? null : h("span", { class: "clip-lines muted small", title: comment }, comment)

/** The newest tasks the reader may see (the last page of their list). @returns {Promise<Task[] | null>} */
const latestTasks = async () => {
  const first = await Api.tasks(1, 100)
  if (!first.ok) return null
  const pages = Math.ceil(first.meta.total / 100)
  if (pages <= 1) return first.data
  const last = await Api.tasks(pages, 100)
  return last.ok ? last.data : first.data
}

/** @param {ViewContext} context */
export const renderLeads = async (context) => {
  const { view, employee } = context
  context.setTitle("Leads")
  const message = h("div", { class: "action-message", "aria-live": "polite" })
  const list = h("section", { class: "card", "aria-labelledby": "leads-title" }, loading("Loading leads…"))
  const taskList = h("section", { class: "card", "aria-labelledby": "tasks-title" })
  replace(
    view,
    h("h1", {}, "Leads"),
    h("p", { class: "lead" }, "Moving a lead to a status with an automatic task creates that task for the lead's responsible employee."),
    message,
    list,
    taskList
  )
  let page = 1
  /** @type {Map<number, string>} */
  const names = new Map([[employee.id, `${employee.name} (you)`]])
  if (ACCESS["employees.list"].includes(employee.role)) {
    const staff = await Api.employees()
    if (staff.ok) for (const member of staff.data) if (member.id !== employee.id) names.set(member.id, member.name)
  }
  /** @param {number | null} id */
  const who = (id) => id === null ? h("span", { class: "muted" }, "nobody") : names.get(id) ?? `employee #${id}`

  /** @param {Task[] | null} tasks */
  const drawTasks = (tasks) => {
    replace(
      taskList,
      h("h2", { id: "tasks-title" }, employee.role === "manager" ? "Your tasks" : "Tasks"),
      tasks === null
        ? notice("error", null, "Could not load the tasks.")
        : tasks.length === 0
        ? empty("No tasks.")
        : table(
          "Tasks, oldest first",
          ["Task", "Lead", "Assigned to", "Created"],
          tasks.map((task) => [clippedLine(task.title, "strong"), clippedLine(task.lead_name), who(task.assignee_id), time(task.created_at)])
        )
    )
  }

  /**
   * @param {Lead} lead
   * @param {ReadonlyArray<Funnel>} funnels
   */
  const statusCell = (lead, funnels) => {
    const funnel = funnels.find((candidate) => candidate.statuses.some((status) => status.id === lead.pipeline_status_id))
    if (funnel === undefined) return h("span", { class: "muted" }, `status #${lead.pipeline_status_id}`)
    const selectId = `lead-${lead.id}-status`
    const select = h(
      "select",
      { id: selectId, "aria-label": `Status of lead #${lead.id}` },
      funnel.statuses.map((status) =>
        h("option", { value: String(status.id), selected: status.id === lead.pipeline_status_id }, status.name)
      )
    )
    const move = h("button", { type: "button", class: "button button-secondary", disabled: true }, "Move")
    select.addEventListener("change", () => {
      move.disabled = Number(select.value) === lead.pipeline_status_id
    })
    move.addEventListener("click", () =>
      void busy(move, async () => {
        const target = funnel.statuses.find((status) => status.id === Number(select.value))
        if (target === undefined) return
        const before = await latestTasks()
        const reply = await Api.moveLead(lead.id, target.id)
        if (!context.isCurrent()) return
        if (!reply.ok) {
          replace(message, problem(reply, "Could not move the lead."))
          return
        }
        const after = await latestTasks()
        const known = new Set((before ?? []).map((task) => task.id))
        const created = (after ?? []).filter((task) => task.lead_id === lead.id && !known.has(task.id))
        const label = lead.name === "" ? lead.phone : lead.name
        replace(
          message,
          notice(
            "success",
            `Moved “${label}” to “${target.name}”.`,
            created.length > 0
              ? created.map((task) => h("p", {}, `Task created: “${task.title}”, assigned to `, who(task.assignee_id), "."))
              : target.auto_task_title === null
              ? h("p", {}, "This status has no automatic task.")
              : h("p", {}, `The status's automation created the task “${target.auto_task_title}” for the lead's responsible employee.`)
          )
        )
        await Promise.all([load(), context.refreshUnread()])
      }))
    return h("div", { class: "status-move" }, h("span", { class: "muted small" }, funnel.name), h("div", { class: "inline" }, select, move))
  }

  const load = async () => {
    const [leads, funnels, tasks] = await Promise.all([Api.leads(page), Api.funnels(), latestTasks()])
    if (!context.isCurrent()) return
    if (!leads.ok) {
      replace(list, problem(leads, "Could not load the leads."))
      taskList.replaceChildren()
      return
    }
    const allFunnels = funnels.ok ? funnels.data : []
    replace(
      list,
      h("h2", { id: "leads-title" }, `${leads.meta.total} ${leads.meta.total === 1 ? "lead" : "leads"}`),
      leads.data.length === 0
        ? empty("No leads yet.", h("p", { class: "muted" }, "Leads from the website and the public API show here."))
        : table(
          "Leads, newest first",
          ["Lead", "Phone", "Source", "Funnel and status", "Responsible", "Created"],
          leads.data.map((lead) => [
            [lead.name === "" ? h("span", { class: "strong muted" }, "(no name)") : clippedLine(lead.name, "strong"), commentLines(lead.comment)],
            h("span", { class: "phone" }, lead.phone),
            clippedLine(lead.source, "source"),
            statusCell(lead, allFunnels),
            who(lead.responsible_id),
            time(lead.created_at)
          ])
        ),
      pager(leads.meta, (next) => {
        page = next
        void load()
      })
    )
    drawTasks(tasks)
  }
  await load()
}
