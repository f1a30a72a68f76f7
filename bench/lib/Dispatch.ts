/**
 * What the webhook scenarios share (`dispatcher`, `sustained-dispatch`):
 * receivers in the harness (a healthy one answering 204 at once, a hanging
 * one that never answers), subscriptions made as the back office stores
 * them, the dispatcher process started as `npm run start:dispatcher` starts
 * it, the count of arrivals with a check of their signatures, emptying the
 * queue between rounds, and outbox events inserted at a steady rate, each in
 * its own transaction, with the instant each commit was seen.
 */
import { Effect, Option, type Scope } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import * as Http from "node:http"
import type { Socket } from "node:net"
import * as Path from "node:path"
import type pg from "pg"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import * as Signature from "@school/domain/WebhookSignature"
import { freePort } from "@school/runtime/Ports"
import { RESULTS_DIR, scriptCommand } from "./Paths.ts"
import { benchError, type BenchError, type Server, startServer } from "./Processes.ts"
import type { ScenarioContext } from "./Scenario.ts"
import { percentile, type RoundFigures } from "./Stats.ts"

/** DISPATCHER_CONCURRENCY of the dispatcher, and the anchors' concurrency. */
export const CONCURRENCY = 32
/** DISPATCHER_PER_SUBSCRIPTION (its default). */
export const PER_SUBSCRIPTION = 4
/** The event the scenarios' subscriptions tick and their outbox rows carry. */
export const EVENT = "lead.created"

export const describe = (error: unknown) => error instanceof Error ? error.message : String(error)
export const sleep = (msDelay: number) => new Promise<void>((resolve) => setTimeout(resolve, msDelay))

/** One reading of `everySecond`: the `second`-th after the start, taken `at` seconds after it. */
export interface Sample<A> {
  readonly second: number
  readonly at: number
  readonly value: A
}

/**
 * Reads `read()` about once a second from `started` (a `performance.now()`),
 * beside whatever the caller does meanwhile, until `stop()`, which waits for
 * a reading under way and fails with a reading that failed (the sampling
 * ends at it).
 */
export const everySecond = <A>(started: number, read: () => Promise<A>) => {
  const samples: Array<Sample<A>> = []
  let sampling = true
  const done = (async () => {
    for (let second = 1; sampling; second++) {
      const wait = started + second * 1000 - performance.now()
      if (wait > 0) await sleep(wait)
      if (!sampling) break
      const at = (performance.now() - started) / 1000
      samples.push({ second, at, value: await read() })
    }
  })()
  // Not unhandled while the caller is busy: `stop` rethrows it.
  done.catch(() => undefined)
  return {
    samples,
    stop: (): Promise<void> => {
      sampling = false
      return done
    }
  }
}

/** The payload of the n-th lead (lead.created's shape), as JSON text. */
export const payloadText = (n: number): string =>
  JSON.stringify({ lead_id: n, name: `Bench lead ${n}`, phone: `+7900${String(n % 10_000_000).padStart(7, "0")}`, source: "website" })

/** The lead number of a delivery's body (`payloadText`), or -1. */
export const leadOf = (body: string): number => {
  const match = /"lead_id":(\d+)/.exec(body)
  return match?.[1] === undefined ? -1 : Number(match[1])
}

/** A statement on the harness's own pool. */
export type Query = <R extends pg.QueryResultRow>(text: string, values?: ReadonlyArray<unknown>) => Promise<pg.QueryResult<R>>

// -- The receivers (in the harness) -------------------------------------------

export interface Arrival {
  readonly path: string
  readonly body: string
  readonly headers: IncomingHttpHeaders
  readonly at: number
}

export interface Receivers {
  readonly baseUrl: string
  /** The hanging receiver, without a path. */
  readonly hangingBase: string
  readonly hangingUrl: string
  /** `listener` is called for every request the healthy receiver answered. */
  readonly route: { listener: (arrival: Arrival) => void }
  /** Cuts every request the hanging receiver holds (at the end of a round). */
  readonly releaseHanging: () => void
  /** Requests the hanging receiver holds now. */
  readonly held: () => number
  /** While on, the hanging receiver answers 503 at once instead (clearing the noisy school's slots). */
  readonly refuse: (on: boolean) => void
}

const listen = (server: Http.Server) =>
  Effect.tryPromise({
    try: () =>
      new Promise<number>((resolve, reject) => {
        server.once("error", reject)
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          resolve(address !== null && typeof address === "object" ? address.port : 0)
        })
      }),
    catch: (error) => benchError(`the receiver cannot listen: ${describe(error)}`)
  })

