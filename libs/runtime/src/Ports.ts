/**
 * Owns finding a free TCP port on 127.0.0.1: for the embedded PostgreSQL,
 * and for the API processes the tests and the benchmark start.
 *
 * The port is drawn at random from below the system's ephemeral range
 * (Linux: `/proc/sys/net/ipv4/ip_local_port_range`, 32768 and up by
 * default). A port the system hands out for `listen(0)` or an outgoing
 * connection comes from that range, so between our check and the moment a
 * child process listens on the port, no other `listen(0)` on the machine
 * (a test's receiver, another dispatcher) can take it; only another caller
 * drawing the same number could, one chance in thousands. Where the range
 * cannot be read, the system's own `listen(0)` choice is used. And the one
 * line a process writes when it cannot listen (`cannotListen`), and a plain
 * node:http server listening for as long as a scope lives (`listenUntilClosed`).
 */
import type { Scope } from "effect"
import * as Effect from "effect/Effect"
import * as Fs from "node:fs"
import type * as Http from "node:http"
import * as Net from "node:net"
import { AlreadyLogged } from "./Reported.ts"

/** Whether `port` (0: any) can be listened on now; the port listened on, or undefined. */
const tryListen = (port: number) =>
  Effect.callback<number | undefined>((resume) => {
    const server = Net.createServer()
    server.unref()
    server.once("error", () => resume(Effect.succeed(undefined)))
    server.listen(port, "127.0.0.1", () => {
      const address = server.address()
      const bound = address !== null && typeof address === "object" ? address.port : 0
      server.close(() => resume(Effect.succeed(bound > 0 ? bound : undefined)))
    })
  })

/** The ports below the ephemeral range we draw from, or undefined when the range is unknown. */
const drawRange = (): { readonly low: number; readonly high: number } | undefined => {
  try {
    const [low] = Fs.readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/u).map(Number)
    if (low === undefined || !Number.isInteger(low) || low < 12_000) return undefined
    return { low: Math.max(10_000, low - 12_000), high: low - 1 }
  } catch {
    return undefined
  }
}

const RANGE = drawRange()

/** A TCP port that was free on 127.0.0.1 a moment ago. The system refusing every one is a defect. */
export const freePort: Effect.Effect<number> = Effect.gen(function*() {
  if (RANGE !== undefined) {
    for (let i = 0; i < 50; i++) {
      const candidate = RANGE.low + Math.floor(Math.random() * (RANGE.high - RANGE.low + 1))
      const port = yield* tryListen(candidate)
      if (port !== undefined) return port
    }
  }
  const any = yield* tryListen(0)
  if (any === undefined) return yield* Effect.die(new Error("no free port on 127.0.0.1"))
  return any
})

/**
 * A process that cannot listen on `host:port` says so in one error line and
 * fails with `AlreadyLogged` (exit 1): why, from the system's error code, and
 * which setting to change (`PORT` for the API, `DISPATCHER_PORT` for the
 * dispatcher).
 */
export const cannotListen = (options: {
  readonly host: string
  readonly port: number
  readonly setting: string
  readonly cause: unknown
}): Effect.Effect<never, AlreadyLogged> => {
  const { cause } = options
  const code = cause instanceof Error && "code" in cause && typeof cause.code === "string" ? cause.code : undefined
  const why = code === "EADDRINUSE"
    ? `the address is already in use (EADDRINUSE); choose another ${options.setting} or stop what listens there`
    : code === "EADDRNOTAVAIL"
    ? "no such address on this machine (EADDRNOTAVAIL); check HOST"
    : code === "EACCES"
    ? "permission denied (EACCES); ports below 1024 need privileges"
    : cause instanceof Error
    ? cause.message
    : String(cause)
  const address = `${options.host.includes(":") ? `[${options.host}]` : options.host}:${options.port}`
  const message = `cannot listen on ${address}: ${why}`
  return Effect.andThen(Effect.logError(message), Effect.fail(new AlreadyLogged({ message })))
}

/**
 * `server` listening on `host:port` (0: any free port) until the scope
 * closes, then closed with its connections cut; the port it listens on. An
 * address it cannot listen on fails with the system's error (`cannotListen`
 * says it in one line).
 */
export const listenUntilClosed = (server: Http.Server, host: string, port: number): Effect.Effect<number, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<number, Error>((resume) => {
      server.once("error", (error) => resume(Effect.fail(error)))
      server.listen(port, host, () => {
        const address = server.address()
        resume(Effect.succeed(address !== null && typeof address === "object" ? address.port : port))
      })
    }),
    () =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )
