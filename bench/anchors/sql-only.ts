/**
 * The `sql-only` anchor: the statements one GET /students executes
 * (the rate limiter's statement, which looks the key up by prefix and counts
 * the request, then the page with its total), issued through the same
 * repositories, driver and pool size as the API, from a bare loop with the
 * same concurrency as the load generator's connections, no HTTP. What the
 * database allows this workload on this machine.
 *
 * Keep it in step with the request path: when the API's authentication or
 * rate limit changes its statements, change them here (the harness warns
 * when the API's round trips per request differ from this loop's).
 *
 * Driven over the Node IPC channel: `{ seconds }` runs one round and answers
 * with its figures; `{ requests, seconds }` runs that many (fewer if the
 * seconds run out first) and answers `{ done }`. Env: DATABASE_URL, BENCH_KEYS_FILE (JSON array of keys),
 * BENCH_CONCURRENCY.
 */
import { Effect, Layer, ManagedRuntime, Option } from "effect"
import { readFileSync } from "node:fs"
import { ApiKey, RateLimit } from "@school/domain"
import { RateLimits } from "@school/persistence/RateLimits"
import * as Sql from "@school/persistence/Sql"
import { Students } from "@school/persistence/Students"
import { LatencyRecorder, type RoundFigures } from "../lib/Stats.ts"

const keys: ReadonlyArray<string> = JSON.parse(readFileSync(process.env["BENCH_KEYS_FILE"] ?? "", "utf8"))
const concurrency = Number(process.env["BENCH_CONCURRENCY"] ?? 32)

const runtime = ManagedRuntime.make(
  Layer.mergeAll(RateLimits.layer, Students.layer).pipe(
    Layer.provide(Sql.layer({ url: process.env["DATABASE_URL"] ?? "", applicationName: "school-bench-sql-only" }))
  )
)

/** The API's default window (RATE_LIMIT_WINDOW). */
const limit = { window: RateLimit.WINDOW }

/** One GET /students worth of statements. */
const makeRequest = Effect.gen(function*() {
  const rateLimits = yield* RateLimits
  const students = yield* Students
  return (key: string) =>
    Effect.gen(function*() {
      const parsed = ApiKey.parseApiKey(key)
      if (Option.isNone(parsed)) return false
      const admitted = yield* rateLimits.admit(parsed.value.prefix, ApiKey.hashSecret(parsed.value.secret), limit)
      if (Option.isNone(admitted) || admitted.value.outcome._tag !== "Accepted") return false
      yield* students.list(admitted.value.key.school_id, { page: { page: 1, perPage: 20 } })
      return true
    })
})

const round = (seconds: number) =>
  Effect.gen(function*() {
    const request = yield* makeRequest
    const recorder = new LatencyRecorder()
    let next = 0
    let failures = 0
    const started = performance.now()
    const deadline = started + seconds * 1000
    const worker = Effect.gen(function*() {
      while (performance.now() < deadline) {
        const key = keys[next++ % keys.length] ?? ""
        const t0 = performance.now()
        const ok = yield* request(key)
        recorder.add(performance.now() - t0)
        if (!ok) failures++
      }
    })
    yield* Effect.all(Array.from({ length: concurrency }, () => worker), { concurrency: "unbounded" })
    const elapsed = (performance.now() - started) / 1000
    return {
      requests: recorder.count,
      seconds: elapsed,
      rps: recorder.count / elapsed,
      ...recorder.percentiles(),
      non2xx: failures,
      errors: 0,
      statuses: { ok: recorder.count - failures, failed: failures }
    } satisfies RoundFigures
  })

const counted = (n: number, seconds: number) =>
  Effect.gen(function*() {
    const request = yield* makeRequest
    const deadline = performance.now() + seconds * 1000
    let done = 0
    while (done < n && performance.now() < deadline) {
      yield* request(keys[done % keys.length] ?? "")
      done++
    }
    return { done }
  })

type Message = { readonly seconds: number; readonly requests?: number }

process.on("message", (message: Message) => {
  const work: Effect.Effect<object, never, RateLimits | Students> = message.requests === undefined
    ? round(message.seconds)
    : counted(message.requests, message.seconds)
  runtime.runPromise(work).then(
    (answer) => process.send?.(answer),
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
})

const shutdown = () => {
  void runtime.dispose().then(() => process.exit(0))
}
process.once("SIGTERM", shutdown)
process.once("SIGINT", shutdown)
// Connect the pool before the first round, then say so.
runtime.runPromise(Effect.flatMap(makeRequest, (request) => request(keys[0] ?? ""))).then(() => process.send?.({ ready: true }), (error) => {
  console.error(error)
  process.exit(1)
})
