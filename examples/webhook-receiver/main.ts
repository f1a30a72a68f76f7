/**
 * A webhook receiver (docs/integrators.md "Receiving webhooks"). For every POST it:
 *
 * 1. reads the raw body bytes, exactly as they arrived (the signature is
 *    over those bytes; parsing and re-serializing would change them);
 * 2. verifies `X-Service-Signature`: lowercase hex HMAC-SHA256 of the raw
 *    body, keyed with the UTF-8 bytes of the whole secret string as shown
 *    (`whsec_…`), compared in constant time (`timingSafeEqual`);
 * 3. verifies the Standard Webhooks signature with the `standardwebhooks`
 *    package (`webhook-id`, `webhook-timestamp`, `webhook-signature`), which
 *    also refuses an attempt whose `webhook-timestamp` is more than 5
 *    minutes away from now: a replayed capture goes stale. Each attempt is
 *    signed with its own time, so the 30-minute retry passes too;
 * 4. answers 401 to a request failing either check, 400 to one without the
 *    headers, and 204 to a good one at once (the service waits 10 s at most
 *    and counts anything slower as a failure), before doing the work;
 * 5. deduplicates: retries and resends carry the byte-identical body, which
 *    holds the event, its payload ids and the first attempt's `timestamp`,
 *    so the SHA-256 of the body is the event's key; a
 *    `webhook-id` seen before is a duplicate too. Kept in memory here, for
 *    24 hours; a real receiver keeps the key in its database, under a
 *    unique constraint, in the transaction that does the work.
 *
 * It stands alone: only node: modules and `standardwebhooks`. Run:
 * `npm run example:receiver` from the project's root (the project's Node 24). Env: PORT
 * (default 4000; 0 picks a free port), WEBHOOK_SECRET (`whsec_…`, shown
 * once when the subscription was created). One JSON line per request on
 * stdout: `listening`, `rejected`, `duplicate`, `processed`.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingMessage } from "node:http"
import { Webhook } from "standardwebhooks"

const secret = process.env["WEBHOOK_SECRET"] ?? ""
if (!secret.startsWith("whsec_")) {
  console.error("set WEBHOOK_SECRET to the subscription's whsec_… secret")
  process.exit(2)
}
const standard = new Webhook(secret)
const log = (fields: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(fields)}\n`)

/** X-Service-Signature: hex HMAC-SHA256 of the raw bytes, keyed with the secret string's UTF-8 bytes; constant-time comparison. */
export const verifyServiceSignature = (raw: Buffer, header: string | undefined, key: string): boolean => {
  if (header === undefined || !/^[0-9a-f]{64}$/i.test(header)) return false
  const expected = createHmac("sha256", Buffer.from(key, "utf8")).update(raw).digest()
  return timingSafeEqual(expected, Buffer.from(header, "hex"))
}

const header = (request: IncomingMessage, name: string): string | undefined => {
  const value = request.headers[name]
  return typeof value === "string" ? value : undefined
}

const DAY_MS = 24 * 60 * 60 * 1000
/** Event key (or webhook-id) → when first seen; entries older than a day are dropped. */
const seen = new Map<string, number>()
const firstTime = (keys: ReadonlyArray<string>): boolean => {
  const now = Date.now()
  for (const [key, at] of seen) {
    if (now - at < DAY_MS) break // insertion order: the rest are younger
    seen.delete(key)
  }
  const duplicate = keys.some((key) => seen.has(key))
  for (const key of keys) if (!seen.has(key)) seen.set(key, now)
  return !duplicate
}

/** The work, after the answer: here, one line. */
const process_ = (event: { event: string; account_id: number; payload: unknown; timestamp: string }, webhookId: string) =>
  log({ step: "processed", event: event.event, account_id: event.account_id, payload: event.payload, timestamp: event.timestamp, webhook_id: webhookId })

const server = createServer((request, response) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    const raw = Buffer.concat(chunks)
    const answer = (status: number) => {
      response.writeHead(status)
      response.end()
    }
    if (request.method !== "POST") return answer(405)
    const webhookId = header(request, "webhook-id")
    const serviceSignature = header(request, "x-service-signature")
    if (serviceSignature === undefined || webhookId === undefined) {
      log({ step: "rejected", reason: "missing signature headers" })
      return answer(400)
    }
    if (!verifyServiceSignature(raw, serviceSignature, secret)) {
      log({ step: "rejected", reason: "bad X-Service-Signature", webhook_id: webhookId })
      return answer(401)
    }
    let event: { event: string; account_id: number; payload: unknown; timestamp: string }
    try {
      // Throws on a bad signature and on a webhook-timestamp more than 5 minutes off.
      event = standard.verify(raw.toString("utf8"), {
        "webhook-id": webhookId,
        "webhook-timestamp": header(request, "webhook-timestamp") ?? "",
        "webhook-signature": header(request, "webhook-signature") ?? ""
      }) as typeof event
    } catch (error) {
      log({ step: "rejected", reason: `standard webhooks: ${(error as Error).message}`, webhook_id: webhookId })
      return answer(401)
    }
    const key = createHash("sha256").update(raw).digest("hex")
    const fresh = firstTime([`body:${key}`, `id:${webhookId}`])
    answer(204) // answer first (2xx within 10 seconds), work after
    if (!fresh) return log({ step: "duplicate", event: event.event, webhook_id: webhookId })
    setImmediate(() => process_(event, webhookId))
  })
})

server.listen(Number(process.env["PORT"] ?? "4000"), process.env["HOST"] ?? "127.0.0.1", () => {
  const address = server.address()
  log({ step: "listening", port: address !== null && typeof address === "object" ? address.port : null })
})
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => server.close(() => process.exit(0)))
}
