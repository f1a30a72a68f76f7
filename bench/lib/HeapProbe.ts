/**
 * How much a server under test allocates and how long its GC pauses last,
 * measured inside it: preloaded with `node --import <this file>` (the
 * `ladder` scenario preloads it into every rung, the real API process
 * included), it listens on 127.0.0.1:BENCH_HEAP_PORT, a plain `node:http`
 * server outside the measured stack, and answers
 *
 * - `GET /start`: starts a `v8.GCProfiler` and notes V8's heap in use;
 * - `GET /stop`: stops it and answers `HeapFigures` (bench/lib/Stats.ts) as
 *   JSON: the bytes allocated in between and the GCs' pauses.
 *
 * Allocated bytes: V8 frees heap memory only in a GC, so what was allocated
 * between two instants is the growth of the heap in use between GCs: for
 * each GC, its heap in use before it minus the heap in use after the
 * previous one (or at `/start`), plus the growth since the last GC until
 * `/stop`. This is V8's heap (JS objects, strings, small typed arrays): a
 * Buffer's bytes outside it (socket reads, large bodies) are not counted.
 * GC time is the profiler's `cost` of each GC, the pause of the main thread
 * (concurrent marking on helper threads is not in it).
 *
 * Verified against a known allocation, with a throwaway check: rung `bare`
 * of bench/servers/ladder.ts (API Node flags, 3 rounds of 20 000 requests,
 * 32 connections) with a second preload that wraps `http.Server`'s `emit`
 * and, on each "request", allocates `new Array(1280).fill(0)` (10 288 bytes
 * on V8's heap), against the same preload without the array: 26.6 kB per
 * request against 15.6 kB, i.e. +11.0 kB for the 10.3 kB allocated. The
 * probe reads the heap's growth, so it counts V8's own slack (about 7% here
 * with 10 kB objects) besides the objects: good for comparing rungs, a little
 * high in absolute terms.
 */
import { createServer } from "node:http"
import { GCProfiler, getHeapStatistics } from "node:v8"
import type { HeapFigures } from "./Stats.ts"

const used = () => getHeapStatistics().used_heap_size

const port = Number(process.env["BENCH_HEAP_PORT"] ?? "")

if (Number.isInteger(port) && port > 0) {
  let profiler: GCProfiler | undefined
  let base = 0

  const stop = (): HeapFigures => {
    const statistics = profiler?.stop().statistics ?? []
    profiler = undefined
    const end = used()
    let previous = base
    let allocatedBytes = 0
    let pauseMicros = 0
    let maxPauseMicros = 0
    let fullGcs = 0
    for (const gc of statistics) {
      allocatedBytes += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - previous)
      previous = gc.afterGC.heapStatistics.usedHeapSize
      pauseMicros += gc.cost
      maxPauseMicros = Math.max(maxPauseMicros, gc.cost)
      if (gc.gcType === "MarkSweepCompact") fullGcs++
    }
    allocatedBytes += Math.max(0, end - previous)
    return { allocatedBytes, gcMs: pauseMicros / 1000, gcs: statistics.length, fullGcs, maxPauseMs: maxPauseMicros / 1000 }
  }

  const server = createServer((request, response) => {
    const answer = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" })
      response.end(JSON.stringify(body))
    }
    if (request.url === "/start") {
      profiler?.stop()
      profiler = new GCProfiler()
      base = used()
      profiler.start()
      return answer(200, {})
    }
    if (request.url === "/stop") {
      return profiler === undefined ? answer(409, { error: "not started" }) : answer(200, stop())
    }
    return answer(404, { error: "GET /start or /stop" })
  })
  server.listen(port, "127.0.0.1")
  // The process under test decides when it ends.
  server.unref()
}
