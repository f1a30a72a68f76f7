/**
 * One POST to a receiver (spec 6.2, 6.5; docs/decisions.md "Webhooks"),
 * with the address rule applied at delivery time against DNS rebinding:
 *
 * - the URL is read with the domain's rule (`ReceiverAddress`): https only
 *   unless WEBHOOK_ALLOW_INSECURE_URLS, a literal address checked as is;
 * - a host name is resolved ONCE (`dns.lookup`, every address), EVERY
 *   resolved address is checked, and the connection goes to a checked
 *   address: Node's `http(s).request` is given a `lookup` that answers with
 *   that address, so no second resolution happens between the check and the
 *   connect (TLS still verifies the certificate for the host name, which is
 *   also the SNI and the Host header; when Node tries the addresses in turn,
 *   it gets the checked ones and no other). A refused address is the error
 *   `blocked_address` and no connection is made;
 * - no redirect is followed (Node's client follows none): a 3xx is a
 *   failure like any other non-2xx;
 * - WEBHOOK_TIMEOUT bounds the whole attempt: resolution, connect, headers
 *   and body;
 * - at most 4 KiB of the response body is read, for the journal; the rest
 *   is not waited for.
 *
 * Why Node's own client and not undici: `http.request` takes `lookup` per
 * request and Node ships it, so pinning needs no dependency; a keep-alive
 * Agent per scheme pools the connections.
 */
import type { LookupAddress } from "node:dns"
import { lookup } from "node:dns/promises"
import * as Http from "node:http"
import * as Https from "node:https"
import { isIP, type LookupFunction } from "node:net"
import * as ReceiverAddress from "@school/domain/ReceiverAddress"
import * as Signature from "@school/domain/WebhookSignature"

/** docs/decisions.md "Webhooks": the journal keeps this much of a response body. */
export const RESPONSE_BODY_LIMIT = 4096

/** Error kinds of the journal (`webhook_attempts.error`). */
export type AttemptError =
  | "timeout"
  | "blocked_address"
  | "invalid_url"
  | "dns_error"
  | "connection_refused"
  | "connection_closed"
  | "tls_error"
  | "connection_error"
  | "secret_unreadable"

export interface Outcome {
  /** 2xx within the time-out, the body read (or its first 4 KiB). */
  readonly ok: boolean
  readonly responseCode: number | null
  readonly error: AttemptError | null
  /** Why, in a sentence, for the log (not stored). */
  readonly detail: string | null
  readonly responseBody: string | null
  readonly durationMs: number
}

export interface Agents {
  readonly http: Http.Agent
  readonly https: Https.Agent
}

/** Keep-alive connection pools, one per scheme; `destroy` when the dispatcher stops. */
export const makeAgents = (): Agents => ({
  http: new Http.Agent({ keepAlive: true, maxSockets: Infinity, scheduling: "lifo" }),
  https: new Https.Agent({ keepAlive: true, maxSockets: Infinity, scheduling: "lifo" })
})

export interface PostOptions {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly timeoutMs: number
  readonly policy: ReceiverAddress.Policy
  readonly agents: Agents
}

/** The journal's text of a response body: valid UTF-8 (lossy), no NUL (PostgreSQL text refuses it). */
const bodyText = (chunks: ReadonlyArray<Buffer>): string =>
  Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString("utf8").replaceAll("\u0000", "")

const codeOf = (error: unknown): string =>
  error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : ""

/** The journal's kind of a connection-level failure. */
export const classify = (error: unknown): AttemptError => {
  const code = codeOf(error)
  if (code === "ECONNREFUSED") return "connection_refused"
  if (code === "ECONNRESET" || code === "EPIPE" || code === "ECONNABORTED" || code === "ERR_STREAM_PREMATURE_CLOSE") {
    return "connection_closed"
  }
  if (code === "ETIMEDOUT") return "timeout"
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "ENODATA") return "dns_error"
  if (code.startsWith("ERR_TLS") || code.startsWith("ERR_SSL") || code.includes("CERT") || code.includes("SELF_SIGNED")) {
    return "tls_error"
  }
  if (error instanceof Error && /socket hang up|aborted/i.test(error.message)) return "connection_closed"
  return "connection_error"
}

class Timeout extends Error {
  readonly code = "ETIMEDOUT"
}

const failure = (started: number, error: AttemptError, detail: string, responseCode: number | null = null): Outcome => ({
  ok: false,
  responseCode,
  error,
  detail,
  responseBody: null,
  durationMs: Math.max(0, Math.round(performance.now() - started))
})

