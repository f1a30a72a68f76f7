/**
 * The machine a run measures on, and which cores each side of the
 * measurement gets (on a 2-core machine the server and the
 * load generator run on different cores, pinned with `taskset`).
 *
 * Placement on two or more cores: the process under test (API, peer, anchor
 * server, or the sql-only loop) alone on core 0; the harness, the load
 * generator it runs in-process (autocannon) and PostgreSQL on core 1. The
 * harness pins itself first, so PostgreSQL, which it starts, inherits core 1.
 */
import { execFileSync } from "node:child_process"
import * as Os from "node:os"

export interface MachineInfo {
  readonly cpus: number
  readonly cpuModel: string
  readonly memoryGiB: number
  readonly node: string
  readonly kernel: string
}

export interface Placement {
  /** `taskset` found and at least two cores: everything below is enforced. */
  readonly pinned: boolean
  /** The core of the process under test. */
  readonly serverCore: number | undefined
  /** The core of the harness, the load generator and PostgreSQL. */
  readonly loadCore: number | undefined
  /** One line for the output and the report. */
  readonly note: string
}

export const describeMachine = (): MachineInfo => ({
  cpus: Os.cpus().length,
  cpuModel: Os.cpus()[0]?.model.trim() ?? "unknown",
  memoryGiB: Math.round(Os.totalmem() / 2 ** 30 * 10) / 10,
  node: process.version,
  kernel: `${Os.type()} ${Os.release()}`
})

const hasTaskset = (): boolean => {
  try {
    execFileSync("taskset", ["-V"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/**
 * Decides the placement and pins this process (all its threads) to the load
 * core. Call before starting anything, so children inherit the right core.
 */
export const place = (cpus: number): Placement => {
  if (cpus < 2) {
    return { pinned: false, serverCore: undefined, loadCore: undefined, note: "one core: server and load generator share it (not pinned)" }
  }
  if (!hasTaskset()) {
    return {
      pinned: false,
      serverCore: undefined,
      loadCore: undefined,
      note: "taskset not found: server and load generator NOT pinned (figures are noisier)"
    }
  }
  execFileSync("taskset", ["-a", "-p", "-c", "1", String(process.pid)], { stdio: "ignore" })
  return {
    pinned: true,
    serverCore: 0,
    loadCore: 1,
    note: "pinned with taskset: process under test on core 0; load generator (autocannon), harness and PostgreSQL on core 1"
  }
}

/** The command line that runs `argv` on the server core (or as is when not pinned). */
export const onServerCore = (placement: Placement, argv: ReadonlyArray<string>): { command: string; args: Array<string> } => {
  const [command, ...args] = argv
  if (command === undefined) throw new Error("empty command line")
  return placement.pinned && placement.serverCore !== undefined
    ? { command: "taskset", args: ["-c", String(placement.serverCore), command, ...args] }
    : { command, args }
}
