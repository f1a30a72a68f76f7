/**
 * The receiver client: one POST to a receiver (docs/integrators.md "Receiving webhooks";
 * docs/decisions.md "Webhooks"), as the `Receiver` service, whose `send`
 * and `postAttempt` never fail: every end of an attempt is an `Outcome`.
 *
 * - The URL is read with the domain's rule (`ReceiverAddress`): https only
 *   unless WEBHOOK_ALLOW_INSECURE_URLS, a literal address checked as is.
 * - The host is resolved ONCE and EVERY address checked
 *   (libs/runtime/src/ReceiverHosts.ts, the back office's check too); the
 *   connection goes to a checked address: Node's `http(s).request` is given
 *   a `lookup` that answers with those addresses, so nothing is resolved
 *   between the check and the connect (DNS rebinding). TLS still verifies
 *   the certificate for the host name (also the SNI and the Host header). A
 *   refused address is the error `blocked_address` and no connection.
 * - No redirect is followed (Node's client follows none): a 3xx is a
 *   failure like any other non-2xx.
 * - WEBHOOK_TIMEOUT bounds the whole attempt: waiting for a socket,
 *   resolution, connect, headers and body (`Effect.timeoutOrElse`); the
 *   request is destroyed when the attempt ends early or is interrupted.
 * - At most 4 KiB of the response body is read, for the journal; the rest
 *   is not waited for.
 * - A request on a reused idle connection that the receiver had closed
 *   meanwhile (reset before any answer) goes once more on a new connection,
 *   within the same time-out: a keep-alive race, not the receiver failing.
 *
 * Sockets are a shared resource (docs/decisions.md "Webhooks", fair share):
 * - at most `sockets` of them are open at once, idle ones included
 *   (default: the dispatcher's concurrency + SOCKET_MARGIN; never more
 *   than the process's descriptor limit, `ulimit -n`, leaves beside
 *   RESERVED_DESCRIPTORS for the database and the health routes). An attempt
 *   holds one of as many permits from before resolution until its socket
 *   is back in the pool or closed; one that needs a new connection while
 *   every socket is open first closes the longest-idle socket of another
 *   receiver. (Node's own `maxTotalSockets` is not used: it counts idle
 *   sockets of other receivers and never closes them to make room, so a
 *   request to a new receiver would wait for an idle time-out.)
 * - an idle socket is kept for the next request to its receiver, however
 *   many a receiver has (`maxFreeSockets` is the bound itself): the bound
 *   and the closing of the longest-idle socket keep them shared, and a
 *   receiver that many schools send to (one integrator's host) reuses its
 *   connections instead of opening one per request. Each is closed after
 *   IDLE_TIMEOUT without traffic (the agent's `timeout`, which Node applies
 *   to pooled sockets and shortens to a receiver's `Keep-Alive: timeout=`
 *   hint); a pooled socket the receiver writes to is closed by Node at once.
 *   A receiver that never closes its side holds nothing past that.
 *
 * Failures on OUR side are told apart (`Outcome.ours`, `ownFailure`): this
 * process out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM,
 * EADDRNOTAVAIL), no socket free within the time-out, our resolver failing
 * or silent (EAI_AGAIN, ESERVFAIL, …; not NXDOMAIN, which is the
 * receiver's). Such an attempt says nothing about the receiver: the
 * dispatcher retries it soon without using up an attempt of the plan or
 * marking the subscription problematic.
 *
 * Why Node's own client and not undici: `http.request` takes `lookup` per
 * request and Node ships it, so pinning needs no dependency; one keep-alive
 * Agent per scheme pools the connections.
 */
import * as ReceiverAddress from "@school/domain/ReceiverAddress"
import * as Signature from "@school/domain/WebhookSignature"
import * as Hosts from "./ReceiverHosts.ts"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import type { LookupAddress } from "node:dns"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Https from "node:https"
import { isIP, type LookupFunction, type Socket } from "node:net"

/** docs/decisions.md "Webhooks": the journal keeps this much of a response body. */
export const RESPONSE_BODY_LIMIT = 4096
/** An idle connection to a receiver is closed after this long without traffic. */
export const IDLE_TIMEOUT = Duration.seconds(15)
/** Sockets beyond the concurrency: room for idle connections while every slot is busy. */
export const SOCKET_MARGIN = 4

