/**
 * `npm run bench -- ladder` (and in `--full`; not in the default run): where
 * every microsecond of GET /api/public/v1/students goes. One server per rung
 * of bench/servers/ladder.ts (`RUNGS`): bare HttpApi answering the page's
 * bytes, then each piece of our request path added one at a time, up to the
 * real handler reading the page from the database, and last the API process
 * itself (`npm run start:api`). Every rung answers the same JSON (the API's
 * own answer, which the fixed-page rungs serve as bytes) to the same
 * requests with the same keys, runs with the API's Node flags, and has
 * bench/lib/HeapProbe.ts preloaded: around each round the scenario reads the
 * bytes the server allocated on V8's heap and its GC pauses.
 *
 * Its table (after the run's): per rung the CPU µs per request of the server
 * (the harness's measure) and the difference from the rung before, heap
 * allocated per request and its difference, GC ms per 1 000 requests,
 * throughput, p50, p99 and p99/p50; medians of the measured rounds.
 *
 * To look inside a rung: BENCH_LADDER_RUNGS=authentication,database measures
 * only those rungs (the API process still starts, as its answer is the page
 * the others serve), and BENCH_CPU_PROFILE=/tmp/prof (bench/lib/Processes.ts)
 * runs every rung with `--cpu-prof` into that directory (a profile per
 * process, named by its rung and written when the scenario stops it; the
 * rounds then cost more CPU than unprofiled ones).
 */
import { Duration, Effect } from "effect"
import { freePort } from "@school/runtime/Ports"
import type { TargetResult } from "../lib/Harness.ts"
import { HEAP_PROBE, LADDER, scriptCommand } from "../lib/Paths.ts"
import { benchError, type Server } from "../lib/Processes.ts"
import { httpTarget, type Scenario, type ScenarioTable, type Target } from "../lib/Scenario.ts"
import { type HeapFigures, median } from "../lib/Stats.ts"
import type { Rung } from "../servers/ladder.ts"

const PATH = "/api/public/v1/students?page=1&per_page=20"

/** The rungs measured, in order (set by `setup`; the table reads them). */
let rungs: ReadonlyArray<Rung> = []

const probe = (port: number, what: "start" | "stop") =>
  Effect.tryPromise({
    try: async (): Promise<unknown> => {
      const response = await fetch(`http://127.0.0.1:${port}/${what}`)
      if (response.status !== 200) throw new Error(`${response.status} ${await response.text()}`)
      return response.json()
    },
    catch: (error) => benchError(`the heap probe on port ${port} did not answer /${what}: ${String(error)}`)
  })

/** `target`, whose rounds also carry what the server's heap did meanwhile. */
const withHeap = (target: Target, heapPort: number): Target => ({
  ...target,
  round: (seconds) =>
    Effect.gen(function*() {
      yield* probe(heapPort, "start")
      const figures = yield* target.round(seconds)
      const heap = (yield* probe(heapPort, "stop")) as HeapFigures
      return { ...figures, heap }
    })
})

/** The API's answer to the scenario's request, once it serves (it answers 503 while it waits for its database). */
const firstPage = (api: Server, key: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 30_000
    while (true) {
      const { status, body } = yield* Effect.tryPromise({
        try: async () => {
          const response = await fetch(api.baseUrl + PATH, { headers: { authorization: `Bearer ${key}` } })
          return { status: response.status, body: await response.text() }
        },
        catch: (error) => benchError(`the API did not answer: ${String(error)}`)
      })
      if (status === 200) return body
      if (Date.now() > deadline) return yield* benchError(`the API answered ${status}: ${body.slice(0, 300)}`)
      yield* Effect.sleep(Duration.millis(200))
    }
  })

/**
 * Each rung is what it says: from `authentication` on, a request without a key is 401; from `validation` on, a
 * `per_page` out of range is 422; before them, both are the page (200).
 */
