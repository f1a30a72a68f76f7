/**
 * `npm start` as a newcomer runs it (docs/operations.md "Commands"; README
 * "Run it"): from a fresh copy of the project in a `mktemp -d` directory
 * (mode 0700) and without DATABASE_URL, so on the embedded PostgreSQL. As
 * root, PostgreSQL runs as the `postgres` user, which cannot enter that
 * directory: the data goes where it can reach, and the banner says where.
 * The printed keys and DATABASE_URL work, and a SIGTERM stops everything
 * with exit 0.
 *
 * The copy is the working tree without node_modules, .git and .data; its
 * node_modules is what `npm install` makes of a clone: links to the
 * installed packages (here, the main checkout's) and to its own workspaces.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Sql from "@school/persistence/Sql"
import * as ChildProcesses from "@school/runtime/ChildProcesses"
import { freePort } from "@school/runtime/Ports"
import { Deferred, Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs/promises"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { rawClient, V1 } from "../support/Clients.ts"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const SKIPPED = new Set(["node_modules", ".git", ".data", Path.join("bench", "results", "logs")])
const isRoot = process.getuid?.() === 0

/** A copy of the working tree in a fresh 0700 directory (`mktemp -d`), removed with the scope. */
const cloneIntoPrivateDir = Effect.acquireRelease(
  Effect.promise(async () => {
    const parent = await Fs.mkdtemp(Path.join(Os.tmpdir(), "school-clone-"))
    await Fs.chmod(parent, 0o700)
    const clone = Path.join(parent, "school-service")
    await Fs.cp(ROOT, clone, {
      recursive: true,
      verbatimSymlinks: true,
      filter: (source) => !SKIPPED.has(Path.relative(ROOT, source))
    })
    // node_modules as `npm install` would make it: the installed packages, and links to the clone's own workspaces.
    const modules = Path.join(clone, "node_modules")
    await Fs.mkdir(modules)
    for (const entry of await Fs.readdir(Path.join(ROOT, "node_modules"))) {
      const source = Path.join(ROOT, "node_modules", entry)
      if (entry !== "@school") {
        await Fs.symlink(source, Path.join(modules, entry))
        continue
      }
      await Fs.mkdir(Path.join(modules, entry))
      for (const workspace of await Fs.readdir(source)) {
        // Relative links (../../libs/domain): inside the clone they reach the clone's workspaces.
        await Fs.symlink(await Fs.readlink(Path.join(source, workspace)), Path.join(modules, entry, workspace))
      }
    }
    return { parent, clone }
  }),
  ({ parent }) => Effect.promise(() => Fs.rm(parent, { recursive: true, force: true }))
)

/** The settings of docs/operations.md "Settings" and npm's own variables, so the test's environment cannot leak in. */
const cleanEnvironment = (env: Readonly<Record<string, string>>): NodeJS.ProcessEnv => {
  const base: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    const leaks = name.startsWith("npm_") || name === "INIT_CWD" ||
      /^(DATABASE_URL|DATA_DIR|PORT|HOST|LOG_LEVEL|LOG_FORMAT|IDEMPOTENCY_WAIT|WEBHOOK_.*|DISPATCHER_.*|DELIVERY_RETENTION|RATE_LIMIT_WINDOW|SESSION_TTL)$/
        .test(name)
    if (!leaks) base[name] = value
  }
  return { ...base, ...env }
}

const field = (output: string, label: string): string => {
  const match = new RegExp(`^\\s*${label}\\s+(\\S+)`, "m").exec(output)
  return match?.[1] ?? ""
}

const accepts = (url: string) =>
  Effect.promise(() =>
    new Promise<boolean>((resolve) => {
      const { hostname, port } = new URL(url)
      const socket = Net.connect({ host: hostname, port: Number(port) })
      socket.once("connect", () => (socket.destroy(), resolve(true)))
      socket.once("error", () => (socket.destroy(), resolve(false)))
    })
  )

describe("npm start from a fresh clone in a mktemp -d directory", () => {
  it.live("starts on the embedded PostgreSQL, prints working keys and DATABASE_URL, stops with 0 on SIGTERM", () =>
    Effect.gen(function*() {
      const { clone, parent } = yield* cloneIntoPrivateDir
      const port = yield* freePort
      let stdout = ""
      let stderr = ""
      const ready = yield* Deferred.make<void>()
      const npm = yield* ChildProcesses.spawn({
        name: "npm start",
        command: "npm",
        args: ["start"],
        cwd: clone,
        env: cleanEnvironment({ PORT: String(port), DISPATCHER_PORT: "0", LOG_FORMAT: "json" }),
        processGroup: true,
        stdout: {
          lines: (line) => {
            stdout += `${line}\n`
            if (line.includes("Ctrl-C stops everything")) Deferred.doneUnsafe(ready, Exit.void)
          }
        },
        stderr: { lines: (line) => (stderr += `${line}\n`) }
      })
      const started = yield* Effect.raceFirst(
        Deferred.await(ready).pipe(Effect.as(true)),
        npm.exited.pipe(Effect.as(false))
      ).pipe(Effect.timeoutOrElse({ duration: "150 seconds", orElse: () => Effect.succeed(false) }))
      assert.isTrue(started, `npm start did not come up:\n${stdout}\n${stderr}`)

      // Where the data went: in the project when the server's user can reach it; as root, not under the 0700 directory.
      const dataLine = /^\s*Database\s+embedded PostgreSQL, data in (\S+)/m.exec(stdout)
      assert.isNotNull(dataLine, stdout)
      const dataDir = Path.resolve(clone, dataLine?.[1] ?? "")
      yield* Effect.addFinalizer(() =>
        dataDir.startsWith(parent)
          ? Effect.void
          : Effect.promise(() => Fs.rm(Path.dirname(dataDir), { recursive: true, force: true }))
      )
      if (isRoot) {
        assert.isFalse(dataDir.startsWith(parent), stdout)
        assert.include(stdout, `cannot enter ${parent}`)
      } else {
        assert.strictEqual(dataDir, Path.join(clone, ".data", "postgres"))
      }
      assert.isTrue(yield* Effect.promise(() => Fs.access(Path.join(dataDir, "PG_VERSION")).then(() => true, () => false)))

      // The printed key works against the API it started.
      const response = yield* rawClient(`http://127.0.0.1:${port}`).get(`${V1}/students?per_page=2`, field(stdout, "Read key"))
      assert.strictEqual(response.status, 200, response.text)
      // The printed web panel address serves the panel.
      const panel = yield* Effect.promise(() => fetch(field(stdout, "Web panel")))
      assert.strictEqual(panel.status, 200)
      assert.match(panel.headers.get("content-type") ?? "", /^text\/html/)

      // The printed DATABASE_URL reaches the migrated, seeded database.
      const databaseUrl = field(stdout, "DATABASE_URL")
      assert.match(databaseUrl, /^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/postgres$/)
      const schools = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM schools`
      }).pipe(Effect.provide(Sql.layer({ url: databaseUrl, maxConnections: 1 })), Effect.orDie)
      assert.deepStrictEqual(schools, [{ n: 1 }])

      // SIGTERM (to npm, as a terminal or a supervisor would): everything stops, exit 0.
      npm.process.kill("SIGTERM")
      const exited = yield* npm.exited
      assert.deepStrictEqual(exited, { code: 0, signal: null }, stderr)
      assert.isFalse(yield* accepts(databaseUrl))
      assert.isFalse(yield* accepts(`http://127.0.0.1:${port}`))
    }), { timeout: 240_000 })
})