/**
 * Descriptors left to everything but receiver sockets: the database pool,
 * LISTEN, the health server, the event loop, stdio, files and DNS lookups.
 */
export const RESERVED_DESCRIPTORS = 64

/** The default bound on open sockets for `concurrency` attempts in flight. */
export const socketBound = (concurrency: number): number => Math.max(1, concurrency) + SOCKET_MARGIN

/**
 * This process's limit on open descriptors (RLIMIT_NOFILE, the soft one:
 * `ulimit -n`), as Linux tells it in /proc/self/limits; undefined when
 * unlimited or unknown.
 */
export const descriptorLimit = (): number | undefined => {
  try {
    const line = Fs.readFileSync("/proc/self/limits", "utf8").split("\n").find((row) => row.startsWith("Max open files"))
    const soft = Number(line?.slice("Max open files".length).trim().split(/\s+/u)[0])
    return Number.isInteger(soft) && soft > 0 ? soft : undefined
  } catch {
    return undefined
  }
}

/**
 * The sockets the client may hold: `requested`, but never more than the
 * descriptor limit leaves beside RESERVED_DESCRIPTORS (at least 1), so
 * receivers can never take the descriptors the database, the health
 * routes or the next attempt's socket need.
 */
export const boundUnder = (requested: number, limit: number | undefined): number =>
  Math.max(1, limit === undefined ? requested : Math.min(requested, limit - RESERVED_DESCRIPTORS))

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
  /**
   * The attempt failed on our side (see `ownFailure`) and says nothing
   * about the receiver: retry soon, without using up an attempt or marking
   * the subscription problematic. Never true when `ok`.
   */
  readonly ours: boolean
}

