/**
 * The Node flags each long-running process (the API, the dispatcher) runs
 * with, and the environment both run in, wherever they are started:
 * `npm run start:api` and `start:dispatcher` (package.json), `npm start`'s
 * children (apps/cli/src/start.ts), the container's commands and its `ENV`
 * (Dockerfile, docker-compose.yml). test/ops/node-flags.test.ts holds them
 * all to this record; test/processes/start.test.ts reads `npm start`'s
 * children's from /proc.
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
 * `--heap-growing-percent=50`: after a full collection V8 lets the old generation grow to a
 * multiple of what survived before it collects again, and under load it picks about 2.3x: a
 * live heap of ~39 MiB was allowed to reach ~100 MiB (`--trace-gc`, docs/performance.md
 * "Memory"). 50 makes that 1.5x. The flag bounds nothing: a heap that needs more memory still
 * gets it, unlike `--max-old-space-size`. Its price is CPU: the lower the share, the more often
 * full collections come under load, and on one core their concurrent marking competes with
 * the requests. The API ran with 30 (1.3x) while glibc's arenas were not capped: 50 then let
 * the scale scenario reach 155 MiB against 149 with 30, and 30 cost about 15% of GET /students'
 * throughput against none. With `MALLOC_ARENA_MAX=2` (below) 50 fits: from the bundles, two
 * interleaved runs each, 30 → 50, peak RSS in `scale` 120, 120.4 → 127.0, 125.1 MiB, the card
 * 116, 115 → 119, 118 and GET /students 118, 114 → 117, 116; CPU per request of the card 413,
 * 427 → 379, 377 µs and of GET /students 604, 618 → 572, 558 (docs/performance.md "Memory").
 * 8 MiB semi-spaces with 50 gave the same CPU and 6–15 MiB more (the flood's peak 130.9).
 *
 * The dispatcher runs with 50: its peak under the throughput scenario is 129–131 MiB with it
 * (123–127 with 30), and 30 cost it throughput that 50 does not: 0.98x, 0.99x, 0.92x of
 * graphile-worker in three runs with 30, 1.07x and 1.06x in two with 50, alternated, from a
 * fresh clone (docs/performance.md "Webhook dispatcher").
 */
export const NODE_FLAGS: { readonly api: ReadonlyArray<string>; readonly dispatcher: ReadonlyArray<string> } = {
  api: ["--max-semi-space-size=4", "--heap-growing-percent=50"],
  dispatcher: ["--max-semi-space-size=8", "--heap-growing-percent=50"]
}

/**
 * The environment both processes start in: what is read once, at process start, by the C
 * library rather than by Node.
 *
 * `MALLOC_ARENA_MAX=2`: glibc's malloc gives each thread that allocates while another holds
 * the main arena an arena of its own, up to 8 per core, and keeps each arena's freed memory for
 * reuse. A Node process has more threads than its event loop (V8's GC helpers, libuv's pool), so
 * its RSS holds several arenas' worth of free memory. Two arenas cap that. Measured from the
 * bundles (docs/performance.md "Memory"), two interleaved runs each, peak RSS without → with:
 * the API in `scale` 129.5, 131.6 → 125.8, 120.3 MiB; in `student-card` 126, 125 → 118, 120; under
 * the failed-auth flood 119, 129 → 119, 121; the dispatcher under its throughput load 112.4, 113.1
 * → 108.7, 111. CPU per request and the dispatcher's throughput against graphile-worker (1.04x,
 * 1.01x → 0.96x, 1.03x) the same within the runs' spread. No effect on musl (an Alpine image) or
 * another malloc: it is glibc's setting.
 */
export const PROCESS_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" }
