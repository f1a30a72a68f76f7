// @ts-check
/**
 * Staff (docs/back-office.md "Staff"), for the owner and administrators: the
 * list with each member's role and state, adding a member, changing a role,
 * disabling (after a confirmation that says what it means) and enabling,
 * and ending a member's sessions. Who may change whom is shown before any
 * click, as disabled controls with the reason; the server checks it again
 * and its refusal is shown as such.
 */
import * as Api from "./api.js"
import { badge, busy, clipped, confirmAction, empty, field, form, h, loading, notice, pager, PASSWORD_MIN, problem, replace, showOwnErrors, showSubmitFailure, table } from "./dom.js"

/** @typedef {import("./app.js").ViewContext} ViewContext */
/** @typedef {import("./api.js").Employee} Employee */
/** @typedef {import("./api.js").StaffMember} StaffMember */
/** @typedef {import("./api.js").Role} Role */

/** The roles the panel may give: every role but the owner's, which nobody gives. @type {ReadonlyArray<Exclude<Role, "owner">>} */
const GIVEN_ROLES = ["administrator", "manager", "teacher"]

export { PASSWORD_MIN }

/** A password's length in characters (code points, not UTF-16 units). */
export const length = (/** @type {string} */ text) => [...text].length

/** "a manager", "an administrator" */
const withArticle = (/** @type {Role} */ role) => `${/^[aeiou]/u.test(role) ? "an" : "a"} ${role}`

/**
 * Why the reader may not change `member`, or null when they may: the rule of
 * docs/back-office.md "Staff" (nobody changes the owner; the owner anyone but
 * themselves; an administrator managers and teachers).
 * @param {Employee} reader
 * @param {StaffMember} member
 * @returns {string | null}
 */
export const whyNot = (reader, member) => {
  if (member.role === "owner") return "Nobody can change the owner's account."
  if (member.id === reader.id) return "You cannot change your own role or access."
  if (reader.role === "owner") return null
  if (member.role === "manager" || member.role === "teacher") return null
  return `Only the owner can change ${withArticle(member.role)}.`
}

