/**
 * The embedded PostgreSQL (docs/operations.md "Commands", "Database"): a
 * throwaway cluster is gone with its scope; a persistent one keeps its data
 * between runs, and one that another process is running is used as it is
 * rather than started twice; a server whose starter is killed outright is
 * stopped by its watchdog; where npm start keeps its data (DATA_DIR).
 */
import { assert, describe, it } from "@effect/vitest"
import * as EmbeddedPostgres from "@school/local-postgres/EmbeddedPostgres"
import * as Sql from "@school/persistence/Sql"
import * as ChildProcesses from "@school/runtime/ChildProcesses"
import { Deferred, Effect, Exit, Option, Schedule, Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs/promises"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const query = <A extends object>(url: string, statement: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(statement)
  }).pipe(Effect.provide(Sql.layer({ url, maxConnections: 1 })))

const exists = (path: string) => Effect.promise(() => Fs.access(path).then(() => true, () => false))

const accepts = (url: string) =>
  Effect.promise(() =>
    new Promise<boolean>((resolve) => {
      const { hostname, port } = new URL(url)
      const socket = Net.connect({ host: hostname, port: Number(port) })
      socket.once("connect", () => (socket.destroy(), resolve(true)))
      socket.once("error", () => (socket.destroy(), resolve(false)))
    })
  )

// Searchable by others: as root, PostgreSQL runs as the `postgres` user.
const tempParent = Effect.acquireRelease(
  Effect.promise(async () => {
    const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "school-provider-test-"))
    await Fs.chmod(dir, 0o755)
    return dir
  }),
  (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
)

/** A scope closed by the test, or by the test's own scope if the test fails first. */
const openScope = Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void))

describe("embedded PostgreSQL", () => {
  it.live.skipIf(process.getuid?.() !== 0)("as root, a data directory the postgres user cannot reach is one clear error", () =>
    Effect.gen(function*() {
      const parent = yield* Effect.acquireRelease(
        Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "school-provider-test-"))),
        (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
      )
      const error = yield* Effect.flip(EmbeddedPostgres.embedded({ dataDir: Path.join(parent, "pg"), persistent: false }))
      assert.include(error.message, `cannot enter ${parent}`)
    }))

  it.live("a throwaway cluster answers, then is stopped and removed with its scope", () =>
    Effect.gen(function*() {
      const parent = yield* tempParent
      const dataDir = Path.join(parent, "pg")
      const scope = yield* openScope
      const database = yield* EmbeddedPostgres.embedded({ dataDir, persistent: false }).pipe(Scope.provide(scope))
      assert.strictEqual(database.origin, "embedded")
      assert.deepStrictEqual(yield* query<{ one: number }>(database.url, "SELECT 1 AS one"), [{ one: 1 }])
      assert.isTrue(yield* exists(dataDir))
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(yield* accepts(database.url))
      assert.isFalse(yield* exists(dataDir))
    }))

  it.live("a persistent cluster keeps its data between runs; a running one is reused, not restarted", () =>
    Effect.gen(function*() {
      const parent = yield* tempParent
      const dataDir = Path.join(parent, "pg")

      const first = yield* openScope
      const one = yield* EmbeddedPostgres.embedded({ dataDir, persistent: true }).pipe(Scope.provide(first))
      yield* query(one.url, "CREATE TABLE kept (n int)")
      yield* query(one.url, "INSERT INTO kept VALUES (42)")

      // Another process's view: the same cluster, attached, left running when it is done.
      const attached = yield* openScope
      const two = yield* EmbeddedPostgres.embedded({ dataDir, persistent: true }).pipe(Scope.provide(attached))
      assert.strictEqual(new URL(two.url).port, new URL(one.url).port)
      yield* Scope.close(attached, Exit.void)
      assert.isTrue(yield* accepts(one.url))

      yield* Scope.close(first, Exit.void)
      assert.isFalse(yield* accepts(one.url))
      assert.isTrue(yield* exists(Path.join(dataDir, "PG_VERSION")))

      // Started again on the same directory: the data is there.
      const again = yield* EmbeddedPostgres.embedded({ dataDir, persistent: true })
      assert.deepStrictEqual(yield* query<{ n: number }>(again.url, "SELECT n FROM kept"), [{ n: 42 }])
    }))

  it.live("a server whose starter is killed outright is stopped by the watchdog, its throwaway directory removed", () =>
    Effect.gen(function*() {
      const parent = yield* tempParent
      const dataDir = Path.join(parent, "pg")
      const printed = yield* Deferred.make<string>()
      // Kept for a failure message rather than printed.
      const stderr: Array<string> = []
      const starter = yield* ChildProcesses.spawn({
        name: "embedded server starter",
        command: process.execPath,
        args: [fileURLToPath(new URL("../support/embeddedServer.ts", import.meta.url)), dataDir],
        stdout: { lines: (line) => Deferred.doneUnsafe(printed, Exit.succeed(line)) },
        stderr: { lines: (line) => void stderr.push(line) }
      })
      const url = yield* Deferred.await(printed).pipe(
        Effect.timeoutOrElse({
          duration: "60 seconds",
          orElse: () => Effect.die(new Error(`the starter printed no URL; its stderr:\n${stderr.join("\n")}`))
        })
      )
      assert.isTrue(yield* accepts(url))
      starter.process.kill("SIGKILL")
      yield* starter.exited
      // The watchdog polls every 500 ms, then a fast shutdown; the data directory goes after the server.
      const gone = Effect.gen(function*() {
        if ((yield* accepts(url)) || (yield* exists(dataDir))) return yield* Effect.fail("still there")
      })
      yield* gone.pipe(Effect.retry({ schedule: Schedule.spaced("250 millis"), times: 120 }), Effect.orDie)
    }))
})

describe("where npm start keeps its data (DATA_DIR)", () => {
  it.effect("DATA_DIR as given, relative to the working directory", () =>
    Effect.gen(function*() {
      const choice = yield* EmbeddedPostgres.serviceDataDir(Option.some("some/where"))
      assert.strictEqual(choice.path, Path.resolve("some/where"))
      assert.isTrue(Option.isNone(choice.note))
    }))

  it.effect("unset: .data/postgres in the project, or, when the server's user cannot reach it, its own temporary one", () =>
    Effect.gen(function*() {
      const choice = yield* EmbeddedPostgres.serviceDataDir(Option.none())
      assert.strictEqual(EmbeddedPostgres.defaultDataDir(), fileURLToPath(new URL("../../.data/postgres", import.meta.url)))
      if (Option.isNone(choice.note)) {
        assert.strictEqual(choice.path, EmbeddedPostgres.defaultDataDir())
      } else {
        // A checkout the postgres user cannot enter, as root (test/processes/start.clone.test.ts runs npm start in one).
        assert.strictEqual(process.getuid?.(), 0)
        assert.include(choice.note.value, "cannot enter")
        assert.strictEqual(Path.dirname(Path.dirname(choice.path)), Os.tmpdir())
        const again = yield* EmbeddedPostgres.serviceDataDir(Option.none())
        assert.strictEqual(again.path, choice.path)
      }
    }))
})
