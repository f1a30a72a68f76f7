/**
 * The Node flags the long-running processes (the API, the dispatcher) run
 * with, wherever they are started: `npm run start:api` and
 * `start:dispatcher` (package.json), `npm start`'s children
 * (apps/cli/src/start.ts), the container's commands (Dockerfile,
 * docker-compose.yml). test/ops/node-flags.test.ts holds them all to this
 * list.
 *
 * `--max-semi-space-size=8` (MiB): V8 lets the young generation grow to two
 * 32 MiB semi-spaces under load, and the old generation keeps what the
 * young one promoted meanwhile. Measured on GET /students (docs/performance.md
 * "Memory"), two interleaved runs each: peak RSS 357/351 MiB → 210/213 MiB,
 * throughput and CPU per request unchanged within the runs' spread (4 MiB:
 * 239/193 MiB and ~+8% CPU per request).
 */
export const PROCESS_NODE_FLAGS: ReadonlyArray<string> = ["--max-semi-space-size=8"]