/** @param {ViewContext} context */
export const renderStaff = async (context) => {
  const { view, employee } = context
  context.setTitle("Staff")
  const message = h("div", { class: "action-message", "aria-live": "polite" })
  const list = h("section", { class: "card", "aria-labelledby": "staff-list-title" })
  const heading = () => h("h2", { id: "staff-list-title" }, "Staff")
  let page = 1

  /**
   * Shows what an action did, or why it did not, above the list.
   * @param {import("./api.js").Reply<unknown, unknown>} reply
   * @param {string} done
   * @param {string} doing
   */
  const report = async (reply, done, doing) => {
    if (!context.isCurrent()) return
    replace(message, reply.ok ? notice("success", null, done) : problem(reply, doing))
    await loadList()
  }

  /** The role column: a select and its button when the reader may change it, else the role as text. */
  const roleCell = (/** @type {StaffMember} */ member, /** @type {string | null} */ reason) => {
    if (member.role === "owner") return h("span", { class: "strong" }, "owner")
    const select = h(
      "select",
      { "aria-label": `Role of ${member.name}`, disabled: reason !== null, name: "role" },
      GIVEN_ROLES.map((role) => h("option", { value: role, selected: role === member.role }, role))
    )
    // Offered once another role is chosen.
    const save = h("button", { type: "button", class: "button button-secondary", hidden: true }, "Change role")
    select.addEventListener("change", () => {
      save.hidden = select.value === member.role
    })
    save.addEventListener("click", () =>
      void busy(save, async () => {
        const role = /** @type {Exclude<Role, "owner">} */ (select.value)
        const reply = await Api.updateEmployee(member.id, { role })
        await report(reply, `${member.name} is now ${withArticle(role)}. The new role applies from their next action.`, `Could not change ${member.name}'s role.`)
      }))
    return h("div", { class: "inline" }, select, save)
  }

  /** The actions column: disable or enable, end sessions; the reason when they are not the reader's to use. */
  const actionsCell = (/** @type {StaffMember} */ member, /** @type {string | null} */ reason) => {
    if (member.role === "owner") return h("span", { class: "muted small" }, reason ?? "")
    const locked = reason !== null
    const toggle = h("button", { type: "button", class: `button ${member.disabled ? "button-secondary" : "button-danger"}`, disabled: locked }, member.disabled ? "Enable" : "Disable")
    toggle.addEventListener("click", () =>
      void busy(toggle, async () => {
        if (member.disabled) {
          const reply = await Api.updateEmployee(member.id, { disabled: false })
          await report(reply, `${member.name} is enabled and can sign in again.`, `Could not enable ${member.name}.`)
          return
        }
        const sure = await confirmAction({
          title: `Disable ${member.name}?`,
          body: [
            `${member.name}'s sessions end now and ${member.name} cannot sign in until enabled again.`,
            "Nothing of theirs is deleted; enabling them later lets them sign in with the same password."
          ],
          confirm: "Disable"
        })
        if (!sure) return
        const reply = await Api.updateEmployee(member.id, { disabled: true })
        await report(reply, `${member.name} is disabled: signed out everywhere, and cannot sign in until enabled again.`, `Could not disable ${member.name}.`)
      }))
    const end = h("button", { type: "button", class: "button button-secondary", disabled: locked }, "End sessions")
    end.addEventListener("click", () =>
      void busy(end, async () => {
        const sure = await confirmAction({
          title: `End ${member.name}'s sessions?`,
          body: `${member.name} is signed out on every device now, and can sign in again with their password.`,
          confirm: "End sessions"
        })
        if (!sure) return
        const reply = await Api.endSessions(member.id)
        if (!reply.ok) {
          await report(reply, "", `Could not end ${member.name}'s sessions.`)
          return
        }
        const ended = reply.data.ended
        await report(reply, `${ended} ${ended === 1 ? "session" : "sessions"} ended for ${member.name}.`, "")
      }))
    return h(
      "div",
      { class: "row-actions" },
      h("div", { class: "actions" }, toggle, end),
      reason === null ? null : h("p", { class: "muted small reason" }, reason)
    )
  }

  /** @returns {Promise<boolean>} whether the list could be read */
  const loadList = async () => {
    const reply = await Api.listStaff(page)
    if (!context.isCurrent()) return false
    if (!reply.ok) {
      replace(list, heading(), problem(reply, "Could not load the staff."))
      return false
    }
    replace(
      list,
      heading(),
      reply.data.length === 0
        ? empty("No staff yet.")
        : table(
          "Staff",
          ["Name", "E-mail", "Role", "State", ""],
          reply.data.map((member) => {
            const reason = whyNot(employee, member)
            return [
              member.id === employee.id ? [clipped(member.name, "strong"), " (you)"] : clipped(member.name, "strong"),
              clipped(member.email, "url"),
              roleCell(member, reason),
              member.disabled ? badge("disabled", "off") : badge("active", "ok"),
              actionsCell(member, reason)
            ]
          }),
          { rowAttributes: (index) => ({ "data-employee": reply.data[index]?.email ?? "" }) }
        ),
      pager(reply.meta, (next) => {
        page = next
        void loadList()
      })
    )
    return true
  }

  const name = field("Name", h("input", { type: "text", name: "name", maxlength: "255", autocomplete: "off", required: true }))
  const email = field("E-mail", h("input", { type: "email", name: "email", autocomplete: "off", spellcheck: "false", required: true }), {
    hint: "They sign in with it."
  })
  const password = field("Password", h("input", { type: "password", name: "password", autocomplete: "new-password", required: true }), {
    hint: `At least ${PASSWORD_MIN} characters. Tell it to them privately; they can change it after signing in.`
  })
  const role = field(
    "Role",
    h("select", { name: "role" }, GIVEN_ROLES.map((given) => h("option", { value: given, selected: given === "teacher" }, given)))
  )
  const formProblem = h("div", { class: "form-problem" })
  const fields = { name, email, password, role }
  const addForm = form({ class: "form form-grid form-staff", "aria-labelledby": "add-title" }, async () => {
    replace(formProblem)
    const body = {
      name: name.control.value.trim(),
      email: email.control.value.trim(),
      password: password.control.value,
      role: role.control.value
    }
    /** @type {Record<string, string>} */
    const missing = {}
    if (body.name === "") missing["name"] = "Enter their name."
    if (body.email === "") missing["email"] = "Enter their e-mail."
    if (length(body.password) < PASSWORD_MIN) missing["password"] = `Choose a password of at least ${PASSWORD_MIN} characters.`
    if (Object.keys(missing).length > 0) {
      showOwnErrors(fields, missing)
      return
    }
    const reply = await Api.addEmployee(body)
    if (!context.isCurrent()) return
    if (reply.ok) {
      showOwnErrors(fields, {})
      addForm.reset()
      replace(message, notice("success", null, `${reply.data.name} is added as ${withArticle(reply.data.role)} and can sign in with ${reply.data.email}.`))
      await loadList()
      return
    }
    showSubmitFailure(formProblem, fields, reply, "Could not add the employee.")
  },
    h("h2", { id: "add-title" }, "Add an employee"),
    name.element,
    email.element,
    password.element,
    role.element,
    formProblem,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "button button-primary" }, "Add employee"))
  )

  replace(
    view,
    h("h1", {}, "Staff"),
    h(
      "p",
      { class: "lead" },
      "Who may sign in to the back office, and with which role. The owner can change anyone else; an administrator can change managers and teachers. Nobody can change the owner."
    ),
    message,
    list
  )
  replace(list, heading(), loading("Loading staff…"))
  // The form is offered only once the list shows the reader may manage staff.
  if (await loadList()) view.append(h("section", { class: "card" }, addForm))
}
