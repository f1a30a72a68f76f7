/**
 * The results of a run: `bench/results/latest.json` (scenario → figures,
 * ratios, goals; plus the machine and the settings) and the same as a
 * Markdown table, which the run also prints.
 */
import type { Dataset } from "./Datasets.ts"
import type { ScenarioResult } from "./Harness.ts"
import type { MachineInfo, Placement } from "./Machine.ts"
import type { GoalResult, RunSettings } from "./Scenario.ts"

export interface RunReport {
  readonly startedAt: string
  readonly seconds: number
  readonly command: string
  /** The default run, `--full` (both write latest.*), or a partial one (named scenarios or --quick: partial.*). */
  readonly kind: "default" | "full" | "partial"
  readonly commit: string
  readonly machine: MachineInfo
  /** 1-minute load average when the run started and when it ended: other work on the machine shows here. */
  readonly loadAverage: { readonly start: number; readonly end: number }
  readonly placement: Placement
  readonly settings: RunSettings
  readonly database: {
    readonly origin: string
    readonly roundTripsCounted: boolean
    readonly datasets: ReadonlyArray<{ readonly name: string; readonly students: number; readonly loadSeconds: number }>
    readonly keysPerSchool: number
  }
  readonly scenarios: Readonly<Record<string, ScenarioResult>>
  /** Every goal of the run, the memory goal last. */
  readonly goals: ReadonlyArray<GoalResult & { readonly scenario: string }>
  readonly warnings: ReadonlyArray<string>
}

export const datasetSummary = (dataset: Dataset) => ({
  name: dataset.spec.name,
  students: dataset.spec.students,
  loadSeconds: Math.round(dataset.loadSeconds * 10) / 10
})

/** API peak RSS ≤ 135 MiB under the heaviest scenario of the run (the largest peak of the real API process). */
/** The API process's peak RSS goal, MiB. */
export const MEMORY_GOAL_MIB = 135

export const memoryGoal = (results: ReadonlyArray<ScenarioResult>): GoalResult & { readonly scenario: string } => {
  let worst: { scenario: string; mib: number } | undefined
  for (const result of results) {
    for (const target of result.targets) {
      const mib = target.figures.peakRssMiB
      if (target.api && mib !== undefined && (worst === undefined || mib > worst.mib)) {
        worst = { scenario: result.id, mib }
      }
    }
  }
  return {
    scenario: "memory",
    goal: `API peak RSS ≤ ${MEMORY_GOAL_MIB} MiB under the heaviest scenario of the run`,
    measured: worst === undefined ? "not measured" : `${worst.mib} MiB (${worst.scenario})`,
    pass: worst !== undefined && worst.mib <= MEMORY_GOAL_MIB
  }
}

const cell = (value: number | undefined, digits = 2) =>
  value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits)

export const markdown = (report: RunReport): string => {
  const { machine, settings } = report
  const lines: Array<string> = []
  lines.push(
    `Machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.kernel}. ` +
      `${report.placement.note}. PostgreSQL ${report.database.origin}. ` +
      `Load average (1 min) ${report.loadAverage.start.toFixed(1)} at start, ${report.loadAverage.end.toFixed(1)} at end. ` +
      `${settings.connections} connections, no pipelining; warm-up ${settings.warmupSeconds} s, then ${settings.rounds} interleaved rounds × ${settings.roundSeconds} s per target; medians. ` +
      `Commit ${report.commit}, ${report.startedAt}, ${Math.round(report.seconds)} s, ${
        report.kind === "default" ? "the default run" : report.kind === "full" ? "a --full run" : "a partial run"
      }${settings.quick ? " (QUICK smoke run, not for comparison)" : ""}.`
  )
  lines.push("")
  lines.push(
    "| scenario | target | req/s | p50 ms | p99 ms | DB round trips / req (alone · under load) | peak RSS MiB | CPU % target · PG · load gen · other | CPU µs / req target · PG | throughput vs anchor |"
  )
  lines.push("|---|---|---:|---:|---:|---:|---:|---|---|---|")
  for (const result of Object.values(report.scenarios)) {
    result.targets.forEach((target, i) => {
      const versus = result.ratios
        .filter((r) => r.subject === target.id)
        .map((r) => `${cell(r.throughput)}x ${result.targets.find((t) => t.id === r.anchor)?.label ?? r.anchor}`)
        .join(", ")
      const f = target.figures
      const cpu = [target.cpu.server, target.cpu.postgres, target.cpu.load, target.cpu.other].map((v) => cell(v, 0))
        .join(" · ")
      const cost = [target.cpuPerRequest.server, target.cpuPerRequest.postgres].map((v) => cell(v, 0)).join(" · ")
      lines.push(
        `| ${i === 0 ? result.title : ""} | ${target.label} | ${cell(f.rps, 0)} | ${cell(f.p50)} | ${cell(f.p99)} | ${
          cell(f.roundTrips)
        }${f.roundTripsUnderLoad === undefined ? "" : ` · ${cell(f.roundTripsUnderLoad)}`} | ${cell(f.peakRssMiB, 0)} | ${cpu} | ${cost} | ${versus} |`
      )
    })
  }
  for (const result of Object.values(report.scenarios)) {
    if (result.table === undefined) continue
    lines.push("")
    lines.push(...result.table.markdown)
  }
  if (report.goals.length > 0) {
    lines.push("")
    lines.push("| scenario | goal | measured | result |")
    lines.push("|---|---|---|---|")
    for (const goal of report.goals) {
      lines.push(`| ${goal.scenario} | ${goal.goal} | ${goal.measured} | ${goal.pass ? "PASS" : "**MISS**"} |`)
    }
  }
  if (report.warnings.length > 0) {
    lines.push("")
    for (const warning of report.warnings) lines.push(`- warning: ${warning}`)
  }
  return lines.join("\n") + "\n"
}
