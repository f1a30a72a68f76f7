/**
 * Leads (docs/integrators.md "Writing"; docs/decisions.md "Writes"): the
 * public POST /leads body, the lead as the API returns it, its defaults, and
 * the rule that places a new lead in its funnel; and the back office's lead
 * section (docs/back-office.md "Leads, funnels and tasks"): its lead (with
 * the responsible employee), funnels with their statuses, the automation a
 * status move runs, and the inbox it fills (tasks and notifications).
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { DecimalIntFromString, IntUpToMaxId, LeadId, PositiveInt32 } from "./Ids.ts"
import { Phone } from "./Phone.ts"
import { COMMENT_MAX, NAME_MAX, SOURCE_MAX, Text } from "./Text.ts"
import { Timestamp } from "./Timestamps.ts"

/** `source` defaults to `api` (docs/integrators.md "Writing"). */
export const DEFAULT_SOURCE = "api"
/** `funnel_id` 0 (or absent) is the school's main funnel, a placeholder, not a row (docs/integrators.md "Writing"). */
export const MAIN_FUNNEL = 0

/** An optional body field; `null` is read as absent. `expected` names the type in messages. */
export const optionalField = <S extends Schema.Top>(schema: S, expected: string, description: string) =>
  Schema.optionalKey(Schema.NullOr(schema)).annotate({ expected, description })

export const CreateLeadRequest = Schema.Struct({
  phone: Phone.pipe(Schema.annotateKey({ messageMissingKey: "phone is required" })),
  name: optionalField(Text(NAME_MAX), "a string", `At most ${NAME_MAX} characters, trimmed; "" when omitted`),
  comment: optionalField(Text(COMMENT_MAX), "a string", `At most ${COMMENT_MAX} characters, trimmed`),
  source: optionalField(Text(SOURCE_MAX), "a string", `At most ${SOURCE_MAX} characters; "api" when omitted or empty`),
  funnel_id: optionalField(
    IntUpToMaxId(0, "Expected 0 (the main funnel) or a funnel id"),
    "an integer",
    "Omitted or 0: the school's main funnel. Otherwise a funnel of the calling school, else funnel_not_found"
  )
}).annotate({
  identifier: "CreateLeadRequest",
  message: "Expected a JSON object",
  description: "Unknown fields are ignored.",
  examples: [{ phone: "+7 (999) 123-45-67", name: "Anna Ivanova", comment: "Called about evening classes", source: "website" }]
})
export type CreateLeadRequest = typeof CreateLeadRequest.Type

/** What the repository writes: every default applied. */
export interface NewLead {
  readonly name: string
  readonly phone: string
  readonly comment: string
  readonly source: string
  /** 0: the main funnel. */
  readonly funnelId: number
  /** The back office's responsible employee; a lead created through the public API has none. */
  readonly responsibleId?: number | null | undefined
}

/** The defaults (docs/integrators.md "Writing"): name and comment "", source "api" (also for an empty one), funnel 0. */
export const toNewLead = (request: CreateLeadRequest): NewLead => ({
  phone: request.phone,
  name: request.name ?? "",
  comment: request.comment ?? "",
  source: request.source === undefined || request.source === null || request.source === ""
    ? DEFAULT_SOURCE
    : request.source,
  funnelId: request.funnel_id ?? MAIN_FUNNEL
})

export const Lead = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  phone: Schema.String,
  source: Schema.String,
  comment: Schema.String,
  funnel_id: Schema.Int.annotate({
    description: "The request's funnel_id; 0 means the main funnel (a placeholder, never a foreign key)"
  }),
  pipeline_status_id: Schema.Int.annotate({ description: "The lowest-priority status of the lead's funnel" }),
  created_at: Timestamp
}).annotate({
  identifier: "Lead",
  examples: [{
    id: 7,
    name: "Anna Ivanova",
    phone: "+7 (999) 123-45-67",
    source: "website",
    comment: "Called about evening classes",
    funnel_id: 0,
    pipeline_status_id: 1,
    created_at: "2026-11-22T09:15:03.123456Z"
  }]
})
export type Lead = typeof Lead.Type

