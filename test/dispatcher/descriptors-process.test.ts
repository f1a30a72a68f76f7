/**
 * The dispatcher process and its descriptors (libs/runtime/src/Receiver.ts:
 * sockets bounded, failures on our side told apart; apps/dispatcher/src/Sender.ts:
 * such an attempt postponed, not counted):
 *
 * - under `ulimit -n` 160, two hundred receivers (their own ports) whose
 *   servers never close an idle keep-alive connection each get a delivery:
 *   every one is delivered on its first attempt, the connections left open
 *   stay within the client's bound, nothing fails with EMFILE, another
 *   school's delivery goes through after them, and /health/live answers;
 * - the descriptor limit lowered under the running process (`prlimit
 *   --pid`) so that no socket can be opened: an attempt meets EMFILE, is
 *   postponed as ours (no attempt journaled, the subscription still
 *   active), and once the limit is back the delivery goes out and is
 *   journaled as attempt 1; /health/live answers again.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import { entryPoints, httpGet, pollUntil } from "../support/Processes.ts"
import { connectionGauge, ok, startReceiver } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

/** Settings the tests' own environment must not pass on (docs/operations.md "Settings"). */
const SETTINGS = [
  "DATA_DIR",
  "DATABASE_STATEMENT_TIMEOUT",
  "DATABASE_ACQUIRE_TIMEOUT",
  "PORT",
  "LOG_LEVEL",
  "WEBHOOK_SECRET_KEY",
  "DISPATCHER_PER_SUBSCRIPTION",
  "DELIVERY_RETENTION",
  "SHUTDOWN_DELAY",
  "SHUTDOWN_TIMEOUT"
]

interface Running {
  readonly pid: number
  readonly port: number
  readonly log: () => string
}

