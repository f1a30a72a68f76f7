/**
 * Owns the order of a graceful stop, shared by the API and the dispatcher
 * (docs/operations.md "Shutdown"). On SIGTERM/SIGINT `runMain` interrupts the
 * main program and its scope closes; the first finalizer to run is the one
 * `drainFirst` adds, last, after the process's servers are up:
 *
 * 1. the process says it is stopping: `/health/ready` answers 503
 *    `shutting_down` (the `Stopping` state below), while everything else
 *    is served as before;
 * 2. it keeps serving so for SHUTDOWN_DELAY, the time a load balancer needs
 *    to see the readiness and take the process out of rotation;
 * 3. then the rest of the scope closes as before: the API's server stops
 *    accepting and finishes the requests in flight (`closeWhenIdle`, bounded
 *    by SHUTDOWN_TIMEOUT), the dispatcher stops claiming and finishes or
 *    gives back its attempts.
 */
import type { Scope } from "effect"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Http from "node:http"

export interface StoppingShape {
  /** True once a stop began: readiness answers 503 `shutting_down`. */
  readonly stopping: Effect.Effect<boolean>
}

/** Whether the process is stopping; never, unless a process's main provides `make`'s state. */
export const Stopping = Context.Reference<StoppingShape>("@school/runtime/Shutdown/Stopping", {
  defaultValue: () => ({ stopping: Effect.succeed(false) })
})

/** The answer of `/health/ready` while stopping: the body shape of `not_ready`. */
export const SHUTTING_DOWN = {
  error: { code: "shutting_down", message: "The process is stopping." }
} as const

export interface Shutdown extends StoppingShape {
  /** Marks the process as stopping. */
  readonly begin: Effect.Effect<void>
}

/** A fresh state, not stopping; provide it as `Stopping` to the servers, then call `drainFirst`. */
export const make: Effect.Effect<Shutdown> = Effect.sync(() => {
  let stopping = false
  return {
    stopping: Effect.sync(() => stopping),
    begin: Effect.sync(() => {
      stopping = true
    })
  }
})

/**
 * Adds the finalizer that runs first when the scope closes (call it once
 * the servers are up): readiness turns false, then `delay` passes with
 * everything still served, then the finalizers added before it run.
 */
export const drainFirst = (shutdown: Shutdown, delay: Duration.Duration): Effect.Effect<void, never, Scope.Scope> =>
  Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* shutdown.begin
      const ms = Duration.toMillis(delay)
      yield* Effect.logInfo("stopping: /health/ready answers 503 shutting_down", { shutdownDelay: Duration.format(delay) })
      if (ms > 0) yield* Effect.sleep(delay)
    })
  )

/** How often a closing server looks for connections that became idle. */
const IDLE_CHECK_MS = 50

/**
 * Makes `server.close()` finish as soon as the requests in flight have
 * their answers, and by `timeout` at the latest. Node's own `close` stops
 * accepting and closes the connections idle at that moment, but a
 * keep-alive connection whose request was in flight stays open after its
 * answer for `keepAliveTimeout` (5 s), and a request still arriving (a slow
 * upload) holds it for `requestTimeout` (300 s). Here a request that
 * arrives on an open connection after `close` is answered with
 * `Connection: close`, connections are closed as soon as they become idle,
 * and whatever is still open after `timeout` is cut.
 */
export const closeWhenIdle = <S extends Http.Server>(server: S, timeout: Duration.Duration): S => {
  const close = server.close.bind(server)
  let closing = false
  server.on("request", (_request: Http.IncomingMessage, response: Http.ServerResponse) => {
    if (closing && !response.headersSent) response.setHeader("connection", "close")
  })
  server.close = (callback?: (error?: Error) => void) => {
    if (closing) return close(callback)
    closing = true
    const idle = setInterval(() => server.closeIdleConnections(), IDLE_CHECK_MS).unref()
    const cut = setTimeout(() => server.closeAllConnections(), Duration.toMillis(timeout)).unref()
    server.once("close", () => {
      clearInterval(idle)
      clearTimeout(cut)
    })
    return close(callback)
  }
  return server
}
