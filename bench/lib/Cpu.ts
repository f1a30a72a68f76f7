/**
 * CPU time of the processes in a measurement, from /proc (Linux), so a
 * round can say which side was the bottleneck: the process under test (one
 * core at most), PostgreSQL (every backend of the server), or the load
 * generator (this process); and how much went to other work on the machine.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"

const ticksPerSecond = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
  } catch {
    return 100
  }
})()

interface Stat {
  readonly ppid: number
  /** utime + stime */
  readonly seconds: number
  /** cutime + cstime: the children it has reaped. */
  readonly reapedSeconds: number
}

/** A process's parent and CPU seconds, or undefined when it is gone or /proc is absent. */
const stat = (pid: number): Stat | undefined => {
  try {
    const text = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return {
      ppid: Number(fields[1]),
      seconds: (Number(fields[11]) + Number(fields[12])) / ticksPerSecond,
      reapedSeconds: (Number(fields[13]) + Number(fields[14])) / ticksPerSecond
    }
  } catch {
    return undefined
  }
}

/** CPU seconds a process has used so far. */
export const processSeconds = (pid: number): number | undefined => stat(pid)?.seconds

/**
 * CPU seconds the PostgreSQL server has used so far: the postmaster, the
 * children it has reaped (backends that ended, parallel workers) and the
 * children alive now. It only grows, whatever connections and workers come
 * and go during a round.
 */
export const serverTreeSeconds = (postmaster: number): number | undefined => {
  const own = stat(postmaster)
  if (own === undefined) return undefined
  let total = own.seconds + own.reapedSeconds
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const child = stat(Number(entry))
    if (child !== undefined && child.ppid === postmaster) total += child.seconds
  }
  return total
}

/** CPU seconds this process (the harness and its in-process load generator) has used so far. */
export const selfSeconds = (): number => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1e6
}

/**
 * CPU seconds the whole machine has been busy so far (every core: user,
 * nice, system, irq, softirq, steal), from /proc/stat; undefined elsewhere.
 */
export const machineSeconds = (): number | undefined => {
  try {
    const line = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? ""
    const [, user, nice, system, _idle, _iowait, irq, softirq, steal] = line.trim().split(/\s+/).map(Number)
    return [user, nice, system, irq, softirq, steal].reduce((sum: number, v) => sum + (v ?? 0), 0) / ticksPerSecond
  } catch {
    return undefined
  }
}

/** Parent pid of a process (the postmaster of a backend), or undefined. */
export const parentOf = (pid: number): number | undefined => stat(pid)?.ppid

/** Shares of one core (%) used during a round. */
export interface CpuShares {
  /** The process under test. */
  readonly server: number | undefined
  readonly postgres: number | undefined
  /** The harness with its in-process load generator. */
  readonly load: number
  /** Everything else the machine ran meanwhile (other people's work on a shared machine). */
  readonly other: number | undefined
}

/** CPU microseconds per response: what a request costs each side. */
export interface CpuPerRequest {
  readonly server: number | undefined
  readonly postgres: number | undefined
}

/** Cumulative CPU seconds of each side at one instant. */
export interface Sample {
  readonly server: number | undefined
  readonly postgres: number | undefined
  readonly load: number
  readonly machine: number | undefined
}

export const sample = (serverPid: number | undefined, postmasterPid: number | undefined): Sample => ({
  server: serverPid === undefined ? undefined : processSeconds(serverPid),
  postgres: postmasterPid === undefined ? undefined : serverTreeSeconds(postmasterPid),
  load: selfSeconds(),
  machine: machineSeconds()
})

// A process of the tree can vanish between two reads (a backend that ended
// and is not reaped yet): a count that went down is unknown, not zero.
const delta = (before: number | undefined, after: number | undefined) =>
  before === undefined || after === undefined || after < before ? undefined : after - before

const rounded = (value: number | undefined) => value === undefined ? undefined : Math.round(value)

/** What each side used between two samples, over `seconds` and `requests`. */
export const between = (
  before: Sample,
  after: Sample,
  seconds: number,
  requests: number
): { readonly cpu: CpuShares; readonly cpuPerRequest: CpuPerRequest } => {
  const server = delta(before.server, after.server)
  const postgres = delta(before.postgres, after.postgres)
  const load = after.load - before.load
  const machine = delta(before.machine, after.machine)
  const known = (value: number | undefined, present: number | undefined) => present === undefined ? 0 : value
  const serverKnown = known(server, before.server)
  const postgresKnown = known(postgres, before.postgres)
  const other = machine === undefined || serverKnown === undefined || postgresKnown === undefined
    ? undefined
    : Math.max(0, machine - load - serverKnown - postgresKnown)
  const share = (used: number | undefined) => rounded(used === undefined ? undefined : used / seconds * 100)
  const perRequest = (used: number | undefined) =>
    rounded(used === undefined || requests === 0 ? undefined : used / requests * 1e6)
  return {
    cpu: { server: share(server), postgres: share(postgres), load: share(load) ?? 0, other: share(other) },
    cpuPerRequest: { server: perRequest(server), postgres: perRequest(postgres) }
  }
}
