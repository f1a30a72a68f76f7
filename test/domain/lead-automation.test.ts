/**
 * Property tests of the lead section's pure rules (docs/back-office.md
 * "Leads, funnels and tasks"): what a status move runs (`Leads.automation`), the
 * notification's text, the funnel body's distinct priorities, and the back
 * office's lead body keeping every public rule.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option, Result, Schema } from "effect"
import { Leads } from "@school/domain"

const Id = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))
const Title = Schema.NullOr(Schema.String)
const Responsible = Schema.NullOr(Id)
const MovingLead = Schema.Struct({
  id: Id,
  name: Schema.String,
  phone: Schema.String,
  pipeline_status_id: Id,
  responsible_id: Responsible
})

describe("a status move's automation", () => {
  it.prop("the status the lead is already in: nothing at all", [MovingLead, Title], ([lead, title]) => {
    const plan = Leads.automation(lead, { id: lead.pipeline_status_id, auto_task_title: title })
    assert.deepStrictEqual(plan, { moved: false, task: Option.none(), notification: Option.none() })
  })

  it.prop("another status: moved; a task exactly when it has a title, for the responsible; a notification exactly when there is one", [
    MovingLead,
    Id,
    Title
  ], ([lead, target, title]) => {
    if (target === lead.pipeline_status_id) return
    const plan = Leads.automation(lead, { id: target, auto_task_title: title })
    assert.isTrue(plan.moved)
    const hasTitle = title !== null && title !== ""
    assert.deepStrictEqual(plan.task, hasTitle ? Option.some({ title, assigneeId: lead.responsible_id }) : Option.none())
    assert.strictEqual(Option.isSome(plan.notification), hasTitle && lead.responsible_id !== null)
    if (Option.isSome(plan.notification)) {
      assert.strictEqual(plan.notification.value.employeeId, lead.responsible_id)
      assert.strictEqual(plan.notification.value.message, Leads.taskAssignedMessage(lead, title ?? ""))
    }
  })

  it.prop("the notification names the task and the lead", [MovingLead, Schema.String], ([lead, title]) => {
    const message = Leads.taskAssignedMessage(lead, title)
    assert.include(message, `"${title}"`)
    assert.include(message, `lead #${lead.id}`)
    assert.include(message, lead.phone)
    assert.include(message, lead.name)
  })
})

describe("POST /funnels: distinct priorities", () => {
  const Priorities = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: -20, maximum: 20 })))

  it.prop("repeatedPriority finds a repeat exactly when the priorities are not distinct", [Priorities], ([priorities]) => {
    const repeated = Leads.repeatedPriority(priorities.map((priority) => ({ priority })))
    assert.strictEqual(Option.isSome(repeated), new Set(priorities).size !== priorities.length)
    if (Option.isSome(repeated)) assert.strictEqual(priorities.filter((p) => p === repeated.value).length >= 2, true)
  })

  it.prop("the body decodes exactly when there are 1..100 statuses with distinct priorities", [Priorities], ([priorities]) => {
    const body = { name: "Funnel", statuses: priorities.map((priority, i) => ({ name: `S${i}`, priority })) }
    const decoded = Schema.decodeUnknownResult(Leads.CreateFunnelRequest)(body)
    const valid = priorities.length >= 1 && priorities.length <= Leads.MAX_STATUSES && new Set(priorities).size === priorities.length
    assert.strictEqual(Result.isSuccess(decoded), valid)
  })
})

describe("the back office's POST /leads body: the public rules, plus responsible_id", () => {
  const Body = Schema.Struct({
    phone: Schema.String,
    name: Schema.optionalKey(Schema.NullOr(Schema.String)),
    funnel_id: Schema.optionalKey(Schema.NullOr(Schema.Int))
  })

  it.prop("without responsible_id it decodes exactly as the public body does, to the same new lead but source crm", [Body], ([body]) => {
    const publicResult = Schema.decodeUnknownResult(Leads.CreateLeadRequest)(body)
    const crmResult = Schema.decodeUnknownResult(Leads.CrmCreateLeadRequest)(body)
    assert.strictEqual(Result.isSuccess(crmResult), Result.isSuccess(publicResult))
    if (Result.isSuccess(crmResult) && Result.isSuccess(publicResult)) {
      assert.deepStrictEqual(Leads.toCrmNewLead(crmResult.success), {
        ...Leads.toNewLead(publicResult.success),
        source: "crm",
        responsibleId: null
      })
    }
  })

  it.prop("responsible_id: a positive integer id, or null/absent for none", [Schema.Number], ([responsible]) => {
    const decoded = Schema.decodeUnknownResult(Leads.CrmCreateLeadRequest)({ phone: "12345", responsible_id: responsible })
    assert.strictEqual(
      Result.isSuccess(decoded),
      Number.isInteger(responsible) && responsible >= 1 && responsible <= 2_147_483_647
    )
  })
})
