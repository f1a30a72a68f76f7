/**
 * One attempt of a claimed delivery (docs/integrators.md "Receiving webhooks";
 * docs/decisions.md "Webhooks"): the secret decrypted, the stored body signed with this
 * attempt's time (the database's clock: ClockCheck `now`) and POSTed by the
 * receiver client (libs/runtime/src/Receiver.ts); what came of it goes to
 * the recorder, with the next attempt's pause from the retry plan (one
 * `Schedule`, libs/domain/src/RetryPlan.ts).
 *
 * A failure on our side (descriptors or sockets run out, our DNS resolver
 * down: the client's `ours`) is not the receiver's: the delivery is
 * postponed by OURS_PAUSE without using up an attempt, nothing is journaled,
 * the subscription is left as it is, and the metric
 * `webhook_attempts_postponed_total` counts it (docs/decisions.md "Failures
 * on our side"), up to MAX_POSTPONEMENTS in a row.
 *
 * Each attempt is counted in /metrics and logged (docs/operations.md "Log
 * lines"): a failed one at Info, a delivered one at Debug, a postponed one
 * at Warning. Never the URL (it may carry a token), the secret or the body.
 *
 * Each attempt is the span `Dispatcher.send`, a child of the span that wrote
 * the event (its `traceparent`), so the trace of a business write holds its
 * delivery attempts (docs/operations.md "Traces"). Nothing of the trace is
 * sent to the receiver.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Schedule from "effect/Schedule"
import * as RetryPlan from "@school/domain/RetryPlan"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import type { AttemptRecord, Claimed } from "@school/persistence/DeliveryQueue"
import * as Tracing from "@school/runtime/Tracing"
import * as Metrics from "./Metrics.ts"
import type * as Receiver from "@school/runtime/Receiver"

/** How long a delivery waits after a failure on our side. */
export const OURS_PAUSE = Duration.seconds(1)
/**
 * Failures on our side in a row after which the next one counts as an
 * attempt after all (a minute of them): a receiver whose own name server
 * fails the way ours would cannot keep a delivery pending forever.
 */
export const MAX_POSTPONEMENTS = 60

/** The attempt's span: under the span that wrote the event when it has one; what it is, never its URL. */
const attemptSpan = (delivery: Claimed) => {
  const parent = Tracing.fromTraceparent(delivery.traceparent)
  return {
    kind: "consumer" as const,
    ...(Option.isSome(parent) ? { parent: parent.value } : { root: true }),
    attributes: {
      "school.id": delivery.school_id,
      "webhook.subscription_id": delivery.subscription_id,
      "webhook.delivery_id": delivery.public_id,
      "webhook.event": delivery.event,
      "webhook.attempt": delivery.attempt
    }
  }
}

/** Decrypted secrets kept at most (one per stored form; past it the cache starts again empty). */
const SECRETS_KEPT = 4096

export const make = (options: {
  readonly keys: ReadonlyArray<WebhookSecret.SecretKey>
  readonly schedule: Schedule.Schedule<number>
  /** The receiver client's POST (never fails). */
  readonly post: (attempt: Receiver.Attempt) => Effect.Effect<Receiver.Outcome>
  /** The database's clock, epoch milliseconds. */
  readonly now: Effect.Effect<number>
  readonly record: (record: AttemptRecord) => Effect.Effect<void>
}) => {
  // The secret of a stored form, decrypted once: every delivery of a subscription carries the same
  // ciphertext (a new secret is a new one), and an AES-GCM decryption per attempt was about 7% of the
  // process's CPU under load. Only what decrypts is kept, and only here, in memory.
  const secrets = new Map<string, string>()
  const secretOf = (stored: Uint8Array): Result.Result<string, string> => {
    const id = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength).toString("base64")
    const kept = secrets.get(id)
    if (kept !== undefined) return Result.succeed(kept)
    const secret = WebhookSecret.decrypt(options.keys, stored)
    if (Result.isSuccess(secret)) {
      if (secrets.size >= SECRETS_KEPT) secrets.clear()
      secrets.set(id, secret.success)
    }
    return secret
  }

  const next = (delivery: Claimed, outcome: Receiver.Outcome) =>
    Effect.gen(function*() {
      if (outcome.ours && delivery.postponements < MAX_POSTPONEMENTS) {
        return { outcome: "postponed" as const, pauseMs: Duration.toMillis(OURS_PAUSE) }
      }
      if (outcome.ok) return { outcome: "delivered" as const, pauseMs: 0 }
      const pause = yield* RetryPlan.pauseAfter(options.schedule, delivery.attempt)
      return Option.match(pause, {
        onNone: () => ({ outcome: "failed" as const, pauseMs: 0 }),
        onSome: (delay) => ({ outcome: "retry" as const, pauseMs: Math.round(Duration.toMillis(delay)) })
      })
    })

  return (delivery: Claimed): Effect.Effect<void> =>
    Effect.gen(function*() {
      const at = new Date(yield* options.now)
      const secret = secretOf(delivery.secret_ciphertext)
      const outcome: Receiver.Outcome = Result.isFailure(secret)
        ? {
          ok: false,
          ours: false,
          responseCode: null,
          error: "secret_unreadable",
          detail: secret.failure,
          responseBody: null,
          durationMs: 0
        }
        : yield* options.post({
          url: delivery.url,
          secret: secret.success,
          deliveryId: delivery.public_id,
          event: delivery.event,
          body: delivery.body,
          at
        })
      const then = yield* next(delivery, outcome)
      yield* Effect.annotateCurrentSpan({
        "webhook.outcome": then.outcome,
        "webhook.result": Metrics.resultOf(outcome),
        ...(outcome.responseCode === null ? {} : { "http.response.status_code": outcome.responseCode })
      })
      const line = {
        delivery_id: delivery.id,
        subscription_id: delivery.subscription_id,
        attempt: delivery.attempt,
        outcome: then.outcome === "retry" ? "retrying" : then.outcome,
        result: Metrics.resultOf(outcome),
        status: outcome.responseCode,
        duration_ms: outcome.durationMs
      }
      if (then.outcome === "postponed") {
        yield* Metrics.postponedAttempt(outcome)
        yield* Effect.logWarning(
          `dispatcher: attempt not made, the failure is ours: ${outcome.detail ?? "unknown"}; retrying shortly`
        ).pipe(Effect.annotateLogs({ ...line, error: outcome.error }))
      } else {
        yield* Metrics.attempted(outcome, then.outcome === "retry" ? "retrying" : then.outcome)
        // As annotations, like the access line's fields: one flat object per line to filter on.
        yield* (outcome.ok
          ? Effect.logDebug("dispatcher: attempt delivered")
          : Effect.logInfo(`dispatcher: attempt failed: ${outcome.detail ?? `HTTP ${outcome.responseCode}`}`)).pipe(
            Effect.annotateLogs(outcome.error === null ? line : { ...line, error: outcome.error })
          )
      }
      yield* options.record({
        schoolId: delivery.school_id,
        id: delivery.id,
        lease: delivery.lease,
        attempt: delivery.attempt,
        at,
        responseCode: outcome.responseCode,
        error: outcome.error,
        durationMs: outcome.durationMs,
        responseBody: outcome.responseBody,
        ...then
      })
    }).pipe(Tracing.work("Dispatcher.send", attemptSpan(delivery)))
}