/** The dispatcher process, started under `limit` descriptors (`prlimit`), until the scope closes. */
const dispatcherUnder = (databaseUrl: string, limit: number, env: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly running: Running; readonly child: ChildProcess }, Error>((resume) => {
      const base: NodeJS.ProcessEnv = { ...process.env }
      for (const name of SETTINGS) delete base[name]
      // prlimit execs the command: the child's pid is the dispatcher's.
      const child = spawn("prlimit", [`--nofile=${limit}:${limit}`, process.execPath, entryPoints.dispatcher], {
        env: {
          ...base,
          DATABASE_URL: databaseUrl,
          DISPATCHER_PORT: "0",
          HOST: "127.0.0.1",
          LOG_FORMAT: "json",
          WEBHOOK_ALLOW_INSECURE_URLS: "true",
          ...env
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let log = ""
      const onData = (chunk: Buffer) => {
        log += chunk.toString()
        const ready = /dispatcher ready[^\n]*"port":(\d+)/u.exec(log)
        if (ready !== null && child.pid !== undefined) {
          resume(Effect.succeed({ running: { pid: child.pid, port: Number(ready[1]), log: () => log }, child }))
        }
      }
      child.stdout.on("data", onData)
      child.stderr.on("data", onData)
      child.once("exit", (code) => resume(Effect.fail(new Error(`dispatcher exited early (${code}): ${log}`))))
      return Effect.sync(() => child.kill("SIGKILL"))
    }),
    ({ child }) =>
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  ).pipe(Effect.map(({ running }) => running))

/** Descriptors the process has open now. */
const openDescriptors = (pid: number): number => Fs.readdirSync(`/proc/${pid}/fd`).length

/** The descriptor the process would get next (the lowest free number): a limit at it allows no new one. */
const nextDescriptor = (pid: number): number => {
  const open = new Set(Fs.readdirSync(`/proc/${pid}/fd`).map(Number))
  let next = 0
  while (open.has(next)) next++
  return next
}

/** Sets the process's descriptor limit (soft:hard). */
const setLimit = (pid: number, soft: number, hard: number) =>
  Effect.sync(() => {
    const result = spawnSync("prlimit", [`--pid=${pid}`, `--nofile=${soft}:${hard}`])
    assert.strictEqual(result.status, 0, result.stderr.toString())
  })

const hasPrlimit = spawnSync("prlimit", ["--version"]).status === 0

layer(TestDatabase.layer, { excludeTestServices: true })("the dispatcher process and its descriptors", (it) => {
  it.effect.skipIf(!hasPrlimit)(
    "200 receivers that keep idle connections open: all delivered under ulimit -n 160, /health/live answers",
    () =>
      Effect.gen(function*() {
        const database = yield* TestDatabase
        const LIMIT = 160
        const { schoolId: hog } = yield* T.school("Many receivers school")
        const { schoolId: other } = yield* T.school("Other school")
        const gauge = connectionGauge()
        for (let i = 0; i < 200; i++) {
          const receiver = yield* startReceiver(() => ok, { keepAliveTimeout: 0, gauge })
          yield* T.subscription(hog, receiver.url)
        }
        const otherReceiver = yield* startReceiver()
        yield* T.subscription(other, otherReceiver.url)
        const dispatcher = yield* dispatcherUnder(database.url, LIMIT, {
          DISPATCHER_CONCURRENCY: "32",
          WEBHOOK_TIMEOUT: "5s",
          WEBHOOK_RETRY_DELAYS: "1m,5m,30m"
        })
        const base = `http://127.0.0.1:${dispatcher.port}`

        yield* T.leads(hog, 1)
        const delivered = yield* T.eventually(
          "every receiver's delivery delivered",
          T.deliveries(hog),
          (rows) => rows.length === 200 && rows.every((row) => row.status === "delivered"),
          30_000
        )
        assert.isTrue(delivered.every((row) => row.attempts === 1))
        assert.deepStrictEqual((yield* T.attempts(hog)).filter((row) => row.error !== null), [])
        // The client's bound for 32 attempts: 36 sockets; the receivers never close theirs.
        assert.isAtMost(gauge.open(), 36)
        assert.isBelow(openDescriptors(dispatcher.pid), LIMIT)
        assert.strictEqual((yield* httpGet(`${base}/health/live`)).status, 200)

        yield* T.leads(other, 1)
        yield* T.eventually("the other school's delivery", T.deliveries(other), (rows) => rows[0]?.status === "delivered")
        assert.notInclude(dispatcher.log(), "EMFILE")
        assert.strictEqual((yield* httpGet(`${base}/health/live`)).status, 200)
      }),
    60_000
  )

  it.effect.skipIf(!hasPrlimit)(
    "an attempt that meets EMFILE is postponed as ours, not journaled; delivered once descriptors are back",
    () =>
      Effect.gen(function*() {
        const database = yield* TestDatabase
        const { schoolId } = yield* T.school("Starved school")
        const receiver = yield* startReceiver()
        const sub = yield* T.subscription(schoolId, receiver.url)
        const dispatcher = yield* dispatcherUnder(database.url, 1024, {
          DISPATCHER_CONCURRENCY: "4",
          WEBHOOK_TIMEOUT: "2s",
          WEBHOOK_RETRY_DELAYS: "1m,5m,30m"
        })
        const base = `http://127.0.0.1:${dispatcher.port}`
        // Let the process settle (its pool connections open), then allow no new descriptor.
        yield* Effect.sleep("1500 millis")
        const starved = yield* Effect.exit(Effect.gen(function*() {
          yield* setLimit(dispatcher.pid, nextDescriptor(dispatcher.pid), 1024)
          yield* T.leads(schoolId, 1)
          return yield* T.eventually(
            "an attempt postponed for EMFILE",
            Effect.sync(() => dispatcher.log()),
            (log) => log.includes("EMFILE"),
            10_000
          )
        }))
        yield* setLimit(dispatcher.pid, 1024, 1024)
        if (Exit.isFailure(starved)) return yield* Effect.die(new Error(`no EMFILE seen: ${dispatcher.log()}`))
        assert.strictEqual(receiver.connections(), 0)
        assert.deepStrictEqual(yield* T.attempts(schoolId), [])

        const [delivery] = yield* T.eventually(
          "the delivery delivered once descriptors are back",
          T.deliveries(schoolId),
          (rows) => rows[0]?.status === "delivered",
          15_000
        )
        assert.strictEqual(delivery?.attempts, 1)
        const journal = yield* T.attempts(schoolId)
        assert.deepStrictEqual(journal.map((row) => [row.attempt, row.response_code, row.error]), [[1, 204, null]])
        assert.strictEqual(receiver.received.length, 1)
        assert.strictEqual(yield* T.subscriptionStatus(schoolId, sub.id), "active")
        const live = yield* pollUntil(`${base}/health/live`, (status) => status === 200, 5_000, 100)
        assert.strictEqual(live.status, 200)
      }),
    60_000
  )
})
