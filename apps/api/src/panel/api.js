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

/** @typedef {"owner" | "administrator" | "manager" | "teacher"} Role */
/** @typedef {{ id: number, name: string, email: string, role: Role }} Employee */
/** @typedef {{ page: number, per_page: number, total: number }} Meta */
/** @typedef {{ id: number, name: string, scope: "read" | "write", prefix: string, created_at: string, expires_at: string | null, revoked_at: string | null }} ApiKey */
/** @typedef {ApiKey & { key: string }} IssuedKey */
/** @typedef {"active" | "problematic" | "disabled"} WebhookStatus */
/** @typedef {{ id: number, url: string, events: string[], status: WebhookStatus, created_at: string, updated_at: string, skipped_events: number }} Webhook */
/** @typedef {{ id: number, url: string, events: string[], status: "active", secret: string, created_at: string }} CreatedWebhook */
/** @typedef {"pending" | "delivered" | "failed" | "skipped"} DeliveryStatus */
/** @typedef {{ id: number, webhook_id: string, event: string, status: DeliveryStatus, response_code: number | null, attempts: number, created_at: string, last_attempt_at: string | null, next_attempt_at: string | null }} JournalEntry */
/** @typedef {{ attempt: number, at: string, response_code: number | null, error: string | null, duration_ms: number }} Attempt */
/** @typedef {JournalEntry & { body: string | null, attempts_detail: Attempt[] }} Delivery */
/** @typedef {{ id: number, kind: "subscription_problematic" | "task_assigned", message: string, subscription_id: number | null, created_at: string, read_at: string | null }} Notification */
/** @typedef {{ id: number, title: string, lead_id: number, assignee_id: number | null, created_at: string }} Task */
/** @typedef {{ id: number, name: string, phone: string, source: string, comment: string, funnel_id: number, pipeline_status_id: number, created_at: string, responsible_id: number | null }} Lead */
/** @typedef {{ id: number, name: string, priority: number, auto_task_title: string | null }} FunnelStatus */
/** @typedef {{ id: number, name: string, is_main: boolean, statuses: FunnelStatus[] }} Funnel */

/** @typedef {{ status: number, code: string, message: string, fields?: Record<string, string | string[]>, retryAfter?: number }} Failure */
/**
 * @template T
 * @typedef {{ ok: true, status: number, data: T, meta: Meta & { unread?: number } } | ({ ok: false } & Failure)} Reply
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
 * One call. JSON in, the envelope out; never throws.
 * @template T
 * @param {"GET" | "POST" | "PATCH" | "DELETE"} method
 * @param {string} path under `/api/crm/v1`
 * @param {unknown} [body]
 * @param {{ quiet?: boolean }} [options] `quiet`: a 401 is only returned, not reported as a session that ended
 * @returns {Promise<Reply<T>>}
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
    return { ok: false, status: 0, code: "NETWORK", message: "The server could not be reached. Check the connection and try again." }
  }
  /** @type {unknown} */
  let json
  try {
    json = await response.json()
  } catch {
    json = undefined
  }
  const envelope = /** @type {{ success?: boolean, data?: T, meta?: Meta, code?: string, message?: string, fields?: Record<string, string | string[]> } | undefined} */ (
    typeof json === "object" && json !== null ? json : undefined
  )
  if (response.ok && envelope?.success === true) {
    return { ok: true, status: response.status, data: /** @type {T} */ (envelope.data), meta: envelope.meta ?? { page: 1, per_page: 0, total: 0 } }
  }
  const retryAfter = Number(response.headers.get("retry-after") ?? "")
  /** @type {Failure} */
  const failure = {
    status: response.status,
    code: envelope?.code ?? (response.status >= 500 ? "INTERNAL_ERROR" : "UNKNOWN"),
    message: envelope?.message ?? `The server answered ${response.status}. Try again later.`,
    ...(envelope?.fields === undefined ? {} : { fields: envelope.fields }),
    ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfter } : {})
  }
  if (response.status === 401 && options.quiet !== true) sessionEnded(failure)
  return { ok: false, ...failure }
}

/** `?page=…&per_page=…` */
const paged = (/** @type {number} */ page, /** @type {number} */ perPage) => `?page=${page}&per_page=${perPage}`

// Sessions
/** @returns {Promise<Reply<{ token: string, expires_at: string, employee: Employee }>>} */
export const signIn = (/** @type {string} */ email, /** @type {string} */ password) =>
  call("POST", "/sessions", { email, password }, { quiet: true })
