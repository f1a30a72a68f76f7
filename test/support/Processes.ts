/**
 * Runs one of the project's entry points as a real child process (the Node
 * that runs the tests, i.e. the pinned Node 24), for tests of the processes'
 * outside behaviour: exit codes, stdout, stderr.
 */
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

export const entryPoints = {
  cli: fileURLToPath(new URL("../../apps/cli/src/main.ts", import.meta.url)),
  migrate: fileURLToPath(new URL("../../apps/cli/src/migrate.ts", import.meta.url)),
  dispatcher: fileURLToPath(new URL("../../apps/dispatcher/src/main.ts", import.meta.url))
} as const

export interface Finished {
  readonly code: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
}

/** The settings of CONTRACT "Settings", so the tests' own environment cannot leak in. */
const settingNames = [
  "DATABASE_URL",
  "PORT",
  "HOST",
  "LOG_LEVEL",
  "LOG_FORMAT",
  "IDEMPOTENCY_WAIT",
  "WEBHOOK_RETRY_DELAYS",
  "WEBHOOK_TIMEOUT",
  "WEBHOOK_ALLOW_INSECURE_URLS",
  "DISPATCHER_CONCURRENCY",
  "RATE_LIMIT_WINDOW"
]

const environment = (env: Readonly<Record<string, string>>): NodeJS.ProcessEnv => {
  const base: NodeJS.ProcessEnv = { ...process.env }
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

/** Starts `script`, waits until stderr contains `ready`, sends `signal`, and collects how it ended. */
export const runUntil = (
  script: string,
  env: Readonly<Record<string, string>>,
  ready: string,
  signal: NodeJS.Signals
): Effect.Effect<Finished & { readonly becameReady: boolean }> =>
  Effect.suspend(() => {
    const child = spawn(process.execPath, [script], { env: environment(env), timeout: 30_000 })
    let becameReady = false
    let seen = ""
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      seen += chunk
      if (!becameReady && seen.includes(ready)) {
        becameReady = true
        child.kill(signal)
      }
    })
    return collect(child).pipe(Effect.map((finished) => ({ ...finished, stderr: seen, becameReady })))
  })

/** The non-empty lines of a text. */
export const lines = (text: string): ReadonlyArray<string> => text.split("\n").filter((line) => line.trim() !== "")
