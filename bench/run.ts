/**
 * `npm run bench [-- [--full | scenario …] [--quick]]`: starts PostgreSQL
 * (DATABASE_URL, else the embedded one in a temporary directory), loads the
 * data sets the chosen scenarios need, runs each scenario (its targets
 * started, measured in interleaved rounds, stopped), then prints the table
 * and writes it with the JSON under bench/results/. Every process it started
 * is stopped at the end, on failure and on Ctrl-C too.
 *
 * The default run (the scenarios of `scenarios`, within 300 s) and a
 * `--full` run (those and every one of `fullOnly`) write
 * latest.json/latest.md, not --quick; a run of named scenarios or a quick one
 * writes partial.json/partial.md, so a smoke run never replaces the
 * published figures.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Option } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "@school/runtime/Ports"
import * as Database from "./lib/Database.ts"
import * as Datasets from "./lib/Datasets.ts"
import { runScenario, type ScenarioResult } from "./lib/Harness.ts"
import * as Machine from "./lib/Machine.ts"
import { buildBundles } from "../apps/cli/src/build.ts"
import { REPO_ROOT, RESULTS_DIR, scriptCommand } from "./lib/Paths.ts"
import * as Processes from "./lib/Processes.ts"
import * as Report from "./lib/Report.ts"
import type { DatasetName, RunSettings, ScenarioContext, Starters, Target } from "./lib/Scenario.ts"
import { median, type RoundFigures } from "./lib/Stats.ts"
import { fullOnly, scenarios } from "./scenarios/index.ts"

/** The default run's budget, seconds (bench/README.md): a goal row of its table. */
const DEFAULT_RUN_BUDGET = 300

const USAGE = `usage: npm run bench [-- [--full | scenario …] [--quick]]
  (none)     the default run (under ${DEFAULT_RUN_BUDGET} s): ${scenarios.map((s) => s.id).join(", ")}
             → bench/results/latest.*
  --full     every scenario: the default run's, then ${fullOnly.map((s) => s.id).join(", ")}
             → bench/results/latest.* (tens of minutes: journal-scale loads 10 million deliveries)
  scenario   run only these (any of the above) → bench/results/partial.*
  --quick    smoke run: short rounds, smaller large data sets → bench/results/partial.*
  env DATABASE_URL: use this server (a fresh database is created and dropped) instead of the embedded one`

const settingsFor = (quick: boolean): RunSettings =>
  quick
    ? { quick, connections: 32, warmupSeconds: 1, roundSeconds: 1, rounds: 3, largeStudents: 100_000 }
    : { quick, connections: 32, warmupSeconds: 1.5, roundSeconds: 2, rounds: 3, largeStudents: 1_000_000 }

const say = (line: string) => Effect.sync(() => process.stderr.write(`${line}\n`))

const commit = (): string => {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).trim()
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: REPO_ROOT, encoding: "utf8" })
    return dirty.trim() === "" ? head : `${head} (with uncommitted changes)`
  } catch {
    return "unknown"
  }
}

// Every process started adds an exit listener (libs/runtime/src/ChildProcesses.ts: killed if the harness exits);
// the ladder scenario runs 14 at once.
process.setMaxListeners(Math.max(process.getMaxListeners(), 32))

