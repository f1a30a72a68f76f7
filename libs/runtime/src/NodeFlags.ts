/**
 * The Node flags each long-running process (the API, the dispatcher) runs
 * with, wherever it is started: `npm run start:api` and
 * `start:dispatcher` (package.json), `npm start`'s children
 * (apps/cli/src/start.ts), the container's commands (Dockerfile,
 * docker-compose.yml). test/ops/node-flags.test.ts holds them all to this
 * record.
 *
 * `--max-semi-space-size` (MiB; 4 for the API, 8 for the dispatcher): V8
 * lets the young generation grow to two 32 MiB semi-spaces under load, and
 * the old generation keeps what the young one promoted meanwhile. Measured
 * on GET /students (docs/performance.md "Memory"), two interleaved runs
 * each: peak RSS 357/351 MiB → 210/213 MiB with 8, throughput and CPU per
 * request unchanged within the runs' spread (4 MiB then: 239/193 MiB and
 * ~+8% CPU per request). The API's budget is 135 MiB, and with 8 it stood
 * at 135.6 MiB (VmHWM) as soon as it was ready, before any request: building
 * its routes and documents fills the young generation. With 4 that is 122.1
 * (RSS after start 120 → 106 MiB), and under load, since the request path
 * allocates less, 129 (GET /students) and 134 MiB (the failed-auth flood).
 *
 * `--heap-growing-percent=30`: after a full collection V8 lets the old generation grow to a
 * multiple of what survived before it collects again, and under load it picks about 2.3x: a
 * live heap of ~39 MiB was allowed to reach ~100 MiB (`--trace-gc`, docs/performance.md
 * "Memory"). 30 makes that 1.3x. The flag bounds nothing: a heap that needs more memory still
 * gets it, unlike `--max-old-space-size`. Its price is CPU: full collections come every ~0.4 s
 * under load instead of every ~6 s, and on one core their concurrent marking competes with the
 * requests. Measured on GET /students from the bundle, four interleaved runs each: peak RSS
 * 135 MiB in every run against 186–211 without; throughput 682–1072 req/s (median 862) against
 * 872–1172 (median 1011), about 15% less. 50 (1.5x) cost nothing measurable but let the scale
 * scenario reach 155 MiB, 40 reached 151, 30 reached 149 (one run each): 30 is the largest that keeps every
 * scenario under the 150 MiB budget.
 *
 * The dispatcher runs with 50: its peak under the throughput scenario is 129–131 MiB with it
 * (123–127 with 30), and 30 cost it throughput that 50 does not: 0.98x, 0.99x, 0.92x of
 * graphile-worker in three runs with 30, 1.07x and 1.06x in two with 50, alternated, from a
 * fresh clone (docs/performance.md "Webhook dispatcher").
 */
export const NODE_FLAGS: { readonly api: ReadonlyArray<string>; readonly dispatcher: ReadonlyArray<string> } = {
  api: ["--max-semi-space-size=4", "--heap-growing-percent=30"],
  dispatcher: ["--max-semi-space-size=8", "--heap-growing-percent=50"]
}
