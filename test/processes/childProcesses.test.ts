/**
 * The child-process supervision of libs/runtime (`ChildProcesses.ts`), used
 * by npm start, the embedded PostgreSQL and the benchmark: a child is
 * stopped with its scope (its stop signal, then SIGKILL after the grace
 * period), `failOnExit` names how a child ended, output arrives line by
 * line, and a command that cannot start is a `SpawnError`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ChildProcesses from "@school/runtime/ChildProcesses"
import { Deferred, Duration, Effect, Exit, Scope } from "effect"

/** A Node child running `code`. */
const node = (code: string, options: Partial<ChildProcesses.SpawnOptions> = {}): ChildProcesses.SpawnOptions => ({
  name: "child",
  command: process.execPath,
  args: ["-e", code],
  ...options
})

describe("child processes", () => {
  it.live("run: the output line by line, the last one without its newline, and the exit code", () =>
    Effect.gen(function*() {
      const result = yield* ChildProcesses.run(
        node(`process.stdout.write("one\\ntwo\\n"); process.stderr.write("three"); process.exitCode = 3`)
      )
      assert.strictEqual(result.code, 3)
      assert.deepStrictEqual(result.output.split("\n").sort(), ["one", "three", "two"])
    }))

  it.live("closing the scope stops the child with its stop signal", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const ready = yield* Deferred.make<void>()
      const child = yield* ChildProcesses.spawn(node(
        `process.on("SIGINT", () => process.exit(7)); console.log("ready"); setInterval(() => {}, 1000)`,
        {
          stdout: { lines: () => Deferred.doneUnsafe(ready, Exit.void) },
          stop: [{ signal: "SIGINT", grace: Duration.seconds(10) }]
        }
      )).pipe(Scope.provide(scope))
      yield* Deferred.await(ready)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* child.exited, { code: 7, signal: null })
    }))

  it.live("a child that ignores its stop signal is killed after the grace period", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const ready = yield* Deferred.make<void>()
      const child = yield* ChildProcesses.spawn(node(
        `process.on("SIGTERM", () => {}); console.log("ready"); setInterval(() => {}, 1000)`,
        {
          stdout: { lines: () => Deferred.doneUnsafe(ready, Exit.void) },
          processGroup: true,
          stop: [{ signal: "SIGTERM", grace: Duration.millis(300) }]
        }
      )).pipe(Scope.provide(scope))
      yield* Deferred.await(ready)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* child.exited, { code: null, signal: "SIGKILL" })
    }))

  it.live("failOnExit names the child and how it ended", () =>
    Effect.gen(function*() {
      const child = yield* ChildProcesses.spawn(node("process.exit(4)"))
      const error = yield* Effect.flip(ChildProcesses.failOnExit(child))
      assert.strictEqual(error.message, "the child process exited with code 4")
    }))

  it.live("a command that cannot start is a SpawnError naming it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(ChildProcesses.run({ name: "nothing", command: "/nonexistent/binary" }))
      assert.strictEqual(error._tag, "SpawnError")
      assert.match(error.message, /^cannot run nothing: .*ENOENT/)
    }))
})
