/**
 * The CLI's local webhook loop (docs/operations.md "Operator CLI";
 * docs/integrators.md "Receiving webhooks on your machine"):
 *
 * - `webhooks listen --school ID --forward-to URL [--events a,b] [--json]`
 *   opens a local listener (libs/persistence/src/Listeners.ts) with a secret
 *   of its own, prints it on one line, then claims and sends the listener's
 *   deliveries itself (the URL is the CLI's machine: the dispatcher may run
 *   elsewhere and never claims them), signed exactly as the dispatcher signs
 *   (libs/domain/src/WebhookSignature.ts `attemptHeaders`), each attempt
 *   recorded in the journal (DeliveryQueue `record`) and printed on one
 *   line. It fans the outbox out too, so it works without a dispatcher. An
 *   `http://` or loopback URL is accepted whatever WEBHOOK_ALLOW_INSECURE_URLS
 *   says: the operator has the database anyway. SIGINT or SIGTERM deletes
 *   the listener with its deliveries; one whose CLI died is removed once not
 *   seen for `STALE_AFTER_MS` (Listeners.ts), by the dispatcher's purge or
 *   the next `listen`.
 * - `webhooks trigger --subscription ID --event EVENT [--json]` queues one
 *   sample event (libs/domain/src/EventSamples.ts) for that subscription
 *   only.
 */
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { randomBytes } from "node:crypto"
import { EVENT_NAMES, type EventName, isSubscribable, SUBSCRIBABLE_EVENTS, type SubscribableEventName } from "@school/domain/Events"
import { samplePayloadJson } from "@school/domain/EventSamples"
import * as Ids from "@school/domain/Ids"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { attemptHeaders } from "@school/domain/WebhookSignature"
import { WebhookId } from "@school/domain/WebhookSubscriptions"
import { type AttemptRecord, type Claimed, DeliveryQueue } from "@school/persistence/DeliveryQueue"
import { HEARTBEAT_MS, Listeners } from "@school/persistence/Listeners"
import { Database } from "./Database.ts"

/** How long one local attempt may take. */
const TIMEOUT_MS = 10_000
/** How often the listener looks for work (it fans out and claims). */
const POLL = Duration.millis(200)
/** How often the listener says it is alive (a listener not seen for STALE_AFTER_MS is removed). */
const HEARTBEAT = Duration.millis(HEARTBEAT_MS)
/** The response body kept in the journal, as the dispatcher keeps it. */
const RESPONSE_BODY_MAX = 4096

/** `webhooks trigger` for a subscription that does not exist: exit 1. */
export class SubscriptionNotFound extends Schema.TaggedError<SubscriptionNotFound>()("SubscriptionNotFound", {
  subscriptionId: Schema.Int
}) {}

const json = Flag.Boolean("json").pipe(Flag.withDefault(false), Flag.withDescription("Print JSON (one document per line)"))

const schoolFlag = Flag.Int("school").pipe(
  Flag.filterMap((id) => Ids.SchoolId.makeOption(id), () => "--school must be a positive school id"),
  Flag.withDescription("School id")
)

const forwardTo = Flag.String("forward-to").pipe(
  Flag.filter(
    (text) => URL.canParse(text) && ["http:", "https:"].includes(new URL(text).protocol),
    () => "--forward-to must be an http:// or https:// URL, e.g. http://127.0.0.1:4000/hook"
  ),
  Flag.withDescription("Where to deliver, e.g. http://127.0.0.1:4000/hook")
)

const parseEvents = (text: string): Option.Option<ReadonlyArray<SubscribableEventName>> => {
  const names = text.split(",").map((name) => name.trim())
  const events = names.filter(isSubscribable)
  return events.length === names.length && events.length > 0 ? Option.some([...new Set(events)]) : Option.none()
}

const eventsFlag = Flag.String("events").pipe(
  Flag.filterMap(parseEvents, () => `--events must be a comma-separated list of: ${SUBSCRIBABLE_EVENTS.join(", ")}`),
  Flag.optional,
  Flag.withDescription(`Events to receive (default: all): ${SUBSCRIBABLE_EVENTS.join(", ")}`)
)

/** One attempt: POST the stored body with the dispatcher's headers; never fails; Ctrl-C aborts it. */
const post = (url: string, secret: string, delivery: Claimed, at: Date) =>
  Effect.promise(async (interrupted) => {
    const started = performance.now()
    const ms = () => Math.round(performance.now() - started)
    try {
      const response = await fetch(url, {
        method: "POST",
        redirect: "manual",
        signal: AbortSignal.any([interrupted, AbortSignal.timeout(TIMEOUT_MS)]),
        headers: attemptHeaders({
          secret,
          deliveryId: delivery.public_id,
          event: delivery.event,
          body: delivery.body,
          nowSeconds: Math.floor(at.getTime() / 1000)
        }),
        body: delivery.body
      })
      const text = (await response.text()).slice(0, RESPONSE_BODY_MAX)
      return { status: response.status, error: null, body: text, durationMs: ms() }
    } catch (cause) {
      const timedOut = cause instanceof Error && cause.name === "TimeoutError"
      return { status: null, error: timedOut ? "timeout" : "connection_failed", body: null, durationMs: ms() }
    }
  })