export interface PipelineStatus {
  readonly id: number
  readonly priority: number
}

/**
 * A new lead goes to the status with the lowest priority
 * value of its funnel; equal priorities go to the oldest status (lowest id).
 * The repository's `ORDER BY priority, id LIMIT 1` is this rule in SQL; a
 * property test holds the two together.
 */
export const lowestPriorityStatus = (statuses: ReadonlyArray<PipelineStatus>): Option.Option<PipelineStatus> => {
  let best: PipelineStatus | undefined
  for (const status of statuses) {
    if (best === undefined || status.priority < best.priority || (status.priority === best.priority && status.id < best.id)) {
      best = status
    }
  }
  return Option.fromNullishOr(best)
}

// ---------------------------------------------------------------------------
// The back office's lead section (docs/back-office.md)

export const EmployeeId = PositiveInt32.pipe(Schema.brand("EmployeeId"))
export type EmployeeId = typeof EmployeeId.Type
export const PipelineStatusId = PositiveInt32.pipe(Schema.brand("PipelineStatusId"))
export type PipelineStatusId = typeof PipelineStatusId.Type
export const NotificationId = PositiveInt32.pipe(Schema.brand("NotificationId"))
export type NotificationId = typeof NotificationId.Type

/** `/leads/{id}/status`. */
export const LeadIdFromPath = DecimalIntFromString(LeadId)
/** `/notifications/{id}/read`. */
export const NotificationIdFromPath = DecimalIntFromString(NotificationId)

/** A funnel's and a status's name, and an automatic task's title: trimmed, non-empty, bounded. */
export const TITLE_MAX = 255
const RequiredName = (max: number) =>
  Text(max).check(Schema.isMinLength(1, { message: "Expected a non-empty string" }))

/** A pipeline status priority: any `integer` (smaller runs first; a new lead takes the smallest). */
export const Priority = Schema.Number.annotate({ message: "Expected an integer" }).check(
  Schema.isInt(),
  Schema.isBetween({ minimum: -2_147_483_648, maximum: 2_147_483_647 }, { message: "Expected a 32-bit integer" })
)

/** POST /leads in the back office: the public body (the same rules) plus the responsible employee. */
export const CrmCreateLeadRequest = Schema.Struct({
  ...CreateLeadRequest.fields,
  responsible_id: optionalField(
    IntUpToMaxId(1, "Expected a positive employee id"),
    "an integer",
    "An employee of the school who is responsible for the lead; omitted or null: none"
  )
}).annotate({
  identifier: "CrmCreateLeadRequest",
  message: "Expected a JSON object",
  description: "Unknown fields are ignored.",
  examples: [{
    phone: "+7 (999) 123-45-67",
    name: "Anna Ivanova",
    comment: "Came to the open day",
    source: "crm",
    funnel_id: 0,
    responsible_id: 8
  }]
})
export type CrmCreateLeadRequest = typeof CrmCreateLeadRequest.Type

/** docs/decisions.md "Lead section and inbox": a lead typed in by staff says so when no source is given. */
export const CRM_SOURCE = "crm"

/** The public defaults (toNewLead) but source `crm` when none is given, plus the responsible employee. */
export const toCrmNewLead = (request: CrmCreateLeadRequest): NewLead => ({
  ...toNewLead(request),
  source: request.source === undefined || request.source === null || request.source === "" ? CRM_SOURCE : request.source,
  responsibleId: request.responsible_id ?? null
})

/** The lead as the back office shows it: the public lead plus its responsible employee. */
export const CrmLead = Schema.Struct({
  ...Lead.fields,
  responsible_id: Schema.NullOr(Schema.Int).annotate({
    description: "The responsible employee; null for a lead created through the public API"
  })
}).annotate({
  identifier: "CrmLead",
  examples: [{
    id: 7,
    name: "Anna Ivanova",
    phone: "+7 (999) 123-45-67",
    source: "crm",
    comment: "Came to the open day",
    funnel_id: 0,
    pipeline_status_id: 1,
    created_at: "2026-11-22T09:15:03.123456Z",
    responsible_id: 8
  }]
})
export type CrmLead = typeof CrmLead.Type

