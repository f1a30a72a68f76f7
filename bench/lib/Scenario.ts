/**
 * What a scenario is (see bench/README.md "Adding a scenario"): a name, the
 * data sets it needs, a `setup` that starts its targets (the first one is the
 * subject, the others the anchors it is judged against) in the scenario's
 * scope, and `goals` judged on the medians. The harness does the rest:
 * preflight, warm-up, interleaved rounds, round-trip counting, peak RSS,
 * the table and the JSON.
 */
import { Effect, type Scope } from "effect"
import type { BenchDatabase } from "./Database.ts"
import type { TargetResult } from "./Harness.ts"
import type { Dataset } from "./Datasets.ts"
import { type HttpLoad, requestOf, runHttp } from "./Load.ts"
import type { Placement } from "./Machine.ts"
import { benchError, type BenchError, type Server } from "./Processes.ts"
import type { RoundFigures } from "./Stats.ts"

export type DatasetName = "10k" | "1M"

export interface RunSettings {
  readonly quick: boolean
  readonly connections: number
  readonly warmupSeconds: number
  readonly roundSeconds: number
  readonly rounds: number
  /** Students in the data set called "1M" (smaller in a quick run). */
  readonly largeStudents: number
}

/** Starting the processes a scenario measures, on the server core, each stopped with the scenario's scope. */
export interface Starters {
  /** The real API process (apps/api/src/main.ts) against the bench database, with its default settings. */
  readonly api: (env?: Record<string, string>) => Effect.Effect<Server, BenchError, Scope.Scope>
  /** Any HTTP server script of the bench (peer, anchors); gets DATABASE_URL, PORT, HOST and `env`; run with `nodeFlags`. */
  readonly server: (
    name: string,
    script: string,
    options?: {
      readonly env?: Record<string, string>
      readonly readyPath?: string
      readonly nodeFlags?: ReadonlyArray<string>
    }
  ) => Effect.Effect<Server, BenchError, Scope.Scope>
  /**
   * A load loop that is its own target (e.g. sql-only): a process on the
   * server core that, asked `{ seconds }` over IPC, runs a round and answers
   * its `RoundFigures`. Gets DATABASE_URL and `env`.
   */
  readonly loop: (name: string, script: string, env: Record<string, string>) => Effect.Effect<Target, BenchError, Scope.Scope>
}

export interface ScenarioContext {
  readonly settings: RunSettings
  readonly placement: Placement
  readonly db: BenchDatabase
  readonly dataset: (name: DatasetName) => Dataset
  readonly start: Starters
  /** Writes a file for a process to read (fixtures); returns its path. */
  readonly writeFile: (name: string, content: string) => Effect.Effect<string, BenchError>
}

export interface Target {
  /** Unique within the scenario, used in the JSON (e.g. "api", "peer"). */
  readonly id: string
  /** Shown in the table. */
  readonly label: string
  /** The process whose peak RSS is reported; `api`: it is the real API process (memory goal). */
  readonly process?: {
    readonly pid: number
    readonly api: boolean
    /** Resident set right after it answered its first request. */
    readonly readyRssMiB: number | undefined
  } | undefined
  /** One measured (or warm-up) round of `seconds`. */
  readonly round: (seconds: number) => Effect.Effect<RoundFigures, BenchError>
  /**
   * Up to `n` requests, stopping early once `seconds` have passed; every
   * request started is finished before this completes, and their number is
   * the answer. The database's statement counters around it give the round
   * trips per request (a timed round cannot: requests in flight when it stops
   * are cut off).
   */
  readonly counted: (n: number, seconds: number) => Effect.Effect<number, BenchError>
  /** Before the rounds: one request; must answer 200, with the subject's JSON when `sameBody`. */
  readonly probe?: (() => Effect.Effect<{ readonly status: number; readonly body: string }, BenchError>) | undefined
}

/** The medians of a target's rounds (ms, req/s), its round trips per request and its peak RSS. */
export interface Figures {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  /** Statements the database executed per request (undefined: not counted on this server). */
  readonly roundTrips: number | undefined
  /**
   * The same during the measured rounds, under the scenario's concurrency
   * (median of the rounds): lower than `roundTrips` where concurrent
   * requests share statements (the limiter's batches).
   */
  readonly roundTripsUnderLoad?: number | undefined
  /**
   * Database execution time per request, ms: the `total_exec_time` of every
   * statement of the counting pass over its requests (authentication and
   * rate limit included; undefined: not counted on this server).
   */
  readonly dbMs: number | undefined
  readonly peakRssMiB: number | undefined
  /**
   * CPU microseconds per request (median of the measured rounds) of the
   * process under test and of PostgreSQL (undefined: not measured).
   */
  readonly cpuUs: { readonly server: number | undefined; readonly postgres: number | undefined }
  /** Resident set when it had just started (for the memory analysis). */
  readonly readyRssMiB: number | undefined
  readonly non2xx: number
  readonly errors: number
}

export interface GoalResult {
  readonly goal: string
  readonly measured: string
  readonly pass: boolean
}

