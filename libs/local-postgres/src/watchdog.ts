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
import { isAlive } from "./Pids.ts"

const [parent, server] = process.argv.slice(2, 4).map(Number)
const throwaway = process.argv[4]
const POLL_MS = 500
/** Polls with SIGINT (fast shutdown) before SIGKILL: 20 × 500 ms. */
const KILL_AFTER = 20

if (parent === undefined || server === undefined || !Number.isInteger(parent) || !Number.isInteger(server)) {
  process.stderr.write("usage: node watchdog.ts <parent pid> <server pid> [<throwaway data directory>]\n")
  process.exit(2)
}

let stopping = 0
setInterval(() => {
  if (!isAlive(server)) {
    if (stopping > 0 && throwaway !== undefined) Fs.rmSync(throwaway, { recursive: true, force: true })
    process.exit(0)
  }
  if (isAlive(parent)) return
  stopping += 1
  try {
    // The server leads its own process group: SIGKILL takes its backends with it.
    if (stopping > KILL_AFTER) process.kill(-server, "SIGKILL")
    else process.kill(server, "SIGINT")
  } catch {
    // Gone in the meantime: the next poll sees it.
  }
}, POLL_MS)
