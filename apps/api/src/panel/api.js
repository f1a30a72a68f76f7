// @ts-check
/**
 * The panel's one client of the back-office API (`/api/crm/v1`,
 * docs/back-office.md). The browser sends the `crm_session` cookie by itself;
 * every call that changes something says `Content-Type: application/json`,
 * body or not, as the server's cross-site request forgery check requires.
 * Answers come back as `Reply`: the envelope's `data`/`meta`, or its error.
 * A 401 on any call but signing in means the session ended: the handler set
 * with `onSessionEnded` takes the reader back to the sign-in form.
 */

const BASE = "/api/crm/v1"

/*
 * The wire types are the back office's OpenAPI document's (contract.d.ts,
 * generated from it by apps/cli/src/panelContract.ts): `npm run typecheck`
 * holds the panel to the contract, and a change to the contract that the
 * panel does not follow fails there.
 */
/** @typedef {import("./contract").operations} Operations */
/** @typedef {import("./contract").components["schemas"]} Schemas */
/** @typedef {keyof Operations} OperationId */
/**
 * The body of a success among an operation's responses (200, 201 or 202).
 * @template Responses
 * @typedef {{ [Status in keyof Responses]: Status extends 200 | 201 | 202 ? Responses[Status] extends { content: { "application/json": infer Body } } ? Body : never : never }[keyof Responses]} SuccessBody
 */
/**
 * What operation `Id` answers on success: `{ success: true, data, meta? }`.
 * @template {OperationId} Id
 * @typedef {SuccessBody<Operations[Id]["responses"]>} Success
 */
/**
 * The `data` of operation `Id`'s success.
 * @template {OperationId} Id
 * @typedef {Success<Id> extends { data: infer Data } ? Data : never} Data
 */
/**
 * The JSON body operation `Id` takes.
 * @template {OperationId} Id
 * @typedef {Operations[Id]["requestBody"] extends { content: { "application/json": infer Body } } | undefined ? Body : never} Body
 */

/** @typedef {Data<"sessions.current">["employee"]} Employee */
/** @typedef {Employee["role"]} Role */
/** @typedef {Success<"webhooks.list">["meta"]} Meta */
/** @typedef {Data<"apiKeys.list">[number]} ApiKey */
/** @typedef {Data<"apiKeys.create">} IssuedKey */
/** @typedef {Data<"webhooks.get">} Webhook */
/** @typedef {Webhook["status"]} WebhookStatus */
/** @typedef {Data<"webhooks.create">} CreatedWebhook */
/** @typedef {Data<"webhooks.deliveries">[number]} JournalEntry */
/** @typedef {JournalEntry["status"]} DeliveryStatus */
/** @typedef {Data<"webhooks.delivery">} Delivery */
/** @typedef {Delivery["attempts_detail"][number]} Attempt */
/** @typedef {Schemas["Notification"]} Notification */
/** @typedef {Schemas["Task"]} Task */
/** @typedef {Schemas["CrmLead"]} Lead */
/** @typedef {Schemas["FunnelStatus"]} FunnelStatus */
/** @typedef {Data<"employees.list">[number]} StaffMember */
/** @typedef {Data<"employees.update">} ChangedMember */
/** @typedef {Schemas["Funnel"]} Funnel */
/**
 * Every error code of the back office's error envelopes.
 * @typedef {{ [Name in keyof Schemas]: Schemas[Name] extends { success: false, code: infer Code } ? Code : never }[keyof Schemas]} ErrorCode
 */

/**
 * A call that failed: the server's envelope, or `NETWORK` (no answer) or
 * `UNKNOWN` (an answer without the envelope). `message` is what the panel
 * shows: its own sentence for the code (`explain`), never a route or a
 * schema phrase; `serverMessage` is the envelope's own text, kept for
 * reading, not for showing. `fields` are the server's, which dom.js's
 * `showFieldErrors` puts in the panel's words under each field.
 * @typedef {{ status: number, code: ErrorCode | "NETWORK" | "UNKNOWN", message: string, serverMessage: string, fields?: Record<string, string | string[]>, retryAfter?: number }} Failure
 */

/**
 * How long a 429 or 503 says to wait, in words: "17 seconds", "1 second",
 * or "a little while" without `Retry-After`.
 * @param {number | undefined} retryAfter
 */