const checkRung = (rung: Rung, index: number, server: Server, key: string) =>
  Effect.gen(function*() {
    const status = (path: string, headers: Record<string, string>) =>
      Effect.tryPromise({
        try: async () => {
          const response = await fetch(server.baseUrl + path, { headers })
          await response.arrayBuffer()
          return response.status
        },
        catch: (error) => benchError(`ladder: rung ${rung.name} did not answer: ${String(error)}`)
      })
    const at = (name: string) => index >= rungs.findIndex((r) => r.name === name)
    const noKey = yield* status(PATH, {})
    const outOfRange = yield* status("/api/public/v1/students?per_page=1000", { authorization: `Bearer ${key}` })
    const expected = [at("authentication") ? 401 : 200, at("validation") ? 422 : 200]
    if (noKey !== expected[0] || outOfRange !== expected[1]) {
      return yield* benchError(
        `ladder: rung ${rung.name} answered ${noKey} without a key and ${outOfRange} to per_page=1000, not ${expected.join(" and ")}`
      )
    }
  })

const cell = (value: number | undefined, digits = 0, sign = false) =>
  value === undefined || !Number.isFinite(value)
    ? "n/a"
    : `${sign && value > 0 ? "+" : ""}${value.toFixed(digits)}`

const ladderTable = (targets: ReadonlyArray<TargetResult>): ScenarioTable => {
  const rows = targets.map((target) => {
    const perRequest = (pick: (heap: HeapFigures) => number) => {
      const values = target.rounds.flatMap((r) => r.heap === undefined || r.requests === 0 ? [] : [pick(r.heap) / r.requests])
      return values.length === 0 ? undefined : median(values)
    }
    return {
      rung: target.id,
      adds: rungs.find((r) => r.name === target.id)?.adds ?? target.label,
      cpuMicros: target.cpuPerRequest.server,
      allocatedBytes: perRequest((heap) => heap.allocatedBytes),
      gcMsPer1000: perRequest((heap) => heap.gcMs * 1000),
      rps: target.figures.rps,
      p50: target.figures.p50,
      p99: target.figures.p99
    }
  })
  const difference = (now: number | undefined, before: number | undefined) =>
    now === undefined || before === undefined ? undefined : now - before
  const full = rows.map((row, i) => {
    const previous = rows[i - 1]
    return {
      ...row,
      deltaMicros: difference(row.cpuMicros, previous?.cpuMicros),
      deltaBytes: difference(row.allocatedBytes, previous?.allocatedBytes),
      p99OverP50: row.p99 / row.p50
    }
  })
  const markdown = [
    "Ladder (`npm run bench -- ladder`, bench/servers/ladder.ts): GET /api/public/v1/students, one piece of the request path added per rung. " +
    "CPU µs per request of the server; heap: bytes allocated on V8's heap per request and GC pauses per 1 000 requests " +
    "(bench/lib/HeapProbe.ts); medians of the measured rounds.",
    "",
    "| # | rung | adds | CPU µs/req | Δ µs | heap kB/req | Δ kB | GC ms/1000 req | req/s | p50 ms | p99 ms | p99/p50 |",
    "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...full.map((row, i) =>
      `| ${i} | ${row.rung} | ${row.adds} | ${cell(row.cpuMicros)} | ${i === 0 ? "" : cell(row.deltaMicros, 0, true)} | ${
        cell(row.allocatedBytes === undefined ? undefined : row.allocatedBytes / 1000, 1)
      } | ${i === 0 ? "" : cell(row.deltaBytes === undefined ? undefined : row.deltaBytes / 1000, 1, true)} | ${
        cell(row.gcMsPer1000, 1)
      } | ${cell(row.rps)} | ${cell(row.p50, 2)} | ${cell(row.p99, 2)} | ${cell(row.p99OverP50, 1)} |`
    )
  ]
  const rounded = (value: number | undefined, digits: number) =>
    value === undefined || !Number.isFinite(value) ? null : Math.round(value * 10 ** digits) / 10 ** digits
  return {
    markdown,
    rows: full.map((row) => ({
      rung: row.rung,
      adds: row.adds,
      cpuMicrosPerRequest: rounded(row.cpuMicros, 0),
      deltaMicros: rounded(row.deltaMicros, 0),
      heapBytesPerRequest: rounded(row.allocatedBytes, 0),
      deltaHeapBytes: rounded(row.deltaBytes, 0),
      gcMsPer1000Requests: rounded(row.gcMsPer1000, 2),
      rps: rounded(row.rps, 0),
      p50: rounded(row.p50, 2),
      p99: rounded(row.p99, 2),
      p99OverP50: rounded(row.p99OverP50, 2)
    }))
  }
}

