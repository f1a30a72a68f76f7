/**
 * Runs one scenario: its targets are started, each answers one preflight
 * request (200, and the subject's JSON where the scenario asks for the same
 * job), each gets a warm-up round, then the measured rounds interleave the
 * targets (A B C A B C …) so a drifting machine affects every side alike.
 * Medians are reported. Then each target makes 100 requests (fewer if they
 * take over 3 s) with the database otherwise quiet: its statement counters
 * before and after give the round trips per request, and which statements
 * they were. The statements of each measured round, over its requests,
 * give the round trips per request under load too (where concurrent
 * requests share statements, lower than the counting pass's). Everything
 * the scenario started is stopped when it ends.
 */
import { Effect } from "effect"
import * as Cpu from "./Cpu.ts"
import type { CpuPerRequest, CpuShares } from "./Cpu.ts"
import * as Database from "./Database.ts"
import { benchError, type BenchError, peakRssMiB } from "./Processes.ts"
import {
  type Figures,
  type GoalResult,
  ratio,
  type Scenario,
  type ScenarioContext,
  type ScenarioTable,
  type Target
} from "./Scenario.ts"
import { median, round, type RoundFigures } from "./Stats.ts"

/** The counting pass that gives the round trips per request: this many requests, or fewer if they take longer than… */
const COUNTED_REQUESTS = 100
/** … this many seconds. */
const COUNTED_SECONDS = 3

/** A round, and the CPU each side used during it. */
export interface MeasuredRound extends RoundFigures {
  readonly cpu: CpuShares
  /** Holds up on a busy machine better than throughput does. */
  readonly cpuPerRequest: CpuPerRequest
  /** Statements the database executed during the round, per request answered. */
  readonly roundTrips: number | undefined
}

export interface StatementShare {
  readonly query: string
  readonly perRequest: number
  readonly meanMs: number
}

export interface TargetResult {
  readonly id: string
  readonly label: string
  /** The real API process (its peak RSS counts for the memory goal). */
  readonly api: boolean
  readonly figures: Figures
  /** Medians of the rounds' CPU shares and CPU per request. */
  readonly cpu: CpuShares
  readonly cpuPerRequest: CpuPerRequest
  readonly rounds: ReadonlyArray<MeasuredRound>
  /** What the database ran for this target in the counting pass, per request. */
  readonly statements: ReadonlyArray<StatementShare>
}

export interface RatioResult {
  readonly subject: string
  readonly anchor: string
  /** subject req/s ÷ anchor req/s */
  readonly throughput: number
  /** subject p99 ÷ anchor p99 */
  readonly p99: number
}

export interface ScenarioResult {
  readonly id: string
  readonly title: string
  readonly targets: ReadonlyArray<TargetResult>
  readonly ratios: ReadonlyArray<RatioResult>
  readonly goals: ReadonlyArray<GoalResult>
  readonly warnings: ReadonlyArray<string>
  /** Wall-clock seconds from the scenario's start to its last measurement (its processes stop after). */
  readonly seconds: number
  /** The scenario's own table (`Scenario.table`), printed after the run's. */
  readonly table?: ScenarioTable | undefined
}

const say = (line: string) => Effect.sync(() => process.stderr.write(`${line}\n`))

/** JSON with object keys sorted, so two servers' answers compare by content. */
const canonical = (text: string): string => {
  const sort = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(sort)
      : value !== null && typeof value === "object"
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, sort(v)]))
      : value
  try {
    return JSON.stringify(sort(JSON.parse(text)))
  } catch {
    return text
  }
}

