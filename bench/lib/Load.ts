/**
 * The load generator: autocannon, in the harness process (pinned to the load
 * core), a fixed number of connections, no pipelining. Each request takes the
 * next path and the next key in turn, so a scenario can spread requests over
 * many students and many keys. Latencies are recorded from autocannon's
 * per-response events at full precision.
 */
import autocannon from "autocannon"
import { Effect } from "effect"
import { LatencyRecorder, type RoundFigures } from "./Stats.ts"

export interface HttpLoad {
  readonly baseUrl: string
  /** Request paths (with query), taken in turn. */
  readonly paths: ReadonlyArray<string>
  /** Whole API keys sent as `Authorization: Bearer …`, taken in turn; none: no header. */
  readonly keys: ReadonlyArray<string>
  /** Default GET. */
  readonly method?: "GET" | "POST" | undefined
  /** A JSON body sent with every request (as `application/json`). */
  readonly body?: string | undefined
  /** More headers for the i-th request of a round (e.g. a fresh `Idempotency-Key`). */
  readonly headers?: ((i: number) => Record<string, string>) | undefined
}

/** The method, headers and body of the i-th request of `load` (the path and key are taken in turn). */
export const requestOf = (load: HttpLoad, i: number) => {
  const key = load.keys.length === 0 ? undefined : load.keys[i % load.keys.length]
  return {
    method: load.method ?? "GET",
    path: load.paths[i % load.paths.length] ?? "/",
    headers: {
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...(load.body === undefined ? {} : { "content-type": "application/json" }),
      ...load.headers?.(i)
    },
    ...(load.body === undefined ? {} : { body: load.body })
  }
}

export interface LoadOptions {
  readonly connections: number
  readonly seconds: number
  /** Requests per second over all connections (an open load); none: as fast as answered. */
  readonly rate?: number | undefined
}

/** One round of `seconds` against `load`. */
export const runHttp = (load: HttpLoad, options: LoadOptions): Effect.Effect<RoundFigures> =>
  Effect.callback<RoundFigures>((resume) => {
    const recorder = new LatencyRecorder()
    const statuses: Record<string, number> = {}
    let non2xx = 0
    let next = 0
    const instance = autocannon({
      url: load.baseUrl,
      connections: options.connections,
      pipelining: 1,
      duration: options.seconds,
      ...(options.rate === undefined ? {} : { overallRate: options.rate }),
      requests: [{
        method: load.method ?? "GET",
        path: load.paths[0] ?? "/",
        setupRequest: (request) => ({ ...request, ...requestOf(load, next++) })
      }]
    }, (error, result) => {
      if (error !== null && error !== undefined) {
        resume(Effect.die(error))
        return
      }
      const seconds = result.duration
      resume(Effect.succeed({
        requests: recorder.count,
        seconds,
        rps: seconds > 0 ? recorder.count / seconds : 0,
        ...recorder.percentiles(),
        non2xx,
        errors: result.errors,
        statuses
      }))
    })
    instance.on("response", (_client, status, _bytes, ms) => {
      recorder.add(ms)
      statuses[status] = (statuses[status] ?? 0) + 1
      if (status < 200 || status > 299) non2xx++
    })
    return Effect.sync(() => instance.stop())
  })