/** POST /leads/{id}/status. */
export const MoveLeadRequest = Schema.Struct({
  status_id: IntUpToMaxId(1, "Expected a positive status id").annotate({
    description: "A status of the lead's funnel (its main funnel when the lead's funnel_id is 0)"
  })
}).annotate({ identifier: "MoveLeadRequest", message: "Expected a JSON object", examples: [{ status_id: 2 }] })
export type MoveLeadRequest = typeof MoveLeadRequest.Type

export const FunnelStatus = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  priority: Schema.Int,
  auto_task_title: Schema.NullOr(Schema.String).annotate({
    description: "The task a move into this status creates; null: the move runs no automation"
  })
}).annotate({ identifier: "FunnelStatus" })
export type FunnelStatus = typeof FunnelStatus.Type

export const Funnel = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  is_main: Schema.Boolean.annotate({ description: "The school's main funnel, the one funnel_id 0 means" }),
  statuses: Schema.Array(FunnelStatus).annotate({ description: "Ordered by priority, then id" })
}).annotate({
  identifier: "Funnel",
  examples: [{
    id: 1,
    name: "Main",
    is_main: true,
    statuses: [
      { id: 1, name: "New", priority: 0, auto_task_title: null },
      { id: 2, name: "Trial booked", priority: 10, auto_task_title: "Call to confirm the trial lesson" }
    ]
  }]
})
export type Funnel = typeof Funnel.Type

export const NewFunnelStatus = Schema.Struct({
  name: RequiredName(NAME_MAX),
  priority: Priority,
  auto_task_title: optionalField(
    Text(TITLE_MAX),
    "a string",
    `At most ${TITLE_MAX} characters, trimmed; omitted, null or "": no automation`
  )
}).annotate({ message: "Expected a JSON object" })
export type NewFunnelStatus = typeof NewFunnelStatus.Type

/** How many statuses one funnel may have. */
export const MAX_STATUSES = 100

/** The first priority that appears twice, if any. */
export const repeatedPriority = (statuses: ReadonlyArray<{ readonly priority: number }>): Option.Option<number> => {
  const seen = new Set<number>()
  for (const { priority } of statuses) {
    if (seen.has(priority)) return Option.some(priority)
    seen.add(priority)
  }
  return Option.none()
}

export const CreateFunnelRequest = Schema.Struct({
  name: RequiredName(NAME_MAX),
  statuses: Schema.Array(NewFunnelStatus).annotate({ message: "Expected an array of statuses" }).check(
    Schema.isMinLength(1, { message: "Expected at least one status" }),
    Schema.isMaxLength(MAX_STATUSES, { message: `Expected at most ${MAX_STATUSES} statuses` }),
    Schema.makeFilter((statuses: ReadonlyArray<NewFunnelStatus>) =>
      Option.match(repeatedPriority(statuses), {
        onNone: () => true,
        onSome: (priority) => `Expected distinct priorities: ${priority} appears more than once`
      })
    )
  )
}).annotate({
  identifier: "CreateFunnelRequest",
  message: "Expected a JSON object",
  examples: [{
    name: "Evening courses",
    statuses: [
      { name: "New", priority: 0 },
      { name: "Trial booked", priority: 10, auto_task_title: "Call to confirm the trial lesson" }
    ]
  }]
})
export type CreateFunnelRequest = typeof CreateFunnelRequest.Type

/** A status to store: an empty title is no automation. */
export const toStoredStatus = (status: NewFunnelStatus) => ({
  name: status.name,
  priority: status.priority,
  autoTaskTitle: status.auto_task_title === undefined || status.auto_task_title === null || status.auto_task_title === ""
    ? null
    : status.auto_task_title
})

/** What a move reads under the lead's lock. */
export interface MovingLead {
  readonly id: number
  readonly name: string
  readonly phone: string
  readonly pipeline_status_id: number
  readonly responsible_id: number | null
}

