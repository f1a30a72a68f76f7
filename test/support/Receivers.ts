/**
 * Real webhook receivers for the dispatcher's tests: HTTP servers on
 * 127.0.0.1 that record every request's raw body bytes, headers and arrival
 * time, and answer as the test scripts them, request by request: a status
 * (2xx or not), a redirect, hanging until the client gives up, or closing
 * the connection mid-response. They also count the TCP connections they
 * accepted (a refused address must open none) and those the client still
 * holds open (from `connection` until the client's end of it closes), alone
 * or across receivers (`ConnectionGauge`, with its peak). Stopped with
 * their scope.
 */
import { Effect, type Scope } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"

export type Behaviour =
  | { readonly _tag: "Status"; readonly status: number; readonly body?: string }
  | { readonly _tag: "Redirect"; readonly status: number; readonly location: string }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "CloseMidResponse" }
  | { readonly _tag: "Delay"; readonly ms: number; readonly then: Behaviour }

export const status = (code: number, body?: string): Behaviour =>
  body === undefined ? { _tag: "Status", status: code } : { _tag: "Status", status: code, body }
export const ok: Behaviour = status(204)
export const hang: Behaviour = { _tag: "Hang" }
export const closeMidResponse: Behaviour = { _tag: "CloseMidResponse" }
export const delay = (ms: number, then: Behaviour = ok): Behaviour => ({ _tag: "Delay", ms, then })
export const redirect = (location: string, code = 302): Behaviour => ({ _tag: "Redirect", status: code, location })

export interface Received {
  /** `performance.timeOrigin + performance.now()` when the whole body had arrived. */
  readonly at: number
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  /** The body exactly as it arrived. */
  readonly raw: Buffer
  readonly body: string
}

/** Connections open now across the receivers that share it, and the most ever open at once. */
export interface ConnectionGauge {
  readonly open: () => number
  readonly peak: () => number
}

interface MutableGauge extends ConnectionGauge {
  readonly listening: (port: number) => void
  readonly opened: () => void
  readonly closed: () => void
}

/**
 * Connections to the local `ports` the client holds open now, as the kernel
 * sees them (ESTABLISHED on the receiver's side: a connection the client
 * has closed is CLOSE_WAIT there at once), from /proc/net/tcp and tcp6;
 * undefined where those cannot be read.
 */
const establishedTo = (ports: ReadonlySet<number>): number | undefined => {
  try {
    let count = 0
    for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
      for (const line of Fs.readFileSync(table, "latin1").split("\n").slice(1)) {
        const [, local, , state] = line.trim().split(/\s+/u)
        const port = Number.parseInt(local?.split(":")[1] ?? "", 16)
        if (state === "01" && ports.has(port)) count++
      }
    }
    return count
  } catch {
    return undefined
  }
}

/**
 * A gauge to share between receivers (`startReceiver(behave, { gauge })`).
 * `open` counts from a receiver's `connection` event until the client's end
 * of it closes (`end` or `close`); the server can see a close after a newer
 * connection, so when that count passes a previous peak, the peak is taken
 * from the kernel instead (connections to the receivers still ESTABLISHED),
 * where it can be read.
 */
export const connectionGauge = (): ConnectionGauge => {
  const ports = new Set<number>()
  let open = 0
  let peak = 0
  const gauge: MutableGauge = {
    open: () => open,
    peak: () => peak,
    listening: (port) => {
      ports.add(port)
    },
    opened: () => {
      open++
      if (open > peak) peak = Math.max(peak, Math.min(open, establishedTo(ports) ?? open))
    },
    closed: () => {
      open--
    }
  }
  return gauge
}

const isMutable = (gauge: ConnectionGauge): gauge is MutableGauge =>
  "listening" in gauge && "opened" in gauge && "closed" in gauge

export interface ReceiverOptions {
  /**
   * The server's keep-alive time-out for idle connections, ms (Node's
   * default otherwise); 0: never close an idle connection, and announce no
   * `Keep-Alive: timeout=`.
   */
  readonly keepAliveTimeout?: number
  /** Counts this receiver's open connections into a gauge shared with others. */
  readonly gauge?: ConnectionGauge
}

export interface Receiver {
  readonly url: string
  readonly port: number
  /** Every request so far, in arrival order. */
  readonly received: Array<Received>
  /** TCP connections accepted so far. */
  readonly connections: () => number
  /** Connections open now: accepted, and not yet ended or closed by the client. */
  readonly openConnections: () => number
  /** Changes how the next requests are answered. */
  setBehaviour(behave: (index: number, request: Received) => Behaviour): void
  /** Waits until at least `count` requests have arrived (fails after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Effect.Effect<ReadonlyArray<Received>>
}

/** A receiver answering `behave(index, request)` to its index-th request (0-based). */
export const startReceiver = (
  behave: (index: number, request: Received) => Behaviour = () => ok,
  options: ReceiverOptions = {}
): Effect.Effect<Receiver, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ receiver: Receiver; server: Http.Server }>((resume) => {
      let behaviour = behave
      let connections = 0
      let open = 0
      const gauge = options.gauge !== undefined && isMutable(options.gauge) ? options.gauge : undefined
      const received: Array<Received> = []
      const server = Http.createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const raw = Buffer.concat(chunks)
          const entry: Received = {
            at: performance.timeOrigin + performance.now(),
            method: request.method ?? "",
            path: request.url ?? "",
            headers: request.headers,
            raw,
            body: raw.toString("utf8")
          }
          const index = received.length
          received.push(entry)
          respond(behaviour(index, entry))
        })
        const respond = (answer: Behaviour): void => {
          switch (answer._tag) {
            case "Delay":
              setTimeout(() => respond(answer.then), answer.ms)
              return
            case "Status":
              response.writeHead(answer.status, { "content-type": "text/plain" })
              response.end(answer.body ?? "")
              return
            case "Redirect":
              response.writeHead(answer.status, { location: answer.location })
              response.end()
              return
            case "Hang":
              return
            case "CloseMidResponse":
              // Headers promise a body that never comes: the connection closes halfway.
              response.socket?.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\ncontent-type: text/plain\r\n\r\npartial")
              response.socket?.destroy()
              return
          }
        }
      })
      if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout
      server.on("connection", (socket) => {
        connections++
        open++
        gauge?.opened()
        let counted = true
        // The client's end closing (FIN or reset) is when the client no longer holds it.
        const gone = () => {
          if (!counted) return
          counted = false
          open--
          gauge?.closed()
        }
        socket.once("end", gone)
        socket.once("close", gone)
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = address !== null && typeof address === "object" ? address.port : 0
        gauge?.listening(port)
        const receiver: Receiver = {
          url: `http://127.0.0.1:${port}/hook`,
          port,
          received,
          connections: () => connections,
          openConnections: () => open,
          setBehaviour: (next) => {
            behaviour = next
          },
          waitFor: (count, timeoutMs = 15_000) =>
            Effect.gen(function*() {
              const started = Date.now()
              while (received.length < count) {
                if (Date.now() - started > timeoutMs) {
                  return yield* Effect.die(new Error(`receiver got ${received.length} of ${count} requests in ${timeoutMs} ms`))
                }
                yield* Effect.sleep("10 millis")
              }
              return received
            })
        }
        resume(Effect.succeed({ receiver, server }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  ).pipe(Effect.map(({ receiver }) => receiver))