export const ladder: Scenario = {
  id: "ladder",
  title: "GET /students, the request path one piece at a time",
  datasets: ["10k"],
  sameBody: true,
  setup: (context) =>
    Effect.gen(function*() {
      // Loaded here, not at the harness's start: the server's module brings the API's.
      const { RUNGS } = yield* Effect.promise(() => import("../servers/ladder.ts"))
      rungs = RUNGS
      const data = context.dataset("10k")
      const { connections } = context.settings
      const load = { paths: [PATH], keys: data.keys }
      const api = scriptCommand("start:api")
      // Every rung runs with the API's Node flags (its GC settings), its environment and the probe.
      const nodeFlags = [...api.nodeFlags, "--import", HEAP_PROBE]
      const only = (process.env["BENCH_LADDER_RUNGS"] ?? "").split(",").map((name) => name.trim()).filter((name) => name !== "")
      const unknown = only.filter((name) => !RUNGS.some((rung) => rung.name === name))
      if (unknown.length > 0) return yield* benchError(`BENCH_LADDER_RUNGS: no rung ${unknown.join(", ")}`)
      const measured = (name: string) => only.length === 0 || only.includes(name)
      const started = new Map<string, { readonly server: Server; readonly heapPort: number }>()
      // The API process first: its answer is the page the fixed-page rungs serve, byte for byte.
      for (const rung of RUNGS.filter((r) => r.apiProcess)) {
        const heapPort = yield* freePort
        const server = yield* context.start.server(rung.name, api.main, {
          nodeFlags,
          readyPath: "/health/live",
          env: { ...api.env, BENCH_HEAP_PORT: String(heapPort) }
        })
        started.set(rung.name, { server, heapPort })
      }
      const apiRung = [...started.values()][0]
      if (apiRung === undefined) return yield* benchError("ladder: no rung is the API process")
      const bodyFile = yield* context.writeFile("ladder-page.json", yield* firstPage(apiRung.server, data.keys[0] ?? ""))
      for (const rung of RUNGS.filter((r) => !r.apiProcess && measured(r.name))) {
        const heapPort = yield* freePort
        const server = yield* context.start.server(rung.name, LADDER, {
          nodeFlags,
          env: {
            ...api.env,
            BENCH_RUNG: rung.name,
            BENCH_BODY_FILE: bodyFile,
            BENCH_SCHOOL_ID: String(data.schoolId),
            BENCH_HEAP_PORT: String(heapPort)
          }
        })
        started.set(rung.name, { server, heapPort })
      }
      for (const [index, rung] of RUNGS.entries()) {
        const found = started.get(rung.name)
        if (found !== undefined) yield* checkRung(rung, index, found.server, data.keys[0] ?? "")
      }
      return RUNGS.flatMap((rung) => {
        const found = started.get(rung.name)
        return found === undefined || !measured(rung.name) ? [] : [
          withHeap(
            httpTarget({ id: rung.name, label: rung.name, server: found.server, load, connections }),
            found.heapPort
          )
        ]
      })
    }),
  ratios: [],
  goals: () => [],
  table: ladderTable
}
