/**
 * Runs one of the project's entry points as a real child process (the Node
 * that runs the tests, i.e. the pinned Node 24), for tests of the processes'
 * outside behaviour: exit codes, stdout, stderr.
 */
import { Deferred, Effect, Exit, Option } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import * as Net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const entryPoints = {
  api: fileURLToPath(new URL("../../apps/api/src/main.ts", import.meta.url)),
  cli: fileURLToPath(new URL("../../apps/cli/src/main.ts", import.meta.url)),
  migrate: fileURLToPath(new URL("../../apps/cli/src/migrate.ts", import.meta.url)),
  dispatcher: fileURLToPath(new URL("../../apps/dispatcher/src/main.ts", import.meta.url)),
  start: fileURLToPath(new URL("../../apps/cli/src/start.ts", import.meta.url)),
  /** The production bundles (apps/cli/src/build.ts); they exist once a test or `npm run build` built them. */
  apiBundle: fileURLToPath(new URL("../../apps/api/dist/main.js", import.meta.url)),
  dispatcherBundle: fileURLToPath(new URL("../../apps/dispatcher/dist/main.js", import.meta.url))
} as const

export interface Finished {
  readonly code: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * The settings of docs/operations.md "Settings" (the names in its table's first column; the
 * operations doc test holds that table to what the processes read), so the tests' own
 * environment cannot leak into a child. `TEST_DATABASE_URL` is the tests' own.
 */
const settingNames: ReadonlyArray<string> = (() => {
  const doc = readFileSync(fileURLToPath(new URL("../../docs/operations.md", import.meta.url)), "utf8")
  const section = doc.slice(doc.indexOf("\n## Settings\n"), doc.indexOf("\n## ", doc.indexOf("\n## Settings\n") + 1))
  const names = section.split("\n").filter((line) => line.startsWith("| `")).flatMap((line) =>
    [...(line.split("|")[1] ?? "").matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1] ?? "")
  )
  return names.filter((name) => name !== "" && name !== "TEST_DATABASE_URL")
})()

/**
 * Node's compile cache for the children (the CLI, the API, the dispatcher, the examples): each loads a few
 * hundred TypeScript modules, and the cache spares the second and later processes their stripping and compiling
 * (a CLI call: 0.9 s → 0.7 s). Keyed by each file's content, so an edited file is compiled again.
 */
const COMPILE_CACHE = join(tmpdir(), "school-tests-node-compile-cache")

/** The tests' environment without the settings (see `settingNames`), plus `env`: a child's environment. */
export const environment = (env: Readonly<Record<string, string>>): NodeJS.ProcessEnv => {
  const base: NodeJS.ProcessEnv = { NODE_COMPILE_CACHE: COMPILE_CACHE, ...process.env }
  for (const name of settingNames) delete base[name]
  return { ...base, ...env }
}

const collect = (child: ChildProcess) =>
  Effect.callback<Finished>((resume) => {
    let stdout = ""
    let stderr = ""
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.once("close", (code, signal) => resume(Effect.succeed({ code, signal, stdout, stderr })))
  })

/** Runs `script args…` to completion (killed after `timeout`). */
export const run = (
  script: string,
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>> = {},
  timeout = 30_000
): Effect.Effect<Finished> =>
  Effect.suspend(() => collect(spawn(process.execPath, [script, ...args], { env: environment(env), timeout })))

/**
 * Starts `script`, waits until its output (stdout or stderr) contains
 * `ready`, runs `whileReady` with the output so far, sends `signal`, and
 * collects how it ended.
 */
export const runUntil = <A>(
  script: string,
  env: Readonly<Record<string, string>>,
  ready: string,
  signal: NodeJS.Signals,
  whileReady: (output: string) => Effect.Effect<A>
): Effect.Effect<Finished & { readonly becameReady: boolean; readonly result: Option.Option<A> }> =>
  Effect.gen(function*() {
    const child = spawn(process.execPath, [script], { env: environment(env), timeout: 30_000 })
    const output = { stdout: "", stderr: "" }
    const readyOrClosed = yield* Deferred.make<boolean>()
    const closed = yield* Deferred.make<{ code: number | null; signal: string | null }>()
    const seen = () => output.stdout + output.stderr
    const watch = (stream: "stdout" | "stderr") => (chunk: string) => {
      output[stream] += chunk
      if (seen().includes(ready)) Deferred.doneUnsafe(readyOrClosed, Exit.succeed(true))
    }
    child.stdout?.setEncoding("utf8").on("data", watch("stdout"))
    child.stderr?.setEncoding("utf8").on("data", watch("stderr"))
    child.once("close", (code, signal) => {
      Deferred.doneUnsafe(readyOrClosed, Exit.succeed(false))
      Deferred.doneUnsafe(closed, Exit.succeed({ code, signal }))
    })
    const becameReady = yield* Deferred.await(readyOrClosed)
    const result = becameReady ? Option.some(yield* whileReady(seen())) : Option.none<A>()
    child.kill(signal)
    const end = yield* Deferred.await(closed)
    return { ...end, ...output, becameReady, result }
  })

