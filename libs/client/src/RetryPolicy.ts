/**
 * When the client repeats a request, and how long it waits first
 * (docs/integrators.md "Limits"):
 *
 * - what is repeated: a 429, a 408, a 5xx from the service or its proxy
 *   (500, 502, 503, 504), and a request that got no answer at all (the
 *   connection was refused, reset or timed out). Anything else is the
 *   answer.
 * - how long: at least `Retry-After` when the answer carries one; doubling
 *   the previous pause on each repeat of the same call, from `baseDelay`,
 *   bounded by `maxDelay` (the server's `Retry-After` wins over the bound:
 *   a request sent earlier than it says is refused again).
 * - how often: at most `maxAttempts` attempts per call, the first included.
 *   After the last, the call ends with the last answer (a 429 decodes to
 *   `RateLimitExceeded` like any other error) or the last transport error.
 *
 * `nextPause` is the rule as a pure function (property-tested);
 * `schedule` is that rule as an Effect `Schedule` over the answers.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Headers from "effect/http/Headers"
import * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientResponse from "effect/http/HttpClientResponse"

export interface RetryOptions {
  /** Attempts per call, the first included (default 5; 1 means never repeat). */
  readonly maxAttempts?: number
  /** The first pause when the answer names none (default 1 second). */
  readonly baseDelay?: Duration.Input
  /** The longest pause the doubling reaches (default 60 seconds). */
  readonly maxDelay?: Duration.Input
  /** Called before each pause: which attempt comes next, why, and how long the client waits. */
  readonly onRetry?: (retry: RetryEvent) => void
}

export interface RetryEvent {
  /** The attempt about to be made (2 for the first repeat). */
  readonly attempt: number
  /** The status that is repeated, or undefined when there was no answer. */
  readonly status: number | undefined
  /** The `Retry-After` of that answer in milliseconds, if it had one. */
  readonly retryAfterMs: number | undefined
  /** The pause before the attempt. */
  readonly pauseMs: number
  readonly method: string
  readonly url: string
}

export interface ResolvedRetryOptions {
  readonly maxAttempts: number
  readonly baseDelayMs: number
  readonly maxDelayMs: number
}

export const defaults: ResolvedRetryOptions = { maxAttempts: 5, baseDelayMs: 1_000, maxDelayMs: 60_000 }

export const resolve = (options: RetryOptions = {}): ResolvedRetryOptions => ({
  maxAttempts: Math.max(1, Math.floor(options.maxAttempts ?? defaults.maxAttempts)),
  baseDelayMs: options.baseDelay === undefined ? defaults.baseDelayMs : Duration.toMillis(Duration.fromInputUnsafe(options.baseDelay)),
  maxDelayMs: options.maxDelay === undefined ? defaults.maxDelayMs : Duration.toMillis(Duration.fromInputUnsafe(options.maxDelay))
})

/**
 * The pause before the next attempt: `baseDelay` the first time, twice the
 * previous pause after that, never above `maxDelay`; and never below the
 * answer's `Retry-After` (docs/integrators.md "Limits": "If 429 recurs,
 * lengthen the pause, e.g. double it, with a bounded number of attempts").
 */
export const nextPause = (
  previousMs: number | undefined,
  retryAfterMs: number | undefined,
  options: ResolvedRetryOptions
): number => {
  const doubled = previousMs === undefined ? options.baseDelayMs : 2 * previousMs
  return Math.max(retryAfterMs ?? 0, Math.min(options.maxDelayMs, doubled))
}

/** An answer the client repeats: 408, 429, 500, 502, 503, 504. */
export const isRepeatedStatus = (status: number): boolean =>
  status === 408 || status === 429 || status === 500 || status === 502 || status === 503 || status === 504

/** An answer that is repeated, with its body already read (so the connection is free while the client waits). */
export class RepeatableAnswer {
  readonly _tag = "RepeatableAnswer"
  readonly response: HttpClientResponse.HttpClientResponse
  readonly body: Uint8Array
  constructor(response: HttpClientResponse.HttpClientResponse, body: Uint8Array) {
    this.response = response
    this.body = body
  }
}

/** A request that got no answer: refused, reset, timed out. Repeated like a 5xx. */
export const isNoAnswer = (error: unknown): error is HttpClientError.HttpClientError =>
  HttpClientError.isHttpClientError(error) && error.reason._tag === "TransportError"

const retryAfterOf = (input: unknown, nowMillis: number): number | undefined => {
  if (!(input instanceof RepeatableAnswer)) return undefined
  const header = input.response.headers["retry-after"]
  if (header === undefined) return undefined
  const parsed = Headers.parseRetryAfter(header)
  return parsed._tag === "Success" ? Duration.toMillis(Headers.retryAfterDelay(parsed.success, nowMillis)) : undefined
}

/**
 * The rule as a `Schedule` whose input is what a call failed with (a
 * `RepeatableAnswer` or a transport error): one instance per call, so the
 * doubling and the attempt count belong to that call.
 */
export const schedule = (options: RetryOptions = {}): Schedule.Schedule<number, unknown> => {
  const resolved = resolve(options)
  return Schedule.fromStep(Effect.sync(() => {
    let attempt = 1
    let previous: number | undefined
    return (now: number, input: unknown) => {
      if (attempt >= resolved.maxAttempts) return Cause.done(attempt)
      const retryAfterMs = retryAfterOf(input, now)
      const pauseMs = nextPause(previous, retryAfterMs, resolved)
      previous = pauseMs
      attempt += 1
      if (options.onRetry !== undefined) {
        const request = input instanceof RepeatableAnswer
          ? input.response.request
          : HttpClientError.isHttpClientError(input)
          ? input.reason.request
          : undefined
        options.onRetry({
          attempt,
          status: input instanceof RepeatableAnswer ? input.response.status : undefined,
          retryAfterMs,
          pauseMs,
          method: request?.method ?? "",
          url: request?.url ?? ""
        })
      }
      return Effect.succeed([attempt, Duration.millis(pauseMs)] as [number, Duration.Duration])
    }
  }))
}