const preflight = (scenario: Scenario, targets: ReadonlyArray<Target>) =>
  Effect.gen(function*() {
    let expected: string | undefined
    for (const target of targets) {
      if (target.probe === undefined) continue
      const { status, body } = yield* target.probe()
      if (status !== 200) {
        return yield* benchError(`${scenario.id}: ${target.label} answered ${status}: ${body.slice(0, 300)}`)
      }
      if (!scenario.sameBody) continue
      const content = canonical(body)
      if (expected === undefined) {
        expected = content
      } else if (content !== expected) {
        let at = 0
        while (at < content.length && content[at] === expected[at]) at++
        const from = Math.max(0, at - 120)
        return yield* benchError(
          `${scenario.id}: ${target.label} does not answer the same JSON as ${targets[0]?.label} ` +
            `(sorted keys; first difference at character ${at}):\n` +
            `  ${targets[0]?.label}: …${expected.slice(from, at + 200)}\n  ${target.label}: …${content.slice(from, at + 200)}`
        )
      }
    }
  })

const percent = (value: number | undefined) => value === undefined ? "?" : value.toFixed(0)

const roundLine = (target: Target, figures: MeasuredRound) =>
  `    ${target.label.padEnd(30)} ${figures.rps.toFixed(0).padStart(7)} req/s  p50 ${figures.p50.toFixed(2)} ms  p99 ${
    figures.p99.toFixed(2)
  } ms  CPU% server ${percent(figures.cpu.server)} pg ${percent(figures.cpu.postgres)} load ${percent(figures.cpu.load)} other ${
    percent(figures.cpu.other)
  }  µs/req server ${
    percent(figures.cpuPerRequest.server)
  } pg ${percent(figures.cpuPerRequest.postgres)}  statements/req ${figures.roundTrips?.toFixed(2) ?? "n/a"}${
    figures.heap === undefined || figures.requests === 0
      ? ""
      : `  heap ${(figures.heap.allocatedBytes / figures.requests / 1000).toFixed(1)} kB/req GC ${
        (figures.heap.gcMs / figures.requests * 1000).toFixed(1)
      } ms/1000 req`
  }${figures.non2xx + figures.errors > 0 ? `  NON-2XX ${figures.non2xx} ERRORS ${figures.errors}` : ""}`