/** GET `url`: its status and body, or status 0 when nothing answers (the connection refused or reset). */
export const httpGet = (url: string) =>
  Effect.promise(async () => {
    try {
      const response = await fetch(url)
      return { status: response.status, body: await response.text() }
    } catch {
      return { status: 0, body: "" }
    }
  })

/** Polls `url` every `everyMs` until `accept` holds of its status, or `deadlineMs` pass; the last answer. */
export const pollUntil = (url: string, accept: (status: number) => boolean, deadlineMs: number, everyMs: number) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (true) {
      const answer = yield* httpGet(url)
      if (accept(answer.status) || Date.now() - started > deadlineMs) return answer
      yield* Effect.sleep(everyMs)
    }
  })

/** The non-empty lines of a text. */
export const lines = (text: string): ReadonlyArray<string> => text.split("\n").filter((line) => line.trim() !== "")

export interface RunningApi {
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>
  /** Sends SIGTERM. */
  readonly stop: () => void
  /** Everything it printed so far. */
  readonly log: () => string
}

/**
 * Starts the real API process on 127.0.0.1:`port` against `databaseUrl`
 * (plus `env`); resolves once it listens. On release: SIGTERM, and waits for
 * the exit. A process that dies before listening fails with its output.
 */
export const startApi = (
  databaseUrl: string,
  port: number,
  env: Readonly<Record<string, string>> = {},
  script: string = entryPoints.api
) =>
  Effect.acquireRelease(
    Effect.callback<RunningApi, Error>((resume) => {
      const child = spawn(process.execPath, [script], {
        env: environment({ DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1", LOG_FORMAT: "json", ...env }),
        stdio: ["ignore", "pipe", "pipe"]
      })
      const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
      let log = ""
      const onData = (chunk: Buffer) => {
        log += chunk.toString()
        if (log.includes("Listening on")) resume(Effect.succeed({ exited, stop: () => child.kill("SIGTERM"), log: () => log }))
      }
      child.stdout?.on("data", onData)
      child.stderr?.on("data", onData)
      child.once("exit", (code) => resume(Effect.fail(new Error(`API exited early (${code}): ${log}`))))
      return Effect.sync(() => child.kill("SIGKILL"))
    }),
    (api) =>
      Effect.promise(async () => {
        api.stop()
        await api.exited
      })
  )

export interface RunningDispatcher {
  /** The port of its /health routes. */
  readonly port: number
  /** Resolves with the exit code (null when killed by a signal) once the process has exited. */
  readonly exited: Promise<number | null>
  /** Everything it printed so far. */
  readonly log: () => string
  /** Sends SIGTERM (graceful) or SIGKILL. */
  readonly signal: (signal: NodeJS.Signals) => void
}

/**
 * Starts the real dispatcher process against `databaseUrl` (plus `env`),
 * its health routes on a free port; resolves once it says it is ready. On
 * release: SIGTERM unless it already exited, and waits for the exit.
 */
export const startDispatcher = (
  databaseUrl: string,
  env: Readonly<Record<string, string>> = {},
  script: string = entryPoints.dispatcher
) =>
  Effect.acquireRelease(
    Effect.callback<RunningDispatcher, Error>((resume) => {
      const child = spawn(process.execPath, [script], {
        env: environment({ DATABASE_URL: databaseUrl, DISPATCHER_PORT: "0", HOST: "127.0.0.1", LOG_FORMAT: "json", ...env }),
        stdio: ["ignore", "pipe", "pipe"]
      })
      let exitCode: number | null | undefined
      const exited = new Promise<number | null>((done) =>
        child.once("exit", (code) => {
          exitCode = code
          done(code)
        })
      )
      let log = ""
      const onData = (chunk: Buffer) => {
        log += chunk.toString()
        const ready = /dispatcher ready[^\n]*"port":(\d+)/.exec(log)
        if (ready !== null) {
          resume(Effect.succeed({
            port: Number(ready[1]),
            exited,
            log: () => log,
            signal: (signal) => {
              if (exitCode === undefined) child.kill(signal)
            }
          }))
        }
      }
      child.stdout?.on("data", onData)
      child.stderr?.on("data", onData)
      child.once("exit", (code) => resume(Effect.fail(new Error(`dispatcher exited early (${code}): ${log}`))))
      return Effect.sync(() => child.kill("SIGKILL"))
    }),
    (dispatcher) =>
      Effect.promise(async () => {
        dispatcher.signal("SIGTERM")
        await dispatcher.exited
      })
  )

/** A port on 127.0.0.1 held by the test until the scope closes (something else listens there). */
export const heldPort = Effect.acquireRelease(
  Effect.callback<Net.Server>((resume) => {
    const server = Net.createServer()
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(Effect.map((server) => {
  const address = server.address()
  return address !== null && typeof address === "object" ? address.port : 0
}))