export interface TargetStatus {
  readonly id: number
  readonly auto_task_title: string | null
}

/** What a move does (MoveLead.automation). */
export interface MovePlan {
  /** False: the lead is already in the status; nothing at all happens. */
  readonly moved: boolean
  readonly task: Option.Option<{ readonly title: string; readonly assigneeId: number | null }>
  readonly notification: Option.Option<{ readonly employeeId: number; readonly message: string }>
}

/**
 * How a task names its lead (`Task.lead_name`, docs/back-office.md "Leads, funnels and tasks"):
 * the lead's name, or its phone (never empty) when the name is empty, as the
 * `task_assigned` notification names it. Inbox.ts's SQL is this rule; a test holds the two together.
 */
export const taskLeadName = (lead: Pick<MovingLead, "name" | "phone">): string => lead.name === "" ? lead.phone : lead.name

/** The `task_assigned` notification's text: the task and the lead it is about. */
export const taskAssignedMessage = (lead: Pick<MovingLead, "id" | "name" | "phone">, title: string): string => {
  const who = lead.name === "" ? lead.phone : `${lead.name}, ${lead.phone}`
  return `New task "${title}" for lead #${lead.id} (${who})`
}

/**
 * docs/back-office.md "Leads, funnels and tasks": the funnel automation runs only on an explicit
 * move between statuses, never on creation. A move into a status with an
 * `auto_task_title` creates that task for the lead's responsible employee
 * and notifies them; a lead with no responsible (an API lead) gets
 * an unassigned task and nobody is notified. A move to the status the lead
 * is already in is no move: nothing runs.
 */
export const automation = (lead: MovingLead, target: TargetStatus): MovePlan => {
  if (lead.pipeline_status_id === target.id) {
    return { moved: false, task: Option.none(), notification: Option.none() }
  }
  const title = target.auto_task_title
  if (title === null || title === "") return { moved: true, task: Option.none(), notification: Option.none() }
  return {
    moved: true,
    task: Option.some({ title, assigneeId: lead.responsible_id }),
    notification: lead.responsible_id === null
      ? Option.none()
      : Option.some({ employeeId: lead.responsible_id, message: taskAssignedMessage(lead, title) })
  }
}

// The inbox: each employee's notifications and tasks.

export const NotificationKind = Schema.Literals(["subscription_problematic", "task_assigned"])
export type NotificationKind = typeof NotificationKind.Type

export const Notification = Schema.Struct({
  id: Schema.Int,
  kind: NotificationKind,
  message: Schema.String,
  subscription_id: Schema.NullOr(Schema.Int).annotate({
    description: "The webhook subscription a subscription_problematic notification is about; null otherwise"
  }),
  created_at: Timestamp,
  read_at: Schema.NullOr(Timestamp).annotate({ description: "When it was first marked read; null: unread" })
}).annotate({
  identifier: "Notification",
  examples: [{
    id: 15,
    kind: "task_assigned",
    message: "New task \"Call to confirm the trial lesson\" for lead #7 (Anna Ivanova, +7 (999) 123-45-67)",
    subscription_id: null,
    created_at: "2026-11-22T09:15:03.123456Z",
    read_at: null
  }]
})
export type Notification = typeof Notification.Type

export const Task = Schema.Struct({
  id: Schema.Int,
  title: Schema.String,
  lead_id: Schema.Int,
  assignee_id: Schema.NullOr(Schema.Int).annotate({ description: "null: unassigned (the lead has no responsible)" }),
  created_at: Timestamp,
  lead_name: Schema.String.annotate({
    description: "The lead's name as it is now, or its phone when the lead has no name (taskLeadName)"
  })
}).annotate({
  identifier: "Task",
  examples: [{
    id: 16,
    title: "Call to confirm the trial lesson",
    lead_id: 7,
    assignee_id: 8,
    created_at: "2026-11-22T09:15:03.123456Z",
    lead_name: "Anna Ivanova"
  }]
})
export type Task = typeof Task.Type
