/**
 * A lead form for a school's site (docs/integrators.md "A lead form on your
 * site"): the browser posts an ordinary HTML form to this small server, and
 * this server, which holds the write key, creates the lead with
 * `POST /leads`. The browser never calls the API: the API answers no CORS
 * preflight, by design, since a key in a page is a key given away.
 *
 * - `GET /` renders the form with a hidden `idempotency_key`: a fresh UUID
 *   per rendering, so per submission. Every post of that rendering (a double
 *   click, the browser's retry, "send again" after a 429) carries the same
 *   key, and the API creates one lead: a repeat is answered from the first
 *   one's stored result (docs/integrators.md "Writing").
 * - `POST /` (application/x-www-form-urlencoded, at most 16 KiB) sends
 *   `{ phone, name, comment, source: "website" }` with that key, and answers
 *   the visitor in plain words: a thank-you page (201, or its replay); the
 *   form again with what was wrong beside each field (422 `validation_failed`:
 *   a stored error, so the new form carries a NEW key, or the corrected form
 *   would get the same refusal back); "try again in N seconds" (429, not
 *   stored: the form keeps its key); a short wait and a second try when the
 *   first post of the key is still running (409 `idempotency_in_progress`);
 *   "something went wrong, send it again" on a 5xx or no answer (not stored
 *   either: the same key). A key the server did not render (not a UUID) gets
 *   a fresh form. The visitor's own words are escaped into the page; the
 *   thank-you page shows only what this post sent, never the stored answer.
 *
 * It stands alone: only node: modules, no dependencies. Run:
 * `API_URL=http://127.0.0.1:3000/api/public/v1 API_KEY=svc_… npm run example:lead-form`
 * from the project's root (the project's Node 24). Env: API_URL (the API's
 * base URL or origin), API_KEY (a write key), PORT (default 8080; 0 picks a
 * free port), HOST (default 127.0.0.1), SOURCE (default `website`). One JSON
 * line per event on stdout: `listening`, `lead`, `refused`.
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"

const apiUrl = process.env["API_URL"] ?? ""
const apiKey = process.env["API_KEY"] ?? ""
if (apiUrl === "" || !apiKey.startsWith("svc_")) {
  console.error("set API_URL (the public API's base URL) and API_KEY (a write key, svc_…)")
  process.exit(2)
}
const trimmed = apiUrl.replace(/\/+$/, "")
const LEADS = `${trimmed.endsWith("/api/public/v1") ? trimmed : `${trimmed}/api/public/v1`}/leads`
const SOURCE = process.env["SOURCE"] ?? "website"
const MAX_BODY = 16 * 1024
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const log = (fields: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(fields)}\n`)

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }
/** Text as HTML shows it: the visitor's words never become markup. */
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c)

interface Form {
  readonly name: string
  readonly phone: string
  readonly comment: string
}
const EMPTY: Form = { name: "", phone: "", comment: "" }

/** What the visitor reads for a field the API refused (its `fields` name it). */
const PLAIN: Record<string, string> = {
  phone: "Please enter a phone number we can call: 5 to 20 digits; spaces, +, -, ( and ) are fine.",
  name: "Please shorten your name to at most 255 characters.",
  comment: "Please shorten your message to at most 4000 characters."
}

const page = (title: string, body: string) =>
  `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title></head>
<body><main><h1>${escape(title)}</h1>
${body}
</main></body></html>
`

/** The form: a fresh key unless `key` (a post to repeat as it was) is given. */
const formPage = (options: { form?: Form; key?: string; notice?: string; errors?: Record<string, string> } = {}) => {
  const form = options.form ?? EMPTY
  const errors = options.errors ?? {}
  const error = (field: string) => {
    const message = errors[field]
    return message === undefined ? "" : `<p class="error" id="${field}-error">${escape(message)}</p>`
  }
  return page("Book a free trial lesson", `${options.notice === undefined ? "" : `<p class="notice">${escape(options.notice)}</p>`}
<form method="post" action="/">
  <input type="hidden" name="idempotency_key" value="${escape(options.key ?? randomUUID())}">
  <p><label>Your name <input name="name" maxlength="255" value="${escape(form.name)}"></label></p>${error("name")}
  <p><label>Phone <input name="phone" type="tel" required value="${escape(form.phone)}"></label></p>${error("phone")}
  <p><label>Message <textarea name="comment" maxlength="4000">${escape(form.comment)}</textarea></label></p>${error("comment")}
  <p><button type="submit">Send</button></p>
</form>`)
}

const answer = (response: ServerResponse, status: number, html: string, headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...headers })
  response.end(html)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The API's answer to `POST /leads`, or undefined when none came (refused, reset, timed out). */
