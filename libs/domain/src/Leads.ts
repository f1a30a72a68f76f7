/**
 * Leads created through POST /leads (spec 2.2, 3, 4.2; docs/decisions.md
 * "Writes"): the request body, the lead as the API returns it, the defaults
 * the specification fixes, and the rule that places a new lead in its funnel.
 */
import { Option, Schema } from "effect"
import { IntUpToMaxId } from "./Ids.ts"
import { Phone } from "./Phone.ts"
import { COMMENT_MAX, NAME_MAX, SOURCE_MAX, Text } from "./Text.ts"
import { Timestamp } from "./Timestamps.ts"

/** spec 2.2: `source` defaults to `api`. */
export const DEFAULT_SOURCE = "api"
/** spec 2.2: `funnel_id` 0 (or absent) is the school's main funnel, a placeholder, not a row. */
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
  description: "Unknown fields are ignored."
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
}

/** spec 2.2 defaults: name and comment "", source "api" (also for an empty one), funnel 0. */
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
}).annotate({ identifier: "Lead" })
export type Lead = typeof Lead.Type

export interface PipelineStatus {
  readonly id: number
  readonly priority: number
}

/**
 * spec 2.2 and part 3: a new lead goes to the status with the lowest priority
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
