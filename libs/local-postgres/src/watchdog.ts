/**
 * The embedded PostgreSQL's watchdog (see `EmbeddedPostgres.ts`): a detached
 * process that stops the server once the process that started it is gone,
 * however it went (SIGKILL, a test runner's time-out): fast shutdown first,
 * SIGKILL to its process group after ten seconds; then it removes a
 * throwaway data directory. It exits with the server.
 *
 *   node watchdog.ts <parent pid> <server pid> [<throwaway data directory>]
 *
 * Plain Node, no Effect: it starts with every embedded server and should
 * cost next to nothing.
 */
import * as Fs from "node:fs"

const [parent, server] = process.argv.slice(2, 4).map(Number)
const throwaway = process.argv[4]
const POLL_MS = 500
/** Polls with SIGINT (fast shutdown) before SIGKILL: 20 × 500 ms. */
const KILL_AFTER = 20

if (parent === undefined || server === undefined || !Number.isInteger(parent) || !Number.isInteger(server)) {
  process.stderr.write("usage: node watchdog.ts <parent pid> <server pid> [<throwaway data directory>]\n")
  process.exit(2)
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // Alive, but not ours to signal.
    return error instanceof Error && "code" in error && error.code === "EPERM"
  }
}

let stopping = 0
setInterval(() => {
  if (!alive(server)) {
    if (stopping > 0 && throwaway !== undefined) Fs.rmSync(throwaway, { recursive: true, force: true })
    process.exit(0)
  }
  if (alive(parent)) return
  stopping += 1
  try {
    // The server leads its own process group: SIGKILL takes its backends with it.
    if (stopping > KILL_AFTER) process.kill(-server, "SIGKILL")
    else process.kill(server, "SIGINT")
  } catch {
    // Gone in the meantime: the next poll sees it.
  }
}, POLL_MS)