const program = Effect.gen(function*() {
  const args = process.argv.slice(2)
  if (args.includes("--help") || args.includes("-h")) {
    yield* say(USAGE)
    return
  }
  const quick = args.includes("--quick")
  const everything = args.includes("--full")
  const names = args.filter((arg) => !arg.startsWith("--"))
  const known = [...scenarios, ...fullOnly]
  const unknown = names.filter((name) => !known.some((s) => s.id === name))
  const badFlags = args.filter((arg) => arg.startsWith("--") && arg !== "--quick" && arg !== "--full")
  if (unknown.length > 0 || badFlags.length > 0) {
    return yield* Processes.benchError(`unknown ${[...unknown, ...badFlags].join(", ")}\n${USAGE}`)
  }
  if (everything && names.length > 0) {
    return yield* Processes.benchError(`--full runs every scenario: name scenarios without it\n${USAGE}`)
  }
  const chosen = everything ? known : names.length === 0 ? scenarios : known.filter((s) => names.includes(s.id))
  /** Which run this is: the default one (judged on its budget), `--full`, or a partial one (named or quick). */
  const kind = quick || names.length > 0 ? "partial" as const : everything ? "full" as const : "default" as const
  const settings = settingsFor(quick)
  const started = Date.now()
  const startedAt = new Date(started).toISOString()
  const loadAtStart = Os.loadavg()[0] ?? 0

  const machine = Machine.describeMachine()
  const placement = Machine.place(machine.cpus)
  yield* say(`machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}`)
  yield* say(placement.note)
  // The API and the dispatcher run as `npm run start:api` / `start:dispatcher` run them: their
  // bundles (apps/cli/src/build.ts), built from this checkout before anything starts.
  const buildMs = yield* Effect.tryPromise({
    try: () => buildBundles(),
    catch: (error) => Processes.benchError(`build failed: ${error instanceof Error ? error.message : String(error)}`)
  })
  yield* say(`built the API and dispatcher bundles in ${Math.round(buildMs)} ms`)
  const apiCommand = scriptCommand("start:api")

  const databaseUrl = Option.fromNullishOr(process.env["DATABASE_URL"]).pipe(Option.filter((url) => url.trim() !== ""))
  yield* say(Option.isSome(databaseUrl) ? "PostgreSQL: DATABASE_URL" : "PostgreSQL: embedded, temporary directory")
  const db = yield* Database.open({ databaseUrl, verbose: false })
  if (!db.statementsTracked) yield* say("pg_stat_statements unavailable: round trips are not counted")

  const needed = new Set(chosen.flatMap((s) => s.datasets))
  const specs: Record<DatasetName, Datasets.DatasetSpec> = {
    "10k": { name: "10k", students: 10_000, enrollments: true },
    "1M": { name: "1M", students: settings.largeStudents, enrollments: false }
  }
  const datasets = new Map<DatasetName, Datasets.Dataset>()
  for (const name of ["10k", "1M"] as const) {
    if (!needed.has(name)) continue
    yield* say(`loading ${specs[name].students} students (${name}) …`)
    const dataset = yield* Datasets.load(db, specs[name])
    datasets.set(name, dataset)
    yield* say(`  ${dataset.loadSeconds.toFixed(1)} s`)
  }
  yield* Datasets.settle(db)

  const scratch = yield* Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "school-bench-"))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  )
  const logDir = Path.join(RESULTS_DIR, "logs")

  const startersFor = (scenarioId: string): Starters => {
    const common = { placement, logDir }
    const serverWith = (nodeFlags: ReadonlyArray<string>, readyStatus?: number): Starters["server"] => (name, script, options) =>
      Effect.flatMap(freePort, (p) =>
        Processes.startServer({
          ...common,
          name: `${scenarioId}-${name}`,
          script,
          nodeFlags,
          port: p,
          readyPath: options?.readyPath ?? "/",
          ...(readyStatus === undefined ? {} : { readyStatus }),
          env: { DATABASE_URL: db.url, ...options?.env }
        }))
    return {
      // Ready once /health/ready answers 200: until its first database check, the API answers 503
      // (a scenario whose preflight came sooner than that failed on a busy machine).
      api: (env) =>
        serverWith(apiCommand.nodeFlags, 200)("api", apiCommand.main, {
          readyPath: "/health/ready",
          env: { ...apiCommand.env, ...env }
        }),
      server: (name, script, options) => serverWith(options?.nodeFlags ?? [])(name, script, options),
      loop: (name, script, env) =>
        Effect.map(
          Processes.startIpc({ ...common, name: `${scenarioId}-${name}`, script, env: { DATABASE_URL: db.url, ...env } }),
          (loop): Target => ({
            id: name,
            label: name,
            process: { pid: loop.pid, api: false, readyRssMiB: undefined },
            round: (seconds) => loop.ask<RoundFigures>({ seconds }),
            counted: (requests, seconds) =>
              Effect.map(loop.ask<{ readonly done: number }>({ requests, seconds }), (answer) => answer.done)
          })
        )
    }
  }

  const results: Array<ScenarioResult> = []
  for (const scenario of chosen) {
    const context: ScenarioContext = {
      settings,
      placement,
      db,
      dataset: (name) => {
        const found = datasets.get(name)
        if (found === undefined) throw new Error(`scenario ${scenario.id} did not ask for data set ${name}`)
        return found
      },
      start: startersFor(scenario.id),
      writeFile: (name, content) =>
        Effect.sync(() => {
          const file = Path.join(scratch, name)
          Fs.writeFileSync(file, content)
          return file
        })
    }
    results.push(yield* runScenario(scenario, context))
  }

  const warnings = results.flatMap((result) => result.warnings.map((w) => `${result.id}: ${w}`))
  // The sql-only anchor must issue the statements one API request issues. It
  // deliberately issues the naive pair: the API's batched form of the limiter's
  // statement (several requests' in one, docs/decisions.md "Batched
  // authentication") is not expected from it, and the API may issue fewer.
  const batched = (query: string) => query.includes("WITH ORDINALITY AS r(prefix, hash, at, ord)")
  for (const result of results) {
    const api = result.targets.find((t) => t.id === "api")
    const loop = result.targets.find((t) => t.id === "sql-only")
    if (api === undefined || loop === undefined || !db.statementsTracked) continue
    const queries = (statements: typeof api.statements) =>
      new Set(statements.map((s) => s.query).filter((query) => !batched(query)))
    const [fromApi, fromLoop] = [queries(api.statements), queries(loop.statements)]
    const differ = [...fromApi].some((q) => !fromLoop.has(q)) || [...fromLoop].some((q) => !fromApi.has(q))
    if (differ || (api.figures.roundTrips ?? 0) - (loop.figures.roundTrips ?? 0) > 0.05) {
      warnings.push(
        `${result.id}: sql-only does not issue the API's statements (API ${api.figures.roundTrips} per request, loop ${loop.figures.roundTrips}): bring bench/anchors/sql-only.ts in step`
      )
    }
  }
  const seconds = (Date.now() - started) / 1000
  const loadAtEnd = Os.loadavg()[0] ?? 0
  // Other people's work during each scenario's rounds, as measured around each round.
  for (const result of results) {
    const other = result.targets.flatMap((target) =>
      target.rounds.flatMap((r) => r.cpu.other === undefined ? [] : [r.cpu.other])
    )
    if (other.length > 0 && median(other) > 25) {
      warnings.push(
        `${result.id}: the machine was busy with other work during its rounds (median ${median(other)}% of a core, up to ${
          Math.max(...other)
        }%): its absolute figures are low and its ratios noisy; CPU µs per request holds up best`
      )
    }
  }
  if (kind === "default" && seconds > DEFAULT_RUN_BUDGET) {
    warnings.push(
      `the default run took ${Math.round(seconds)} s, over its ${DEFAULT_RUN_BUDGET / 60}-minute budget: shorten rounds or move a scenario to --full`
    )
  }
  const goals = [
    ...results.flatMap((result) => result.goals.map((goal) => ({ ...goal, scenario: result.id }))),
    ...(results.some((result) => result.targets.some((t) => t.api)) ? [Report.memoryGoal(results)] : []),
    // The budget is the default run's; its table says whether it held (the build and data sets included).
    ...(kind === "default"
      ? [{
        scenario: "run",
        goal: `the default run ≤ ${DEFAULT_RUN_BUDGET} s`,
        measured: `${Math.round(seconds)} s`,
        pass: seconds <= DEFAULT_RUN_BUDGET
      }]
      : [])
  ]
  const report: Report.RunReport = {
    startedAt,
    seconds,
    command: `npm run bench${args.length > 0 ? ` -- ${args.join(" ")}` : ""}`,
    kind,
    commit: commit(),
    machine,
    loadAverage: { start: loadAtStart, end: loadAtEnd },
    placement,
    settings,
    database: {
      origin: db.origin,
      roundTripsCounted: db.statementsTracked,
      datasets: [...datasets.values()].map(Report.datasetSummary),
      keysPerSchool: Datasets.KEYS_PER_SCHOOL
    },
    scenarios: Object.fromEntries(results.map((result) => [result.id, result])),
    goals,
    warnings
  }
  const table = Report.markdown(report)
  const base = kind === "partial" ? "partial" : "latest"
  Fs.mkdirSync(RESULTS_DIR, { recursive: true })
  Fs.writeFileSync(Path.join(RESULTS_DIR, `${base}.json`), JSON.stringify(report, null, 2) + "\n")
  Fs.writeFileSync(Path.join(RESULTS_DIR, `${base}.md`), table)
  process.stdout.write(`\n${table}`)
  yield* say(`\nwritten: bench/results/${base}.json and ${base}.md (${Math.round(report.seconds)} s); stopping everything …`)
}).pipe(
  Effect.onInterrupt(() => say("\ninterrupted: stopping everything the bench started …")),
  Effect.scoped,
  Effect.tapError((error) => say(`bench failed: ${error.message}`))
)

NodeRuntime.runMain(program)
