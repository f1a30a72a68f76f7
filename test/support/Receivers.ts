/**
 * Real webhook receivers for the dispatcher's tests: HTTP servers on
 * 127.0.0.1 that record every request's raw body bytes, headers and arrival
 * time, and answer as the test scripts them, request by request: a status
 * (2xx or not), a redirect, hanging until the client gives up, or closing
 * the connection mid-response. They also count the TCP connections they
 * accepted (a refused address must open none). Stopped with their scope.
 */
import { Effect, type Scope } from "effect"
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

export interface Receiver {
  readonly url: string
  readonly port: number
  /** Every request so far, in arrival order. */
  readonly received: Array<Received>
  /** TCP connections accepted so far. */
  readonly connections: () => number
  /** Changes how the next requests are answered. */
  setBehaviour(behave: (index: number, request: Received) => Behaviour): void
  /** Waits until at least `count` requests have arrived (fails after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Effect.Effect<ReadonlyArray<Received>>
}

/** A receiver answering `behave(index, request)` to its index-th request (0-based). */
export const startReceiver = (
  behave: (index: number, request: Received) => Behaviour = () => ok
): Effect.Effect<Receiver, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ receiver: Receiver; server: Http.Server }>((resume) => {
      let behaviour = behave
      let connections = 0
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
      server.on("connection", () => connections++)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = address !== null && typeof address === "object" ? address.port : 0
        const receiver: Receiver = {
          url: `http://127.0.0.1:${port}/hook`,
          port,
          received,
          connections: () => connections,
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