export const startReceivers = Effect.gen(function*() {
  /** What the healthy receiver calls; the scenario sets it per round. */
  const route: { listener: (arrival: Arrival) => void } = { listener: () => {} }
  const healthy = Http.createServer({ keepAliveTimeout: 60_000 }, (request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const at = performance.now()
      response.writeHead(204).end()
      route.listener({ path: request.url ?? "", body: Buffer.concat(chunks).toString("utf8"), headers: request.headers, at })
    })
  })
  const sockets = new Set<Socket>()
  let held = 0
  let refusing = false
  const hanging = Http.createServer({ keepAliveTimeout: 60_000, requestTimeout: 0 }, (request, response) => {
    if (refusing) {
      request.on("end", () => response.writeHead(503).end())
    } else {
      held++
      response.on("close", () => held--)
    }
    request.resume()
  })
  hanging.on("connection", (socket: Socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  const close = (server: Http.Server) =>
    Effect.promise(() =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
    )
  const healthyPort = yield* Effect.acquireRelease(listen(healthy), () => close(healthy))
  const hangingPort = yield* Effect.acquireRelease(listen(hanging), () => close(hanging))
  return {
    baseUrl: `http://127.0.0.1:${healthyPort}`,
    hangingBase: `http://127.0.0.1:${hangingPort}`,
    hangingUrl: `http://127.0.0.1:${hangingPort}/hang`,
    route,
    releaseHanging: () => {
      for (const socket of sockets) socket.destroy()
    },
    held: () => held,
    refuse: (on) => {
      refusing = on
    }
  } satisfies Receivers
})

// -- Subscriptions, the process, the queue ---------------------------------------

export interface Subscription {
  readonly schoolId: number
  readonly id: number
  readonly url: string
  readonly secret: string
}

/** A subscription to `EVENT` with a fresh secret, stored encrypted as the back office stores it. */
export const subscribe = (query: Query) => async (schoolId: number, url: string, status: string): Promise<Subscription> => {
  const secret = WebhookSecret.generateSecret()
  const ciphertext = WebhookSecret.encrypt(WebhookSecret.currentKey(Option.none()), secret)
  const { rows } = await query<{ id: number }>(
    `INSERT INTO webhook_subscriptions (school_id, url, events, secret_ciphertext, status)
     VALUES ($1, $2, ARRAY[$3], $4, $5) RETURNING id`,
    [schoolId, url, EVENT, Buffer.from(ciphertext), status]
  )
  const id = rows[0]?.id
  if (id === undefined) throw new Error("no subscription id")
  return { schoolId, id, url, secret }
}

/**
 * The dispatcher process (apps/dispatcher/src/main.ts) as `npm run start:dispatcher` runs it: its bundle
 * (built by the harness first) and its flags, on the server core, against the bench database, with
 * DISPATCHER_CONCURRENCY=32, DISPATCHER_PER_SUBSCRIPTION=4, receivers on 127.0.0.1 allowed, and `env`.
 */
export const startDispatcher = (
  context: ScenarioContext,
  name: string,
  env: Record<string, string>
): Effect.Effect<Server, BenchError, Scope.Scope> => {
  const command = scriptCommand("start:dispatcher")
  return Effect.flatMap(freePort, (port) =>
    startServer({
      name,
      script: command.main,
      nodeFlags: command.nodeFlags,
      port,
      readyPath: "/health/live",
      placement: context.placement,
      logDir: Path.join(RESULTS_DIR, "logs"),
      env: {
        ...command.env,
        DATABASE_URL: context.db.url,
        DISPATCHER_PORT: String(port),
        DISPATCHER_CONCURRENCY: String(CONCURRENCY),
        DISPATCHER_PER_SUBSCRIPTION: String(PER_SUBSCRIPTION),
        WEBHOOK_ALLOW_INSECURE_URLS: "true",
        LOG_FORMAT: "json",
        ...env
      }
    }))
}

/**
 * Empties the queue between rounds while the dispatcher still runs (it may be recording the
 * attempts a released hanging receiver cut off): its statement and the TRUNCATE can take the
 * three tables in opposite orders, and PostgreSQL then cancels one of them (40P01). The harness's
 * TRUNCATE is the one to repeat.
 */
export const clean = async (query: Query): Promise<void> => {
  for (let attempt = 1; ; attempt++) {
    try {
      await query("TRUNCATE webhook_attempts, webhook_deliveries, outbox_events")
      return
    } catch (error) {
      const deadlock = typeof error === "object" && error !== null && "code" in error && error.code === "40P01"
      if (!deadlock || attempt === 3) throw error
    }
  }
}