/** A POST to send. */
export interface Request {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** One attempt of a delivery: its stored body, signed with this attempt's time. */
export interface Attempt {
  readonly url: string
  readonly secret: string
  /** The delivery's opaque id (`msg_` + 32 hex digits): `webhook-id` and `X-Service-Delivery`. */
  readonly deliveryId: string
  readonly event: string
  readonly body: string
  /** When the attempt starts: its `webhook-timestamp`. */
  readonly at: Date
}

export interface ReceiverOptions {
  /** DISPATCHER_CONCURRENCY: attempts in flight at most. */
  readonly concurrency: number
  /** WEBHOOK_TIMEOUT: the whole attempt, from waiting for a socket to the last byte read. */
  readonly timeout: Duration.Input
  /** WEBHOOK_ALLOW_INSECURE_URLS: http and internal receivers (development and tests only). */
  readonly allowInsecureUrls: boolean
  /**
   * Sockets open at most, idle ones included (default `socketBound(concurrency)`);
   * never more than the descriptor limit leaves (`boundUnder`).
   */
  readonly sockets?: number
  /** Idle connections closed after (default IDLE_TIMEOUT). */
  readonly idleTimeout?: Duration.Input
}

/** Sockets open now: carrying a request, and idle in the pool. */
export interface SocketCount {
  readonly active: number
  readonly idle: number
}

export interface ReceiverShape {
  /** POSTs once; never fails. */
  readonly send: (request: Request) => Effect.Effect<Outcome>
  /** One attempt of a delivery (libs/domain/src/WebhookSignature.ts `attemptHeaders`), POSTed once; never fails. */
  readonly postAttempt: (attempt: Attempt) => Effect.Effect<Outcome>
  /** Sockets open now (for metrics and tests). */
  readonly sockets: Effect.Effect<SocketCount>
  /**
   * Sockets open at most (`ReceiverOptions.sockets` under the descriptor
   * limit): also the most attempts that can be in flight at once; more
   * wait for a socket within their time-out.
   */
  readonly bound: number
}

/** System error codes of a connection that failed for want of something on our side. */
const OWN_CONNECTION_CODES: ReadonlySet<string> = new Set(["EMFILE", "ENFILE", "ENOBUFS", "ENOMEM", "EADDRNOTAVAIL"])

/**
 * Whether an error `code` met `during` resolution or the connection is a
 * failure on our side. Resolving: every code but a negative answer
 * (ENOTFOUND, ENODATA: the receiver's name has no address) is our resolver
 * failing, ECONNREFUSED (from the DNS server) included
 * (libs/runtime/src/ReceiverHosts.ts `ownResolverFailure`). Connecting:
 * only this process or host running out of descriptors, memory, buffers
 * or local ports; ECONNREFUSED there is the receiver's.
 */
export const ownFailure = (code: string, during: "resolution" | "connection"): boolean =>
  during === "resolution" ? Hosts.ownResolverFailure(code) : OWN_CONNECTION_CODES.has(code)

/** The journal's text of a response body: valid UTF-8 (lossy), no NUL (PostgreSQL text refuses it). */
const bodyText = (chunks: ReadonlyArray<Buffer>): string =>
  Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString("utf8").replaceAll("\u0000", "")

const codeOf = (error: unknown): string => Hosts.codeOf(error) ?? ""

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

const elapsed = (started: number): number => Math.max(0, Math.round(performance.now() - started))

const failure = (
  started: number,
  error: AttemptError,
  detail: string,
  options: { readonly responseCode?: number; readonly ours?: boolean } = {}
): Outcome => ({
  ok: false,
  responseCode: options.responseCode ?? null,
  error,
  detail,
  responseBody: null,
  durationMs: elapsed(started),
  ours: options.ours ?? false
})

/** A refused host as an attempt's outcome: no request was made. */
const refused = (started: number, refusal: Hosts.HostRefused): Outcome =>
  failure(started, refusal.reason === "blocked_address" ? "blocked_address" : "dns_error", refusal.message, {
    ours: Hosts.isOurs(refusal)
  })

/** Where the attempt was when the time-out came; it decides whose failure that is. */
type Phase = "waiting" | "resolving" | "sending"

const timedOut = (started: number, timeoutMs: number, phase: Phase, bound: number): Outcome => {
  switch (phase) {
    case "waiting":
      return failure(started, "timeout", `no socket free within ${timeoutMs} ms (all ${bound} in use)`, { ours: true })
    case "resolving":
      return failure(started, "dns_error", `the resolver did not answer within ${timeoutMs} ms`, { ours: true })
    case "sending":
      return failure(started, "timeout", `no complete answer within ${timeoutMs} ms`)
  }
}

/** A receiver URL as the rule read it: what to request, and the host to resolve (a name, or a literal address). */
interface Target {
  readonly url: URL
  readonly host: string
}

/** Receiver URLs whose reading is kept; past it the map starts again empty (the secrets' cache does the same). */
const MAX_TARGETS = 4096

/**
 * The two keep-alive agents and the bound on their sockets. Node's pool
 * lists (`sockets`, `freeSockets`) are read, never written: a socket closed
 * to make room leaves the pool through Node's own `agentRemove`.
 */
interface Pool {
  readonly agentFor: (https: boolean) => Http.Agent
  readonly count: () => SocketCount
  /**
   * Before a request to `origin` (`host:port:`) through `agent`: a place for
   * it. None is needed when an idle socket to that receiver is there to
   * reuse; else one is reserved (counted as open until `release`, called
   * once the request has its socket), and when every socket is open the
   * longest-idle socket of another receiver is closed first: start the
   * request once it has (`evicted`'s `close`).
   */
  readonly makeRoom: (agent: Http.Agent, origin: string) => Room
  /** Closes the idle sockets to `origin` through `agent` (one was found closed by the receiver). */
  readonly dropIdle: (agent: Http.Agent, origin: string) => void
  readonly destroy: () => void
}

interface Room {
  readonly evicted: Socket | undefined
  /** Ends the reservation (idempotent). */
  readonly release: () => void
}

const makePool = (bound: number, idleMs: number): Pool => {
  const idleSince = new WeakMap<Socket, number>()
  /** Requests with a place reserved and no socket yet. */
  let reserved = 0
  const agent = <A extends Http.Agent>(make: (options: Http.AgentOptions) => A): A => {
    const made = make({
      keepAlive: true,
      // Any number per receiver: `makeRoom` keeps the total within the bound. Node's default (256) would
      // do the same; stated, so no per-host cap closes a socket a burst is about to reuse.
      maxFreeSockets: bound,
      // Node sets it on each socket; once pooled, a socket silent this long is destroyed.
      timeout: idleMs,
      scheduling: "lifo"
    })
    // After Node's own listener, which pooled the socket (or destroyed it).
    made.on("free", (socket: Socket) => idleSince.set(socket, performance.now()))
    return made
  }
  const http = agent((options) => new Http.Agent(options))
  const https = agent((options) => new Https.Agent(options))
  const agents: ReadonlyArray<Http.Agent> = [http, https]
  const live = (lists: NodeJS.ReadOnlyDict<Array<Socket>>): Array<readonly [string, Socket]> =>
    Object.entries(lists).flatMap(([name, sockets]) =>
      (sockets ?? []).filter((socket) => !socket.destroyed).map((socket) => [name, socket] as const)
    )
  const noRoomNeeded: Room = { evicted: undefined, release: () => {} }
  return {
    agentFor: (secure) => secure ? https : http,
    count: () => ({
      active: agents.reduce((n, a) => n + live(a.sockets).length, 0),
      idle: agents.reduce((n, a) => n + live(a.freeSockets).length, 0)
    }),
    makeRoom: (target, origin) => {
      // Every request asks, so this walks the pools in place (no arrays made): an idle socket to this
      // receiver first, which is the usual case under load and needs no count.
      for (const name in target.freeSockets) {
        if (!name.startsWith(origin)) continue
        const sockets = target.freeSockets[name]
        if (sockets !== undefined && sockets.some((socket) => !socket.destroyed)) return noRoomNeeded
      }
      let open = reserved
      let oldest: Socket | undefined
      let oldestSince = 0
      for (const a of agents) {
        for (const name in a.sockets) {
          for (const socket of a.sockets[name] ?? []) if (!socket.destroyed) open++
        }
        for (const name in a.freeSockets) {
          for (const socket of a.freeSockets[name] ?? []) {
            if (socket.destroyed) continue
            open++
            const since = idleSince.get(socket) ?? 0
            if (oldest === undefined || since < oldestSince) {
              oldest = socket
              oldestSince = since
            }
          }
        }
      }
      reserved++
      let held = true
      const release = () => {
        if (!held) return
        held = false
        reserved--
      }
      // Every place taken by a request (cannot happen while permits = bound): go on, one over.
      if (open < bound || oldest === undefined) return { evicted: undefined, release }
      oldest.destroy()
      oldest.emit("agentRemove")
      return { evicted: oldest, release }
    },
    dropIdle: (target, origin) => {
      for (const [name, socket] of live(target.freeSockets)) {
        if (!name.startsWith(origin)) continue
        socket.destroy()
        socket.emit("agentRemove")
      }
    },
    destroy: () => {
      for (const a of agents) a.destroy()
    }
  }
}

/** `host:port:`, the start of Node's pool name for a request to `url` (`Agent.getName`). */
const originOf = (url: URL): string => `${url.hostname.replace(/^\[|\]$/g, "")}:${url.port}:`

/** A request that failed this way on a reused connection was most likely never read: the receiver had closed it. */
const staleConnection = (error: unknown): boolean => {
  const code = codeOf(error)
  return code === "ECONNRESET" || code === "EPIPE" || code === "ERR_STREAM_PREMATURE_CLOSE"
}

/**
 * One request over the pool, to the checked `addresses`. Resumes once the
 * outcome is known AND the request has closed (its socket back in the pool
 * or destroyed), so the permit is not released while the socket is still
 * taken. Interrupted: the request is destroyed. A reused idle connection
 * the receiver had already closed (reset before any answer) is not the
 * receiver's failure: the request goes once more, on a new connection.
 */
const exchange = (
  pool: Pool,
  url: URL,
  addresses: ReadonlyArray<LookupAddress>,
  request: Request,
  started: number
): Effect.Effect<Outcome> =>
  Effect.callback<Outcome>((resume) => {
    const https = url.protocol === "https:"
    const agent = pool.agentFor(https)
    const origin = originOf(url)
    // Node asks for every address when it tries them in turn (autoSelectFamily): all of them were checked.
    const [first] = addresses
    const pinned: LookupFunction = (_hostname, lookupOptions, callback) =>
      lookupOptions.all === true
        ? callback(null, [...addresses])
        : callback(null, first?.address ?? "", first?.family ?? 4)
    const body = Buffer.from(request.body, "utf8")
    let outcome: Outcome | undefined
    let closed = false
    // Node emits the request's `close`, then gives its socket back to the pool: resume after both.
    const done = (result: Outcome) => setImmediate(() => resume(Effect.succeed(result)))
    const finish = (next: Outcome) => {
      if (outcome !== undefined) return
      outcome = next
      if (closed) done(next)
    }
    let current: { readonly req: Http.ClientRequest | undefined; readonly release: () => void } | undefined
    let cancelled = false

    /** Sends the request; `retried`: on a new connection after a stale one. */
    const send = (retried: boolean) => {
      let req: Http.ClientRequest | undefined
      let abandoned = false
      let responseCode: number | undefined
      let incoming: Http.IncomingMessage | undefined
      const fail = (error: unknown) => {
        if (abandoned) return
        if (!retried && req?.reusedSocket === true && incoming === undefined && staleConnection(error)) {
          abandoned = true
          pool.dropIdle(agent, origin)
          return send(true)
        }
        finish(failure(started, classify(error), error instanceof Error ? error.message : String(error), {
          ...(responseCode === undefined ? {} : { responseCode }),
          ours: ownFailure(codeOf(error), "connection")
        }))
      }
      const room = pool.makeRoom(agent, origin)
      const start = () => {
        if (cancelled) return room.release()
        try {
          req = (https ? Https.request : Http.request)(url, {
            method: "POST",
            agent,
            headers: { ...request.headers, "content-length": String(body.length) },
            lookup: pinned
          })
        } catch (error) {
          room.release()
          closed = true
          return fail(error)
        }
        // The request has its socket (reused, or connecting): it counts among the open ones now.
        room.release()
        current = { req, release: room.release }
        req.on("error", fail)
        req.on("close", () => {
          if (abandoned) return
          closed = true
          if (outcome !== undefined) return done(outcome)
          // A complete response whose connection closed: its `end` comes next.
          if (incoming?.complete === true) return
          // A response cut off closes the request before the response reports it.
          finish(failure(
            started,
            "connection_closed",
            responseCode === undefined ? "the connection closed" : "the response was cut off",
            responseCode === undefined ? {} : { responseCode }
          ))
        })
        req.on("response", (response) => {
          const code = response.statusCode ?? 0
          responseCode = code
          incoming = response
          const chunks: Array<Buffer> = []
          let size = 0
          const complete = () =>
            finish({
              ok: code >= 200 && code <= 299,
              responseCode: code,
              error: null,
              detail: null,
              responseBody: bodyText(chunks),
              durationMs: elapsed(started),
              ours: false
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
          response.on("error", (error) =>
            finish(failure(started, "connection_closed", error.message, { responseCode: code })))
          response.on("aborted", () =>
            finish(failure(started, "connection_closed", "the response was cut off", { responseCode: code })))
        })
        req.end(body)
      }
      current = { req: undefined, release: room.release }
      // A socket closed to make room is gone (its descriptor too) before the new one connects.
      if (room.evicted === undefined) start()
      else room.evicted.once("close", () => setImmediate(start))
    }

    send(false)
    return Effect.sync(() => {
      cancelled = true
      current?.release()
      current?.req?.destroy()
    })
  })

/**
 * The client, built in the caller's scope (its sockets close with it), over
 * `hosts` (default: the system resolver under the same
 * WEBHOOK_ALLOW_INSECURE_URLS). The `Receiver` layers build it this way.
 */
export const make = (
  options: ReceiverOptions & { readonly hosts?: Hosts.ReceiverHostsShape }
): Effect.Effect<ReceiverShape, never, Scope.Scope> =>
  Effect.gen(function*() {
    const hosts = options.hosts ?? Hosts.make({ allowInsecureUrls: options.allowInsecureUrls })
    const timeout = Duration.fromInputUnsafe(options.timeout)
    const timeoutMs = Math.max(1, Math.round(Duration.toMillis(timeout)))
    const bound = boundUnder(options.sockets ?? socketBound(options.concurrency), descriptorLimit())
    const idleMs = Math.max(1, Math.round(Duration.toMillis(options.idleTimeout ?? IDLE_TIMEOUT)))
    const policy: ReceiverAddress.Policy = { allowInsecure: options.allowInsecureUrls }
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => makePool(bound, idleMs)),
      (pool) => Effect.sync(() => pool.destroy())
    )
    const permits = yield* Semaphore.make(bound)

    // A URL's reading by the rule depends on the URL and the policy alone: read once per URL text, not per
    // attempt (the address check parsed a literal address every time, ~1.7% of the dispatcher's CPU).
    const targets = new Map<string, Target>()
    const targetOf = (text: string): Target | Extract<ReceiverAddress.ReceiverUrl, { _tag: "Invalid" }> => {
      const known = targets.get(text)
      if (known !== undefined) return known
      const parsed = ReceiverAddress.parseReceiverUrl(text, policy)
      if (parsed._tag === "Invalid") return parsed
      if (targets.size >= MAX_TARGETS) targets.clear()
      const target: Target = {
        url: new URL(parsed.href),
        host: parsed.host._tag === "Address" ? parsed.host.address : parsed.host.name
      }
      targets.set(text, target)
      return target
    }

    const send = Effect.fn("Receiver.send")(function*(request: Request) {
      const started = performance.now()
      const target = targetOf(request.url)
      if ("_tag" in target) {
        const literal = URL.canParse(request.url) && isIP(new URL(request.url).hostname.replace(/^\[|\]$/g, "")) !== 0
        return failure(started, literal ? "blocked_address" : "invalid_url", target.message)
      }
      const { host, url } = target
      let phase: Phase = "waiting"
      return yield* permits.withPermits(1)(Effect.gen(function*() {
        phase = "resolving"
        const resolved = yield* Effect.result(hosts.resolve(host))
        if (Result.isFailure(resolved)) return refused(started, resolved.failure)
        phase = "sending"
        return yield* exchange(pool, url, resolved.success, request, started)
      })).pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () => Effect.sync(() => timedOut(started, timeoutMs, phase, bound))
        })
      )
    })

    const postAttempt = (attempt: Attempt): Effect.Effect<Outcome> =>
      send({
        url: attempt.url,
        headers: Signature.attemptHeaders({
          secret: attempt.secret,
          deliveryId: attempt.deliveryId,
          event: attempt.event,
          body: attempt.body,
          nowSeconds: Math.floor(attempt.at.getTime() / 1000)
        }),
        body: attempt.body
      })

    return { send, postAttempt, sockets: Effect.sync(pool.count), bound }
  })

export class Receiver extends Context.Service<Receiver, ReceiverShape>()("school/runtime/Receiver") {
  /** The client over the `ReceiverHosts` in context (tests inject a resolver); its sockets close with the layer. */
  static readonly layerNoDeps = (options: ReceiverOptions): Layer.Layer<Receiver, never, Hosts.ReceiverHosts> =>
    Layer.effect(
      Receiver,
      Effect.gen(function*() {
        return yield* make({ ...options, hosts: yield* Hosts.ReceiverHosts })
      })
    )

  /** The client with the system resolver, under the same WEBHOOK_ALLOW_INSECURE_URLS. */
  static readonly layer = (options: ReceiverOptions): Layer.Layer<Receiver> =>
    Receiver.layerNoDeps(options).pipe(
      Layer.provide(Hosts.ReceiverHosts.layer({ allowInsecureUrls: options.allowInsecureUrls }))
    )
}

/**
 * One attempt of a delivery through the `Receiver` in context (the
 * benchmark's anchors send this way).
 */
export const postAttempt = (attempt: Attempt): Effect.Effect<Outcome, never, Receiver> =>
  Receiver.use((receiver) => receiver.postAttempt(attempt))