const createLead = async (form: Form, key: string) => {
  // 409 idempotency_in_progress: the first post of this key (a double click) is still running; its result comes soon.
  for (let attempt = 1; ; attempt++) {
    let reply: Response
    try {
      reply = await fetch(LEADS, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "idempotency-key": key, "content-type": "application/json" },
        body: JSON.stringify({ phone: form.phone, name: form.name, comment: form.comment, source: SOURCE }),
        signal: AbortSignal.timeout(15_000)
      })
    } catch {
      return undefined
    }
    const text = await reply.text()
    let body: { data?: { id?: number }; error?: { code?: string; fields?: Record<string, ReadonlyArray<string>> } } = {}
    try {
      body = JSON.parse(text) as typeof body
    } catch {
      // Not JSON (a proxy's error page): the status says enough.
    }
    if (reply.status === 409 && body.error?.code === "idempotency_in_progress" && attempt < 5) {
      await sleep(500)
      continue
    }
    return { status: reply.status, body, retryAfter: reply.headers.get("retry-after"), replayed: reply.headers.get("idempotent-replayed") === "true" }
  }
}

const readBody = (request: IncomingMessage) =>
  new Promise<string | undefined>((resolve) => {
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY) chunks.push(chunk)
    })
    request.on("end", () => resolve(size > MAX_BODY ? undefined : Buffer.concat(chunks).toString("utf8")))
    request.on("error", () => resolve(undefined))
  })

const submit = async (request: IncomingMessage, response: ServerResponse) => {
  const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase()
  if (type !== "application/x-www-form-urlencoded") {
    return answer(response, 415, page("Please use the form", `<p><a href="/">Back to the form</a></p>`))
  }
  const raw = await readBody(request)
  if (raw === undefined) return answer(response, 413, page("That was too long", `<p><a href="/">Back to the form</a></p>`))
  const fields = new URLSearchParams(raw)
  const form: Form = {
    name: fields.get("name") ?? "",
    phone: fields.get("phone") ?? "",
    comment: fields.get("comment") ?? ""
  }
  const key = fields.get("idempotency_key") ?? ""
  if (!UUID.test(key)) {
    return answer(response, 400, formPage({ form, notice: "The form had expired. Please check your details and send it again." }))
  }
  const reply = await createLead(form, key)
  if (reply === undefined || reply.status >= 500) {
    log({ step: "refused", status: reply?.status ?? null, reason: "no answer or a server error" })
    return answer(response, 502, formPage({ form, key, notice: "Something went wrong on our side and your request was not sent. Please send it again." }))
  }
  if (reply.status === 201) {
    log({ step: "lead", lead_id: reply.body.data?.id ?? null, replayed: reply.replayed })
    const who = form.name.trim() === "" ? "" : `, ${form.name.trim()}`
    return answer(response, 200, page("Thank you!", `<p>Thank you${escape(who)}! We will call you at ${escape(form.phone.trim())} soon.</p>`))
  }
  if (reply.status === 422 && reply.body.error?.code === "validation_failed" && reply.body.error.fields !== undefined) {
    const errors = Object.fromEntries(
      Object.keys(reply.body.error.fields).map((field) => [field, PLAIN[field] ?? "Please check this field."])
    )
    log({ step: "refused", status: 422, fields: Object.keys(errors) })
    // A stored refusal: the corrected form needs a new key (no `key` given), or it would get this answer again.
    return answer(response, 422, formPage({ form, errors, notice: "Please correct the marked fields and send the form again." }))
  }
  if (reply.status === 429) {
    const seconds = Math.max(1, Number(reply.retryAfter ?? "1") || 1)
    log({ step: "refused", status: 429, retry_after: seconds })
    return answer(response, 429, formPage({ form, key, notice: `We are receiving many requests right now. Please send the form again in ${seconds} seconds.` }), {
      "retry-after": String(seconds)
    })
  }
  // 401/403 (the key is wrong, revoked or read-only) and anything else: the site's fault, not the visitor's.
  log({ step: "refused", status: reply.status, code: reply.body.error?.code ?? null })
  return answer(response, 500, page("Sorry, the form is not working right now", "<p>Please call us instead.</p>"))
}

const server = createServer((request, response) => {
  const path = new URL(request.url ?? "/", "http://localhost").pathname
  if (path !== "/") return answer(response, 404, page("Not found", `<p><a href="/">The form</a></p>`))
  if (request.method === "GET" || request.method === "HEAD") return answer(response, 200, formPage())
  if (request.method === "POST") {
    submit(request, response).catch((error: unknown) => {
      log({ step: "refused", status: 500, error: String(error) })
      if (!response.headersSent) answer(response, 500, page("Sorry, the form is not working right now", "<p>Please call us instead.</p>"))
    })
    return
  }
  answer(response, 405, page("Not allowed", `<p><a href="/">The form</a></p>`), { allow: "GET, HEAD, POST" })
})

server.listen(Number(process.env["PORT"] ?? "8080"), process.env["HOST"] ?? "127.0.0.1", () => {
  const address = server.address()
  log({ step: "listening", port: address !== null && typeof address === "object" ? address.port : null })
})
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => server.close(() => process.exit(0)))
}