export interface Scenario {
  /** The CLI name: `npm run bench -- <id>`. */
  readonly id: string
  readonly title: string
  readonly datasets: ReadonlyArray<DatasetName>
  /** Every target must answer the subject's JSON in the preflight. */
  readonly sameBody: boolean
  /**
   * Rounds of its own instead of the run's (e.g. one long round): given the
   * run's settings, its warm-up, round length and number of rounds.
   */
  readonly rounds?: (settings: RunSettings) => {
    readonly warmupSeconds: number
    readonly roundSeconds: number
    readonly rounds: number
  }
  /** Starts the targets; the first is the subject. */
  readonly setup: (context: ScenarioContext) => Effect.Effect<ReadonlyArray<Target>, BenchError, Scope.Scope>
  /** Throughput ratios shown in the table: [subject, anchor] target ids. Default: the first target against each other. */
  readonly ratios?: ReadonlyArray<readonly [string, string]>
  /** The scenario's goals, judged on the medians. */
  readonly goals: (figures: ReadonlyMap<string, Figures>) => ReadonlyArray<GoalResult>
  /**
   * A table of its own, for figures the run's table has no column for
   * (e.g. the ladder's allocation per request): printed after the run's
   * table, and its rows in the JSON.
   */
  readonly table?: (targets: ReadonlyArray<TargetResult>) => ScenarioTable
}

/** A scenario's own table: Markdown lines, and the same figures for the JSON. */
export interface ScenarioTable {
  readonly markdown: ReadonlyArray<string>
  readonly rows: ReadonlyArray<Readonly<Record<string, string | number | null>>>
}

/** A target driven over HTTP by the load generator. */
export const httpTarget = (options: {
  readonly id: string
  readonly label: string
  readonly server: Server
  readonly load: Omit<HttpLoad, "baseUrl">
  readonly connections: number
  readonly api?: boolean
}): Target => {
  const load: HttpLoad = { ...options.load, baseUrl: options.server.baseUrl }
  const get = (i: number) =>
    Effect.tryPromise({
      try: async () => {
        const { path, ...init } = requestOf(load, i)
        const response = await fetch(load.baseUrl + path, init)
        return { status: response.status, body: await response.text() }
      },
      catch: (error) => benchError(`${options.label} did not answer: ${String(error)}`)
    })
  return {
    id: options.id,
    label: options.label,
    process: { pid: options.server.pid, api: options.api === true, readyRssMiB: options.server.readyRssMiB },
    round: (seconds) => runHttp(load, { connections: options.connections, seconds }),
    counted: (n, seconds) =>
      Effect.suspend(() => {
        const deadline = Date.now() + seconds * 1000
        let started = 0
        const worker = Effect.whileLoop({
          while: () => started < n && Date.now() < deadline,
          body: () => get(started++),
          step: () => {}
        })
        return Effect.all([worker, worker, worker, worker], { concurrency: "unbounded", discard: true }).pipe(
          Effect.map(() => started)
        )
      }),
    probe: () => get(0)
  }
}

/** `x / y`, or NaN when either is missing. */
export const ratio = (x: number | undefined, y: number | undefined): number =>
  x === undefined || y === undefined || y === 0 ? Number.NaN : x / y

export const times = (value: number): string => Number.isFinite(value) ? `${value.toFixed(2)}x` : "n/a"

export const ms = (value: number): string => Number.isFinite(value) ? `${value} ms` : "n/a"

/** Figures of a target the goals need; a missing one is a bug in the scenario. */
export const figuresOf = (figures: ReadonlyMap<string, Figures>, id: string): Figures => {
  const found = figures.get(id)
  if (found === undefined) throw new Error(`no figures for target ${id}`)
  return found
}

/** A figure in the goals' text: "n/a" when it is missing or not finite. */
export const num = (value: number | undefined, digits = 0): string =>
  value !== undefined && Number.isFinite(value) ? value.toFixed(digits) : "n/a"

/**
 * "CPU µs per request ≤ k × the anchor's": of the process under test
 * (`side` "server") or of PostgreSQL ("postgres"). A missing figure misses.
 */
export const cpuGoal = (
  figures: ReadonlyMap<string, Figures>,
  subject: string,
  anchor: string,
  atMost: number,
  side: "server" | "postgres",
  goal: string
): GoalResult => {
  const mine = figuresOf(figures, subject).cpuUs[side]
  const theirs = figuresOf(figures, anchor).cpuUs[side]
  const value = ratio(mine, theirs)
  return {
    goal,
    measured: `${num(mine)} vs ${num(theirs)} µs (${times(value)})`,
    pass: Number.isFinite(value) && value <= atMost
  }
}

/** "≥ k × anchor throughput". */
export const throughputGoal = (
  figures: ReadonlyMap<string, Figures>,
  subject: string,
  anchor: string,
  atLeast: number,
  label: string
): GoalResult => {
  const value = ratio(figuresOf(figures, subject).rps, figuresOf(figures, anchor).rps)
  return { goal: `≥ ${atLeast.toFixed(1)}x ${label} throughput`, measured: times(value), pass: value >= atLeast }
}