const listen = Command.make(
  "listen",
  { school: schoolFlag, forwardTo, events: eventsFlag, json },
  Effect.fn(function*(input) {
    const listeners = yield* Listeners
    const queue = yield* DeliveryQueue
    const secret = WebhookSecret.generateSecret()
    // The secret never leaves this process: what is stored is sealed with a key nobody keeps.
    const sealed = WebhookSecret.encrypt(WebhookSecret.configuredKey(randomBytes(32)), secret)
    yield* listeners.removeStale
    const id = yield* Effect.acquireRelease(
      listeners.open(input.school, {
        url: input.forwardTo,
        events: Option.getOrElse(input.events, () => SUBSCRIBABLE_EVENTS),
        secretCiphertext: sealed
      }),
      (id) => listeners.close(input.school, id)
    )
    yield* Console.log(
      input.json
        ? JSON.stringify({ secret, subscription_id: id })
        : `listening: school ${input.school} events → ${input.forwardTo}, subscription ${id}, secret ${secret} (Ctrl-C stops and removes it)`
    )
    yield* listeners.heartbeat(input.school, id).pipe(
      Effect.repeat(Schedule.spaced(HEARTBEAT)),
      Effect.forkScoped
    )
    const deliver = (delivery: Claimed) =>
      Effect.gen(function*() {
        const at = new Date(yield* Effect.orDie(queue.databaseNow()))
        const result = yield* post(input.forwardTo, secret, delivery, at)
        const ok = result.status !== null && result.status >= 200 && result.status < 300
        // No retries: a local delivery is final; trigger or repeat the action to try again.
        const record: AttemptRecord = {
          schoolId: delivery.school_id,
          id: delivery.id,
          lease: delivery.lease,
          attempt: delivery.attempt,
          at,
          responseCode: result.status,
          error: result.error ?? (ok ? null : "http_status"),
          durationMs: result.durationMs,
          responseBody: result.body,
          outcome: ok ? "delivered" : "failed",
          pauseMs: 0
        }
        yield* Effect.orDie(queue.record([record]))
        yield* Console.log(
          input.json
            ? JSON.stringify({
              event: delivery.event,
              delivery_id: delivery.public_id,
              status: result.status,
              error: result.error,
              duration_ms: result.durationMs
            })
            : `${delivery.event} ${delivery.public_id} → ${result.status ?? result.error} (${result.durationMs} ms)`
        )
      })
    const round = Effect.gen(function*() {
      yield* Effect.orDie(queue.fanOut(100))
      const claimed = yield* listeners.claim(input.school, id, 10, TIMEOUT_MS * 2)
      yield* Effect.forEach(claimed, deliver, { discard: true })
    })
    return yield* round.pipe(Effect.repeat(Schedule.spaced(POLL)), Effect.andThen(Effect.never))
  }, Effect.scoped, Effect.provide(Layer.mergeAll(Listeners.layer, DeliveryQueue.layer).pipe(Layer.provideMerge(Database.layer))))
).pipe(Command.withDescription("Deliver a school's events to a local URL, signed with a secret of its own, until Ctrl-C"))

const trigger = Command.make(
  "trigger",
  {
    subscription: Flag.Int("subscription").pipe(
      Flag.filterMap((id) => Schema.decodeUnknownOption(WebhookId)(id), () => "--subscription must be a positive subscription id"),
      Flag.withDescription("The subscription to send to (any, a listener's included)")
    ),
    event: Flag.String("event").pipe(
      Flag.filterMap(
        (name) => Option.fromNullishOr(EVENT_NAMES.find((event): event is EventName => event === name)),
        () => `--event must be one of: ${EVENT_NAMES.join(", ")}`
      ),
      Flag.withDescription(`The event: ${EVENT_NAMES.join(", ")}`)
    ),
    json
  },
  Effect.fn(function*(input) {
    const listeners = yield* Listeners
    const queued = yield* listeners.queueSample(input.subscription, input.event, samplePayloadJson(input.event))
    if (Option.isNone(queued)) return yield* new SubscriptionNotFound({ subscriptionId: input.subscription })
    yield* Console.log(
      input.json
        ? JSON.stringify({ subscription_id: input.subscription, event: input.event, event_id: queued.value.eventId }, null, 2)
        : `sample ${input.event} queued for subscription ${input.subscription} of school ${queued.value.schoolId} (event ${queued.value.eventId})`
    )
  }, Effect.provide(Listeners.layer.pipe(Layer.provideMerge(Database.layer))))
).pipe(Command.withDescription("Send one sample event to one subscription only"))

export const webhooksCommand = Command.make("webhooks").pipe(
  Command.withDescription("Webhooks: a local delivery loop and sample events"),
  Command.withSubcommands([listen, trigger])
)
