/**
 * The public API with nothing but `fetch`. Run it from the project's root
 * as `npm run example:fetch`, which runs it on the project's Node 24 (it
 * strips the types) whatever Node is on the PATH:
 *
 * - every request carries `Authorization: Bearer <key>` (docs/integrators.md "Authentication");
 * - a 429 is repeated after `Retry-After` seconds, the pause doubling when
 *   429 recurs, at most `maxAttempts` attempts (docs/integrators.md "Limits");
 * - a write carries an `Idempotency-Key`, one fresh UUID per logical write,
 *   and every repeat of that write sends the same key (docs/integrators.md "Writing").
 *
 * Env: API_URL (e.g. http://127.0.0.1:3000/api/public/v1; the origin alone
 * works too), API_KEY (a write key to create the lead; a read key lists
 * only). It lists every student page by page and, with a write key, creates
 * one lead. The functions are exported for the sync client beside it.
 */
import { randomUUID } from "node:crypto"

export interface Api {
  readonly baseUrl: string
  readonly apiKey: string
  readonly maxAttempts?: number
  /** Called before each pause after a 429 (or a 5xx, or no answer). */
  readonly onRetry?: (info: { attempt: number; status: number | undefined; retryAfterSeconds: number | undefined; pauseMs: number; path: string }) => void
}

/** `API_URL` as given, with `/api/public/v1` added when it is only the origin. */
export const baseUrlOf = (url: string): string => {
  const trimmed = url.replace(/\/+$/, "")
  return trimmed.endsWith("/api/public/v1") ? trimmed : `${trimmed}/api/public/v1`
}

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly fields: unknown
  constructor(status: number, code: string, message: string, fields: unknown) {
    super(`${status} ${code}: ${message}`)
    this.status = status
    this.code = code
    this.fields = fields
  }
}

const repeated = new Set([408, 429, 500, 502, 503, 504])
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * One call: the same request (same body, same Idempotency-Key) until it is
 * answered with something other than 408/429/5xx, or `maxAttempts` is used up.
 * Resolves with the JSON body of a 2xx, rejects with `ApiError` otherwise.
 */
export const call = async <A = unknown>(
  api: Api,
  method: "GET" | "POST",
  path: string,
  options: { body?: unknown; idempotencyKey?: string } = {}
): Promise<A> => {
  const maxAttempts = api.maxAttempts ?? 6
  const headers: Record<string, string> = { authorization: `Bearer ${api.apiKey}` }
  if (options.body !== undefined) headers["content-type"] = "application/json"
  if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey
  const body = options.body === undefined ? undefined : JSON.stringify(options.body)
  let pauseMs = 0
  for (let attempt = 1; ; attempt++) {
    let response: Response | undefined
    try {
      response = await fetch(`${api.baseUrl}${path}`, { method, headers, ...(body === undefined ? {} : { body }) })
    } catch (error) {
      // No answer (refused, reset): the write may or may not have run; the same key makes repeating safe.
      if (attempt >= maxAttempts) throw error
    }
    if (response !== undefined) {
      const text = await response.text()
      if (response.ok) return JSON.parse(text) as A // the decoding boundary: the contract says what comes back
      if (!repeated.has(response.status) || attempt >= maxAttempts) {
        const envelope = JSON.parse(text || "{}") as { error?: { code?: string; message?: string; fields?: unknown } }
        throw new ApiError(response.status, envelope.error?.code ?? "unknown", envelope.error?.message ?? text, envelope.error?.fields)
      }
    }
    // Wait at least Retry-After; double the previous pause when it recurs, up to a minute unless Retry-After says more.
    const header = response?.headers.get("retry-after")
    const retryAfterSeconds = header === null || header === undefined ? undefined : Number(header)
    pauseMs = Math.max((retryAfterSeconds ?? 0) * 1000, Math.min(60_000, pauseMs === 0 ? 1_000 : 2 * pauseMs))
    api.onRetry?.({ attempt: attempt + 1, status: response?.status, retryAfterSeconds, pauseMs, path })
    await sleep(pauseMs)
  }
}

/** A cursor page (`starting_after`, docs/integrators.md "Lists and pagination"): no total, `has_more` says whether to go on. */
export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly meta: {
    readonly per_page: number
    readonly starting_after: number
    readonly has_more: boolean
    readonly next_starting_after: number | null
  }
}

/**
 * Every page of a list, in order (ascending `id`): a cursor walk from
 * `starting_after=0`, each page asking for the ids after the previous one's
 * last, until `has_more` is false. A page costs the service the same at the
 * millionth row as at the first, and rows created meanwhile are met on a
 * later page, never shifting the pages already read.
 */
export async function* pages<A extends { readonly id: number }>(
  api: Api,
  path: string,
  query: Record<string, string> = {},
  perPage = 100
): AsyncGenerator<Page<A> & { readonly page: number }> {
  let cursor = 0
  for (let page = 1; ; page++) {
    const params = new URLSearchParams({ ...query, starting_after: String(cursor), per_page: String(perPage) })
    const body = await call<Page<A>>(api, "GET", `${path}?${params}`)
    yield { page, ...body }
    if (!body.meta.has_more || body.meta.next_starting_after === null) return
    cursor = body.meta.next_starting_after
  }
}

/** A logical write: one fresh key, kept for every repeat inside `call`. */
export const createLead = (api: Api, lead: { phone: string; name?: string; comment?: string; source?: string }) =>
  call<{ data: { id: number; name: string; phone: string; source: string } }>(api, "POST", "/leads", { body: lead, idempotencyKey: randomUUID() })

const main = async () => {
  const apiUrl = process.env["API_URL"]
  const apiKey = process.env["API_KEY"]
  if (apiUrl === undefined || apiKey === undefined) {
    console.error("set API_URL and API_KEY")
    process.exit(2)
  }
  const api: Api = {
    baseUrl: baseUrlOf(apiUrl),
    apiKey,
    onRetry: (info) => console.error(`repeating ${info.path} in ${info.pauseMs} ms (status ${info.status ?? "none"})`)
  }
  let students = 0
  for await (const page of pages(api, "/students")) {
    students += page.data.length
    console.log(`page ${page.page}: ${page.data.length} students (${page.meta.has_more ? "more follow" : "the last page"})`)
  }
  console.log(`${students} students`)
  try {
    const lead = await createLead(api, { phone: "+7 900 000-00-00", name: "From fetch-client.ts", source: "example" })
    console.log(`lead ${lead.data.id} created`)
  } catch (error) {
    if (error instanceof ApiError && error.code === "insufficient_scope") console.log("a read key: no lead created")
    else throw error
  }
}

if (import.meta.main) await main()