/** The addresses to connect to, every one checked; or why there are none. */
const resolve = async (
  host: ReceiverAddress.Host,
  policy: ReceiverAddress.Policy
): Promise<{ readonly addresses: ReadonlyArray<LookupAddress> } | { readonly error: AttemptError; readonly detail: string }> => {
  if (host._tag === "Address") return { addresses: [{ address: host.address, family: isIP(host.address) }] }
  let addresses: ReadonlyArray<LookupAddress>
  try {
    addresses = await lookup(host.name, { all: true, verbatim: true })
  } catch (error) {
    return { error: "dns_error", detail: `${host.name} does not resolve (${codeOf(error) || String(error)})` }
  }
  const refusal = ReceiverAddress.resolvedRefusal(host.name, addresses.map((a) => a.address), policy)
  if (refusal !== undefined) return { error: "blocked_address", detail: refusal }
  return addresses.length === 0 ? { error: "dns_error", detail: `${host.name} resolves to no address` } : { addresses }
}

/** POSTs `body` once; never rejects. */
export const post = (options: PostOptions): Promise<Outcome> => {
  const started = performance.now()
  const parsed = ReceiverAddress.parseReceiverUrl(options.url, options.policy)
  if (parsed._tag === "Invalid") {
    const literal = URL.canParse(options.url) && isIP(new URL(options.url).hostname.replace(/^\[|\]$/g, "")) !== 0
    return Promise.resolve(failure(started, literal ? "blocked_address" : "invalid_url", parsed.message))
  }
  return new Promise<Outcome>((done) => {
    let finished = false
    let request: Http.ClientRequest | undefined
    const finish = (outcome: Outcome) => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      done(outcome)
    }
    const timer = setTimeout(() => {
      const outcome = failure(started, "timeout", `no complete answer within ${options.timeoutMs} ms`)
      finish(outcome)
      request?.destroy(new Timeout("timeout"))
    }, options.timeoutMs)

    void resolve(parsed.host, options.policy).then((target) => {
      if (finished) return
      if ("error" in target) return finish(failure(started, target.error, target.detail))
      const url = new URL(parsed.href)
      const https = url.protocol === "https:"
      // Node asks for every address when it tries them in turn (autoSelectFamily): all of them were checked.
      const [first] = target.addresses
      const pinned: LookupFunction = (_hostname, lookupOptions, callback) =>
        lookupOptions.all === true
          ? callback(null, [...target.addresses])
          : callback(null, first?.address ?? "", first?.family ?? 4)
      const body = Buffer.from(options.body, "utf8")
      const req = (https ? Https.request : Http.request)(url, {
        method: "POST",
        agent: https ? options.agents.https : options.agents.http,
        headers: { ...options.headers, "content-length": String(body.length) },
        lookup: pinned
      })
      request = req
      req.on("error", (error) => finish(failure(started, classify(error), error.message)))
      req.on("response", (response) => {
        const code = response.statusCode ?? 0
        const chunks: Array<Buffer> = []
        let size = 0
        const complete = () =>
          finish({
            ok: code >= 200 && code <= 299,
            responseCode: code,
            error: null,
            detail: null,
            responseBody: bodyText(chunks),
            durationMs: Math.max(0, Math.round(performance.now() - started))
          })
        response.on("data", (chunk: Buffer) => {
          if (size >= RESPONSE_BODY_LIMIT) return
          chunks.push(chunk)
          size += chunk.length
          if (size >= RESPONSE_BODY_LIMIT) {
            // Enough for the journal: the rest is not waited for.
            complete()
            response.destroy()
          }
        })
        response.on("end", complete)
        response.on("error", (error) => finish(failure(started, "connection_closed", error.message, code)))
        response.on("aborted", () => finish(failure(started, "connection_closed", "the response was cut off", code)))
        response.on("close", () => {
          if (!response.complete) finish(failure(started, "connection_closed", "the response was cut off", code))
        })
      })
      req.end(body)
    })
  })
}

/**
 * One attempt of a delivery: the stored body signed with this attempt's
 * time (libs/domain/src/WebhookSignature.ts `attemptHeaders`), POSTed once.
 * The dispatcher and the benchmark's bare loop both send this way.
 */
export const postAttempt = (options: {
  readonly url: string
  readonly secret: string
  readonly deliveryId: number
  readonly event: string
  readonly body: string
  /** When the attempt starts: its `webhook-timestamp`. */
  readonly at: Date
  readonly timeoutMs: number
  readonly policy: ReceiverAddress.Policy
  readonly agents: Agents
}): Promise<Outcome> =>
  post({
    url: options.url,
    headers: Signature.attemptHeaders({
      secret: options.secret,
      deliveryId: options.deliveryId,
      event: options.event,
      body: options.body,
      nowSeconds: Math.floor(options.at.getTime() / 1000)
    }),
    body: options.body,
    timeoutMs: options.timeoutMs,
    policy: options.policy,
    agents: options.agents
  })