/** Whether any delivery is pending or any outbox event is not fanned out yet. */
export const pendingWork = async (query: Query): Promise<boolean> => {
  const { rows } = await query<{ busy: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending')
         OR EXISTS (SELECT 1 FROM outbox_events WHERE fanned_out_at IS NULL) AS busy`
  )
  return rows[0]?.busy !== false
}

// -- Arrivals ------------------------------------------------------------------

/**
 * Counts what the healthy receiver answered in a round and checks both
 * signatures of one request in 16 (and of the first of each round) with the
 * secret of the subscription its path names; a bad one is counted.
 */
/**
 * A latency round's figures: `latencies` (commit→arrival ms, sorted) of the
 * `total` events sent over `sent` seconds, the round lasting `seconds`;
 * a delivery whose signature did not verify is a non-2xx answer.
 */
export const latencyFigures = (options: {
  readonly latencies: ReadonlyArray<number>
  readonly total: number
  readonly sent: number
  readonly seconds: number
  readonly badSignatures: number
}): RoundFigures => {
  const { badSignatures, latencies, sent, seconds, total } = options
  return {
    requests: latencies.length,
    seconds,
    rps: latencies.length / sent,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    non2xx: badSignatures,
    errors: total - latencies.length,
    statuses: {
      "204": latencies.length,
      ...(badSignatures > 0 ? { "bad signature": badSignatures } : {})
    }
  }
}

export class Arrivals {
  arrived = 0
  badSignatures = 0
  private waiter: { readonly count: number; readonly resolve: () => void } | undefined

  private readonly receivers: Receivers
  /** The secret per receiver path (`new URL(subscription.url).pathname`). */
  private readonly secretOf: ReadonlyMap<string, string>

  constructor(receivers: Receivers, secretOf: ReadonlyMap<string, string>) {
    this.receivers = receivers
    this.secretOf = secretOf
  }

  private verify(arrival: Arrival): void {
    const secret = this.secretOf.get(arrival.path)
    const header = (name: string) => {
      const value = arrival.headers[name]
      return typeof value === "string" ? value : ""
    }
    const id = header("webhook-id")
    const ok = secret !== undefined &&
      header("x-service-signature") === Signature.serviceSignature(secret, arrival.body) &&
      header("webhook-signature") ===
        Signature.standardSignature(secret, id, Number(header("webhook-timestamp")), arrival.body)
    if (!ok) this.badSignatures++
  }

  /** A new round: counts from zero, `extra` sees every arrival. */
  reset(extra: (arrival: Arrival) => void): void {
    this.arrived = 0
    this.badSignatures = 0
    this.receivers.route.listener = (arrival) => {
      if (this.arrived % 16 === 0) this.verify(arrival)
      this.arrived++
      extra(arrival)
      if (this.waiter !== undefined && this.arrived >= this.waiter.count) {
        const done = this.waiter.resolve
        this.waiter = undefined
        done()
      }
    }
  }

  /** True once `count` have arrived in this round; false after `timeoutMs`. */
  wait(count: number, timeoutMs: number): Promise<boolean> {
    return this.arrived >= count ? Promise.resolve(true) : new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined
        resolve(false)
      }, timeoutMs)
      this.waiter = {
        count,
        resolve: () => {
          clearTimeout(timer)
          resolve(true)
        }
      }
    })
  }
}

// -- A steady stream of events ------------------------------------------------------

/**
 * `total` outbox events (EVENT, `payloadText(i)`) at `rate` per second from
 * now, each INSERT its own transaction (as a business write commits its
 * event), the i-th to `schoolOf(i)`; `committed[i]` is the instant
 * (performance.now()) the inserter saw its commit. Resolves when every
 * insert has returned, with the seconds from the stream's start until the
 * last insert returned.
 */
export const streamEvents = async (options: {
  readonly query: Query
  readonly total: number
  readonly rate: number
  readonly schoolOf: (i: number) => number
  readonly committed: Float64Array
}): Promise<number> => {
  const { query, total, rate, schoolOf, committed } = options
  const started = performance.now()
  const inserts: Array<Promise<void>> = []
  for (let i = 0; i < total; i++) {
    const due = started + i * 1000 / rate
    const wait = due - performance.now()
    if (wait > 0) await sleep(wait)
    inserts.push(
      query(`INSERT INTO outbox_events (school_id, event, payload) VALUES ($1, $2, $3::json)`, [
        schoolOf(i),
        EVENT,
        payloadText(i)
      ]).then(() => {
        committed[i] = performance.now()
      })
    )
  }
  await Promise.all(inserts)
  return (performance.now() - started) / 1000
}

