/**
 * Owns asking whether a process is alive, for the embedded PostgreSQL's
 * `postmaster.pid` and its watchdog. Plain Node: the watchdog loads nothing
 * else.
 */

/** Whether `pid` runs, ours to signal or not (EPERM: it runs as another user). */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error instanceof Error && "code" in error && error.code === "EPERM"
  }
}
