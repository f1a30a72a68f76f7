/**
 * `npm start` whose own embedded PostgreSQL dies (docs/operations.md
 * "Database away"): it does not keep running without a database; it stops
 * the API and the dispatcher and exits 1 with one line saying what happened.
 * A real `npm start` (DATABASE_URL unset, DATA_DIR a temporary directory);
 * the test kills the server whose pid is in DATA_DIR/postmaster.pid.
 */
import { assert, describe, it } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Deferred, Effect, Exit } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { entryPoints, lines } from "../support/Processes.ts"

const READY = "Ctrl-C stops everything"

describe("npm start when its embedded PostgreSQL dies", () => {
  it.live("stops everything with one clear line and exit 1", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        // Reachable by the `postgres` user PostgreSQL runs as when the tests run as root.
        Effect.promise(async () => {
          const created = await Fs.mkdtemp(Path.join(Os.tmpdir(), "school-start-dies-"))
          await Fs.chmod(created, 0o755)
          return created
        }),
        (created) => Effect.promise(() => Fs.rm(created, { recursive: true, force: true }))
      )
      const dataDir = Path.join(dir, "postgres")
      const port = yield* freePort
      const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), DISPATCHER_PORT: "0", HOST: "127.0.0.1", LOG_FORMAT: "json" }
      delete env["DATABASE_URL"]

      const output = { stdout: "", stderr: "" }
      const ready = yield* Deferred.make<boolean>()
      const closed = yield* Deferred.make<{ code: number | null; signal: string | null }>()
      // Still running when the test ends (it failed): SIGTERM, so it stops its children too; SIGKILL after 20 s.
      const child = yield* Effect.acquireRelease(
        Effect.sync(() => spawn(process.execPath, [entryPoints.start], { env, stdio: ["ignore", "pipe", "pipe"] })),
        (started) =>
          started.exitCode !== null || started.signalCode !== null
            ? Effect.void
            : Effect.sync(() => started.kill("SIGTERM")).pipe(
              Effect.andThen(Deferred.await(closed)),
              Effect.timeoutOrElse({ duration: "20 seconds", orElse: () => Effect.sync(() => started.kill("SIGKILL")) }),
              Effect.asVoid
            )
      )
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        output.stdout += chunk
        if (output.stdout.includes(READY)) Deferred.doneUnsafe(ready, Exit.succeed(true))
      })
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output.stderr += chunk))
      child.once("close", (code, signal) => {
        Deferred.doneUnsafe(ready, Exit.succeed(false))
        Deferred.doneUnsafe(closed, Exit.succeed({ code, signal }))
      })

      assert.isTrue(yield* Deferred.await(ready), output.stderr)
      const pid = Number.parseInt((yield* Effect.promise(() => Fs.readFile(Path.join(dataDir, "postmaster.pid"), "utf8"))).split("\n")[0] ?? "", 10)
      assert.isTrue(Number.isInteger(pid) && pid > 0)
      process.kill(pid, "SIGKILL")

      const end = yield* Deferred.await(closed).pipe(
        Effect.timeoutOrElse({ duration: "45 seconds", orElse: () => Effect.succeed({ code: null, signal: "still running" }) })
      )
      assert.strictEqual(end.code, 1, `${end.signal}\n${output.stderr}`)
      const last = lines(output.stderr).at(-1) ?? ""
      assert.strictEqual(
        last,
        `error: the embedded PostgreSQL (data in ${dataDir}) was killed by SIGKILL; stopped the API and the dispatcher`
      )
    }).pipe(Effect.scoped), 120_000)
})
