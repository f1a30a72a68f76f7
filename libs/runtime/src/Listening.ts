/**
 * Owns how a child process tells the process that started it that it
 * listens (docs/operations.md "npm start"): `announce` sends one message
 * over Node's IPC channel, when there is one (`npm start` gives its children
 * one; run on its own, a process has none and `announce` does nothing), and
 * `watch` collects those messages in the parent. `npm start` prints its
 * banner once its own children have said so: probing the port would take
 * another process's answer (a first `npm start`) for theirs.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Child } from "./ChildProcesses.ts"

/** A listener of a process: the API's public port, the dispatcher's health port, a separate `/metrics` port. */
export type Listener = "api" | "dispatcher" | "metrics"

interface Listening {
  readonly type: "school/listening"
  readonly listener: Listener
  readonly port: number
}

const LISTENERS: ReadonlyArray<unknown> = ["api", "dispatcher", "metrics"] satisfies ReadonlyArray<Listener>

const isListening = (message: unknown): message is Listening =>
  typeof message === "object" && message !== null && "type" in message && message.type === "school/listening" &&
  "listener" in message && LISTENERS.includes(message.listener) && "port" in message && typeof message.port === "number"

/** Tells the parent process, if it listens over IPC, that `listener` listens on `port`. */
export const announce = (listener: Listener, port: number): Effect.Effect<void> =>
  Effect.sync(() => {
    if (process.send === undefined || !process.connected) return
    const message: Listening = { type: "school/listening", listener, port }
    // The callback takes a send error (the parent gone), which would otherwise be an 'error' event.
    process.send(message, undefined, {}, () => {})
  })

/**
 * Starts collecting `child`'s announcements (call it right after the
 * spawn): `listening(listener)` completes with the port once the child has
 * announced that listener.
 */
export const watch = (child: Child): Effect.Effect<{ readonly listening: (listener: Listener) => Effect.Effect<number> }> =>
  Effect.sync(() => {
    const ports = new Map<Listener, Deferred.Deferred<number>>()
    const of = (listener: Listener) => {
      let found = ports.get(listener)
      if (found === undefined) {
        found = Deferred.makeUnsafe<number>()
        ports.set(listener, found)
      }
      return found
    }
    child.process.on("message", (message: unknown) => {
      if (isListening(message)) Deferred.doneUnsafe(of(message.listener), Exit.succeed(message.port))
    })
    return { listening: (listener: Listener) => Deferred.await(of(listener)) }
  })