export const runScenario = (
  scenario: Scenario,
  context: ScenarioContext
): Effect.Effect<ScenarioResult, BenchError> =>
  Effect.scoped(Effect.gen(function*() {
    const { db } = context
    const settings = scenario.rounds === undefined
      ? context.settings
      : { ...context.settings, ...scenario.rounds(context.settings) }
    const started = Date.now()
    yield* say(`\n${scenario.id}: ${scenario.title}`)
    const targets = yield* scenario.setup(context)
    yield* preflight(scenario, targets)

    yield* say(`  warm-up ${settings.warmupSeconds}s each`)
    for (const target of targets) yield* target.round(settings.warmupSeconds)

    const rounds = new Map<string, Array<MeasuredRound>>(targets.map((target) => [target.id, []]))
    for (let r = 1; r <= settings.rounds; r++) {
      yield* say(`  round ${r}/${settings.rounds}`)
      for (const target of targets) {
        yield* Database.quiesce(db)
        const statementsBefore = yield* Database.snapshot(db)
        const before = Cpu.sample(target.process?.pid, db.postmasterPid)
        const figures = yield* target.round(settings.roundSeconds)
        const after = Cpu.sample(target.process?.pid, db.postmasterPid)
        yield* Database.quiesce(db)
        const calls = Database.difference(statementsBefore, yield* Database.snapshot(db))
          .reduce((sum, statement) => sum + statement.calls, 0)
        const measured: MeasuredRound = {
          ...figures,
          ...Cpu.between(before, after, figures.seconds, figures.requests),
          roundTrips: db.statementsTracked && figures.requests > 0 ? round(calls / figures.requests) : undefined
        }
        rounds.get(target.id)?.push(measured)
        yield* say(roundLine(target, measured))
      }
    }

    const counted = new Map<string, { readonly requests: number; readonly ran: ReadonlyArray<Database.StatementStat> }>()
    for (const target of targets) {
      yield* Database.quiesce(db)
      const before = yield* Database.snapshot(db)
      const requests = yield* target.counted(COUNTED_REQUESTS, COUNTED_SECONDS)
      yield* Database.quiesce(db)
      counted.set(target.id, { requests, ran: Database.difference(before, yield* Database.snapshot(db)) })
    }

    const warnings: Array<string> = []
    const results: Array<TargetResult> = targets.map((target) => {
      const measured = rounds.get(target.id) ?? []
      const non2xx = measured.reduce((sum, r) => sum + r.non2xx, 0)
      const errors = measured.reduce((sum, r) => sum + r.errors, 0)
      if (non2xx + errors > 0) {
        const statuses: Record<string, number> = {}
        for (const r of measured) {
          for (const [status, count] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + count
        }
        warnings.push(`${target.label}: ${non2xx} non-2xx responses and ${errors} errors (${JSON.stringify(statuses)})`)
      }
      const { requests, ran } = counted.get(target.id) ?? { requests: 0, ran: [] }
      const medianOf = (pick: (round: MeasuredRound) => number | undefined) => {
        const values = measured.flatMap((r) => {
          const value = pick(r)
          return value === undefined ? [] : [value]
        })
        return values.length === 0 ? undefined : median(values)
      }
      const calls = ran.reduce((sum, statement) => sum + statement.calls, 0)
      return {
        id: target.id,
        label: target.label,
        api: target.process?.api === true,
        figures: {
          rps: round(median(measured.map((r) => r.rps)), 0),
          p50: round(median(measured.map((r) => r.p50))),
          p99: round(median(measured.map((r) => r.p99))),
          roundTrips: db.statementsTracked && requests > 0 ? round(calls / requests) : undefined,
          roundTripsUnderLoad: medianOf((r) => r.roundTrips),
          dbMs: db.statementsTracked && requests > 0
            ? round(ran.reduce((sum, statement) => sum + statement.totalMs, 0) / requests, 3)
            : undefined,
          peakRssMiB: target.process === undefined ? undefined : peakRssMiB(target.process.pid),
          cpuUs: {
            server: medianOf((r) => r.cpuPerRequest.server),
            postgres: medianOf((r) => r.cpuPerRequest.postgres)
          },
          readyRssMiB: target.process?.readyRssMiB,
          non2xx,
          errors
        },
        cpu: {
          server: medianOf((r) => r.cpu.server),
          postgres: medianOf((r) => r.cpu.postgres),
          load: medianOf((r) => r.cpu.load) ?? 0,
          other: medianOf((r) => r.cpu.other)
        },
        cpuPerRequest: {
          server: medianOf((r) => r.cpuPerRequest.server),
          postgres: medianOf((r) => r.cpuPerRequest.postgres)
        },
        rounds: measured,
        statements: ran.slice(0, 8).map((statement) => ({
          query: statement.query.replace(/\s+/g, " ").trim(),
          perRequest: round(statement.calls / Math.max(1, requests), 3),
          meanMs: round(statement.totalMs / statement.calls, 3)
        }))
      }
    })

    const figures = new Map(results.map((result) => [result.id, result.figures]))
    const [subject, ...anchors] = results
    const pairs = scenario.ratios ?? anchors.map((anchor) => [subject?.id ?? "", anchor.id] as const)
    const ratios = pairs.map(([s, a]) => {
      const x = figures.get(s)
      const y = figures.get(a)
      return {
        subject: s,
        anchor: a,
        throughput: round(ratio(x?.rps, y?.rps), 3),
        p99: round(ratio(x?.p99, y?.p99), 3)
      }
    })
    const seconds = round((Date.now() - started) / 1000, 1)
    yield* say(`  ${seconds} s`)
    return {
      id: scenario.id,
      title: scenario.title,
      targets: results,
      ratios,
      goals: scenario.goals(figures),
      warnings,
      seconds,
      ...(scenario.table === undefined ? {} : { table: scenario.table(results) })
    }
  }))