/** @returns {Promise<Reply<{ employee: Employee, expires_at: string }>>} */
export const currentSession = () => call("GET", "/sessions/current", undefined, { quiet: true })
/** @returns {Promise<Reply<{}>>} */
export const signOut = () => call("DELETE", "/sessions/current", undefined, { quiet: true })

// API keys
/** @returns {Promise<Reply<ApiKey[]>>} */
export const listKeys = (page = 1, perPage = 20) => call("GET", `/api-keys${paged(page, perPage)}`)
/** @returns {Promise<Reply<IssuedKey>>} */
export const issueKey = (/** @type {{ name: string, scope: string, expires_at?: string }} */ body) => call("POST", "/api-keys", body)
/** @returns {Promise<Reply<ApiKey>>} */
export const revokeKey = (/** @type {number} */ id) => call("DELETE", `/api-keys/${id}`)

// Webhooks
/** @returns {Promise<Reply<Webhook[]>>} */
export const listWebhooks = (page = 1, perPage = 20) => call("GET", `/webhooks${paged(page, perPage)}`)
/** @returns {Promise<Reply<Webhook>>} */
export const getWebhook = (/** @type {number} */ id) => call("GET", `/webhooks/${id}`)
/** @returns {Promise<Reply<CreatedWebhook>>} */
export const createWebhook = (/** @type {{ url: string, events: string[] }} */ body) => call("POST", "/webhooks", body)
/** @returns {Promise<Reply<Webhook>>} */
export const updateWebhook = (/** @type {number} */ id, /** @type {{ url?: string, events?: string[] }} */ body) =>
  call("PATCH", `/webhooks/${id}`, body)
/** @returns {Promise<Reply<Webhook>>} */
export const setWebhookEnabled = (/** @type {number} */ id, /** @type {boolean} */ enabled) =>
  call("POST", `/webhooks/${id}/${enabled ? "enable" : "disable"}`)
/** @returns {Promise<Reply<{ event_id: number }>>} */
export const sendTest = (/** @type {number} */ id) => call("POST", `/webhooks/${id}/test`)
/** @returns {Promise<Reply<JournalEntry[]>>} */
export const journal = (/** @type {number} */ id) => call("GET", `/webhooks/${id}/deliveries`)
/** @returns {Promise<Reply<Delivery>>} */
export const delivery = (/** @type {number} */ id, /** @type {number} */ deliveryId) => call("GET", `/webhooks/${id}/deliveries/${deliveryId}`)
/** @returns {Promise<Reply<{ delivery_id: number }>>} */
export const resend = (/** @type {number} */ id, /** @type {number} */ deliveryId) =>
  call("POST", `/webhooks/${id}/deliveries/${deliveryId}/resend`)
/** @returns {Promise<Reply<{ id: number }>>} */
export const deleteWebhook = (/** @type {number} */ id) => call("DELETE", `/webhooks/${id}`)
/**
 * Queues again this subscription's deliveries that ended `failed` (or were
 * `skipped`) at or after `since`; `failed` is the server's default, so it is not sent.
 * @returns {Promise<Reply<{ queued: number }>>}
 */
export const recover = (/** @type {number} */ id, /** @type {string} */ since, /** @type {"failed" | "skipped"} */ which = "failed") =>
  call("POST", `/webhooks/${id}/recover`, which === "failed" ? { since } : { since, which })

// Inbox
/** @returns {Promise<Reply<Notification[]>>} */
export const notifications = (page = 1, perPage = 20) => call("GET", `/notifications${paged(page, perPage)}`)
/** @returns {Promise<Reply<Notification>>} */
export const markRead = (/** @type {number} */ id) => call("POST", `/notifications/${id}/read`)
/** @returns {Promise<Reply<Task[]>>} */
export const tasks = (page = 1, perPage = 100) => call("GET", `/tasks${paged(page, perPage)}`)

// Leads
/** @returns {Promise<Reply<Lead[]>>} */
export const leads = (page = 1, perPage = 20) => call("GET", `/leads${paged(page, perPage)}`)
/** @returns {Promise<Reply<Funnel[]>>} */
export const funnels = () => call("GET", `/funnels${paged(1, 100)}`)
/** @returns {Promise<Reply<Lead>>} */
export const moveLead = (/** @type {number} */ id, /** @type {number} */ statusId) => call("POST", `/leads/${id}/status`, { status_id: statusId })
/** @returns {Promise<Reply<Employee[]>>} */
export const employees = () => call("GET", `/employees${paged(1, 100)}`)