export const waitText = (retryAfter) =>
  retryAfter === undefined ? "a little while" : `${retryAfter} second${retryAfter === 1 ? "" : "s"}`

/**
 * The server's own message when it is already plain words for the school's
 * staff (no route, no schema phrase, no quoted code), else null.
 * @param {string} message
 * @returns {string | null}
 */
export const plainServerMessage = (message) => {
  const text = message.trim()
  if (text === "") return null
  if (/\b(?:GET|POST|PATCH|PUT|DELETE) \//u.test(text)) return null
  if (/(?:^|[\s("'])\/[a-z]/u.test(text)) return null
  if (/\bExpected\b|Invalid request|`/u.test(text)) return null
  return text
}

/**
 * What a failure means to the school's staff, in one or two sentences (what
 * happened, what to do), by its code. The server's message is used only for
 * the codes where it is already plain and says more than the panel could:
 * TARIFF_TOO_LOW (it names the plan needed and the school's), CONFLICT,
 * GROUP_FULL and ALREADY_ENROLLED (the limit, the e-mail already taken);
 * when such a message is not plain (it names a route), the panel's sentence
 * stands in.
 * @param {Failure["code"]} code
 * @param {string} serverMessage
 * @param {number | undefined} retryAfter
 * @returns {string}
 */
export const explain = (code, serverMessage, retryAfter) => {
  const plain = plainServerMessage(serverMessage)
  switch (code) {
    case "UNAUTHENTICATED":
      return "You are not signed in: your session has ended. Sign in again to continue."
    case "FORBIDDEN":
      return "Your role does not allow this. If you need it, ask the school's owner or an administrator."
    case "TARIFF_TOO_LOW":
      return plain ?? "This is not part of the school's plan. The service's operator can move the school to a plan that includes it."
    case "NOT_FOUND":
      return "It is not there: it may have been deleted, or the link is out of date. Go back to the list and reload it."
    case "CONFLICT":
      return plain ?? (/\bdisabled\b/u.test(serverMessage)
        ? "This webhook is disabled. Enable it first, then try again."
        : "This cannot be done in the current state: something changed meanwhile or a limit is reached. Reload the page to see how things are now.")
    case "GROUP_FULL":
      return plain ?? "The group is full: it has no free place left."
    case "ALREADY_ENROLLED":
      return plain ?? "The student is already in this group."
    case "VALIDATION_FAILED":
      return "Some of what was entered was not accepted. Check the marked fields and try again."
    case "TOO_MANY_ATTEMPTS":
      return `Too many attempts in a short time. Wait ${waitText(retryAfter)} and try again.`
    case "PAYLOAD_TOO_LARGE":
      return "What was sent is too large. Shorten the longest text and try again."
    case "SERVICE_UNAVAILABLE":
      return `The service is unavailable for a moment. Try again in ${waitText(retryAfter)}.`
    case "INTERNAL_ERROR":
      return "Something went wrong on the server's side. Try again in a moment; if it keeps happening, tell the service's operator."
    case "NETWORK":
      return "The server could not be reached. Check the connection and try again."
    case "METHOD_NOT_ALLOWED":
    case "UNSUPPORTED_MEDIA_TYPE":
    case "UNKNOWN":
      return "The server did not understand the panel, or the panel the server. Reload the page and try again; if it keeps happening, tell the service's operator."
  }
  return "Something went wrong. Try again; if it keeps happening, tell the service's operator."
}
/**
 * An answer: the envelope's `data` and `meta` (lists only; a fixed one otherwise), or its error.
 * @template T
 * @template [M=Meta]
 * @typedef {{ ok: true, status: number, data: T, meta: M } | ({ ok: false } & Failure)} Reply
 */
/**
 * What the call of operation `Id` resolves with.
 * @template {OperationId} Id
 * @typedef {Reply<Data<Id>, Success<Id> extends { meta: infer M } ? M : Meta>} Answer
 */

/** @type {(failure: Failure) => void} */
let sessionEnded = () => {}

/**
 * What to do when a call answers 401: the session expired or was ended.
 * @param {(failure: Failure) => void} handler
 */
export const onSessionEnded = (handler) => {
  sessionEnded = handler
}

/**
 * One call. JSON in, the envelope out; never throws. What it answers is
 * what the caller's `Answer<…>` says, the document's type for the operation.
 * @template T
 * @template [M=Meta]
 * @param {"GET" | "POST" | "PATCH" | "DELETE"} method
 * @param {string} path under `/api/crm/v1`
 * @param {unknown} [body]
 * @param {{ quiet?: boolean }} [options] `quiet`: a 401 is only returned, not reported as a session that ended
 * @returns {Promise<Reply<T, M>>}
 */
const call = async (method, path, body, options = {}) => {
  /** @type {Record<string, string>} */
  const headers = { accept: "application/json" }
  if (method !== "GET") headers["content-type"] = "application/json"
  /** @type {Response} */
  let response
  try {
    response = await fetch(`${BASE}${path}`, {
      method,
      headers,
      credentials: "same-origin",
      cache: "no-store",
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  } catch {
    return { ok: false, status: 0, code: "NETWORK", message: explain("NETWORK", "", undefined), serverMessage: "" }
  }
  /** @type {unknown} */
  let json
  try {
    json = await response.json()
  } catch {
    json = undefined
  }
  const envelope = /** @type {{ success?: boolean, data?: T, meta?: M, code?: ErrorCode, message?: string, fields?: Record<string, string | string[]> } | undefined} */ (
    typeof json === "object" && json !== null ? json : undefined
  )
  if (response.ok && envelope?.success === true) {
    return { ok: true, status: response.status, data: /** @type {T} */ (envelope.data), meta: /** @type {M} */ (envelope.meta ?? { page: 1, per_page: 0, total: 0 }) }
  }
  const retryAfter = Number(response.headers.get("retry-after") ?? "")
  const wait = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined
  /** @type {Failure["code"]} */
  const code = envelope?.code ?? (response.status === 503 ? "SERVICE_UNAVAILABLE" : response.status >= 500 ? "INTERNAL_ERROR" : "UNKNOWN")
  const serverMessage = envelope?.message ?? ""
  /** @type {Failure} */
  const failure = {
    status: response.status,
    code,
    message: explain(code, serverMessage, wait),
    serverMessage,
    ...(envelope?.fields === undefined ? {} : { fields: envelope.fields }),
    ...(wait === undefined ? {} : { retryAfter: wait })
  }
  if (response.status === 401 && options.quiet !== true) sessionEnded(failure)
  return { ok: false, ...failure }
}

/** `?page=…&per_page=…` */
const paged = (/** @type {number} */ page, /** @type {number} */ perPage) => `?page=${page}&per_page=${perPage}`

// Sessions
/** @returns {Promise<Answer<"login.create">>} */
export const signIn = (/** @type {string} */ email, /** @type {string} */ password) =>
  call("POST", "/sessions", { email, password }, { quiet: true })
/** @returns {Promise<Answer<"sessions.current">>} */
export const currentSession = () => call("GET", "/sessions/current", undefined, { quiet: true })
/** @returns {Promise<Answer<"sessions.delete">>} */
export const signOut = () => call("DELETE", "/sessions/current", undefined, { quiet: true })
/**
 * Changes the reader's own password; the server ends their other sessions.
 * A wrong current password is a 422 on `current_password`, not a 401.
 * @returns {Promise<Answer<"password.change">>}
 */
export const changePassword = (/** @type {Body<"password.change">} */ body) => call("POST", "/sessions/current/password", body)

// Staff
/** @returns {Promise<Answer<"employees.list">>} */
export const listStaff = (page = 1, perPage = 100) => call("GET", `/employees${paged(page, perPage)}`)
/** @returns {Promise<Answer<"employees.create">>} */
export const addEmployee = (/** @type {Body<"employees.create">} */ body) => call("POST", "/employees", body)
/** @returns {Promise<Answer<"employees.update">>} */
export const updateEmployee = (/** @type {number} */ id, /** @type {Body<"employees.update">} */ body) => call("PATCH", `/employees/${id}`, body)
/** @returns {Promise<Answer<"employees.endSessions">>} */
export const endSessions = (/** @type {number} */ id) => call("DELETE", `/employees/${id}/sessions`)

// API keys
/** @returns {Promise<Answer<"apiKeys.list">>} */
export const listKeys = (page = 1, perPage = 20) => call("GET", `/api-keys${paged(page, perPage)}`)
/** @returns {Promise<Answer<"apiKeys.create">>} */
export const issueKey = (/** @type {Body<"apiKeys.create">} */ body) => call("POST", "/api-keys", body)
/** @returns {Promise<Answer<"apiKeys.revoke">>} */
export const revokeKey = (/** @type {number} */ id) => call("DELETE", `/api-keys/${id}`)

// Webhooks
/** @returns {Promise<Answer<"webhooks.list">>} */
export const listWebhooks = (page = 1, perPage = 20) => call("GET", `/webhooks${paged(page, perPage)}`)
/** @returns {Promise<Answer<"webhooks.get">>} */
export const getWebhook = (/** @type {number} */ id) => call("GET", `/webhooks/${id}`)
/** @returns {Promise<Answer<"webhooks.create">>} */
export const createWebhook = (/** @type {Body<"webhooks.create">} */ body) => call("POST", "/webhooks", body)
/** @returns {Promise<Answer<"webhooks.update">>} */
export const updateWebhook = (/** @type {number} */ id, /** @type {Body<"webhooks.update">} */ body) =>
  call("PATCH", `/webhooks/${id}`, body)
/** @returns {Promise<Answer<"webhooks.enable" | "webhooks.disable">>} */
export const setWebhookEnabled = (/** @type {number} */ id, /** @type {boolean} */ enabled) =>
  call("POST", `/webhooks/${id}/${enabled ? "enable" : "disable"}`)
/** @returns {Promise<Answer<"webhooks.test">>} */
export const sendTest = (/** @type {number} */ id) => call("POST", `/webhooks/${id}/test`)
/** @returns {Promise<Answer<"webhooks.deliveries">>} */
export const journal = (/** @type {number} */ id) => call("GET", `/webhooks/${id}/deliveries`)
/** @returns {Promise<Answer<"webhooks.delivery">>} */
export const delivery = (/** @type {number} */ id, /** @type {number} */ deliveryId) => call("GET", `/webhooks/${id}/deliveries/${deliveryId}`)
/** @returns {Promise<Answer<"webhooks.resend">>} */
export const resend = (/** @type {number} */ id, /** @type {number} */ deliveryId) =>
  call("POST", `/webhooks/${id}/deliveries/${deliveryId}/resend`)
/** @returns {Promise<Answer<"webhooks.delete">>} */
export const deleteWebhook = (/** @type {number} */ id) => call("DELETE", `/webhooks/${id}`)
/**
 * Queues again this subscription's deliveries that ended `failed` (or were
 * `skipped`) at or after `since`; `failed` is the server's default, so it is not sent.
 * @returns {Promise<Answer<"webhooks.recover">>}
 */
export const recover = (/** @type {number} */ id, /** @type {string} */ since, /** @type {NonNullable<Body<"webhooks.recover">["which"]>} */ which = "failed") =>
  call("POST", `/webhooks/${id}/recover`, which === "failed" ? { since } : { since, which })

// Inbox
/** @returns {Promise<Answer<"inbox.notifications">>} */
export const notifications = (page = 1, perPage = 20) => call("GET", `/notifications${paged(page, perPage)}`)
/** @returns {Promise<Answer<"inbox.read">>} */
export const markRead = (/** @type {number} */ id) => call("POST", `/notifications/${id}/read`)
/** @returns {Promise<Answer<"inbox.tasks">>} */
export const tasks = (page = 1, perPage = 100) => call("GET", `/tasks${paged(page, perPage)}`)

// Leads
/** @returns {Promise<Answer<"leads.list">>} */
export const leads = (page = 1, perPage = 20) => call("GET", `/leads${paged(page, perPage)}`)
/** @returns {Promise<Answer<"leads.funnels">>} */
export const funnels = () => call("GET", `/funnels${paged(1, 100)}`)
/** @returns {Promise<Answer<"leads.move">>} */
export const moveLead = (/** @type {number} */ id, /** @type {number} */ statusId) => call("POST", `/leads/${id}/status`, { status_id: statusId })
/** @returns {Promise<Answer<"employees.list">>} */
export const employees = () => call("GET", `/employees${paged(1, 100)}`)
