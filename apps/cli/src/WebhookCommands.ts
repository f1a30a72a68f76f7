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
 *   line. It sends with the dispatcher's receiver client
 *   (libs/runtime/src/Receiver.ts), so the time-out, the response kept, no
 *   redirects and the error kinds are production's, and it looks for work
 *   when the outbox's NOTIFY wakes it (a slow poll behind it). A school has
 *   at most MAX_LISTENERS listeners open (Listeners.ts), outside
 *   WEBHOOK_MAX_SUBSCRIPTIONS. It fans the outbox out too, so it works
 *   without a dispatcher. An
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
import * as Stream from "effect/Stream"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import { randomBytes } from "node:crypto"
import { EVENT_NAMES, type EventName, isSubscribable, SUBSCRIBABLE_EVENTS, type SubscribableEventName } from "@school/domain/Events"
import { samplePayloadJson } from "@school/domain/EventSamples"
import * as Ids from "@school/domain/Ids"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { WebhookId } from "@school/domain/WebhookSubscriptions"
import { type AttemptRecord, type Claimed, DeliveryQueue } from "@school/persistence/DeliveryQueue"
import { HEARTBEAT_MS, Listeners } from "@school/persistence/Listeners"
import { Receiver } from "@school/runtime/Receiver"
import * as Signal from "@school/runtime/Signal"
import { Database } from "./Database.ts"

/** How long one local attempt may take: WEBHOOK_TIMEOUT's default (the setting is the dispatcher's). */
const TIMEOUT = Duration.seconds(10)
/**
 * The listener looks for work (fans out and claims) when the outbox's NOTIFY wakes it, the one the dispatcher's
 * fan-out listens to (DeliveryQueue `wakeups`), and at the latest every POLL: the safety net for a lost listen
 * connection. Idle, it makes one query every POLL.
 */
const POLL = Duration.seconds(5)
/**
 * After a wake-up, one more look this much later: a dispatcher running beside the CLI may have fanned the event out
 * first, its deliveries not committed yet when the CLI looked.
 */
const FOLLOW_UP = Duration.millis(100)
/** Deliveries claimed per look; a full claim looks again at once. */
const CLAIM_BATCH = 10
/** Outbox events fanned out per look; a full batch looks again at once. */
const FAN_OUT_BATCH = 100
/** How often the listener says it is alive (a listener not seen for STALE_AFTER_MS is removed). */
const HEARTBEAT = Duration.millis(HEARTBEAT_MS)

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

/**
 * The receiver client the dispatcher sends with (libs/runtime/src/Receiver.ts): the same time-out (WEBHOOK_TIMEOUT's
 * default), the same 4 KiB of the response kept, no redirect followed, the same error kinds in the journal, so a
 * local receiver sees what production sends. One attempt at a time; `http://` and loopback allowed (a listener's
 * receiver is this machine).
 */
const receiverLayer = Receiver.layer({ concurrency: 1, timeout: TIMEOUT, allowInsecureUrls: true })


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
    const receiver = yield* Receiver
    const deliver = (delivery: Claimed) =>
      Effect.gen(function*() {
        const at = new Date(yield* Effect.orDie(queue.databaseNow()))
        const result = yield* receiver.postAttempt({
          url: input.forwardTo,
          secret,
          deliveryId: delivery.public_id,
          event: delivery.event,
          body: delivery.body,
          at
        })
        // No retries: a local delivery is final; trigger or repeat the action to try again.
        const record: AttemptRecord = {
          schoolId: delivery.school_id,
          id: delivery.id,
          lease: delivery.lease,
          attempt: delivery.attempt,
          at,
          responseCode: result.responseCode,
          error: result.error,
          durationMs: result.durationMs,
          responseBody: result.responseBody,
          outcome: result.ok ? "delivered" : "failed",
          pauseMs: 0
        }
        yield* Effect.orDie(queue.record([record]))
        yield* Console.log(
          input.json
            ? JSON.stringify({
              event: delivery.event,
              delivery_id: delivery.public_id,
              status: result.responseCode,
              error: result.error,
              duration_ms: result.durationMs
            })
            : `${delivery.event} ${delivery.public_id} → ${result.responseCode ?? result.error} (${result.durationMs} ms)`
        )
      })
    /** One look: fan out, claim, deliver; whether there may be more at once (a full batch). */
    const round = Effect.gen(function*() {
      const fanned = yield* Effect.orDie(queue.fanOut(FAN_OUT_BATCH))
      const claimed = yield* listeners.claim(input.school, id, CLAIM_BATCH, 2 * Duration.toMillis(TIMEOUT))
      yield* Effect.forEach(claimed, deliver, { discard: true })
      return fanned.events === FAN_OUT_BATCH || claimed.length === CLAIM_BATCH
    })
    const wakeup = yield* Signal.make
    // LISTEN on the outbox's channel, as the dispatcher's fan-out does (apps/dispatcher/src/FanOut.ts); lost, it is
    // opened again a second later, and POLL covers the gap.
    yield* Effect.scoped(
      queue.wakeups.pipe(
        // Listening now: one look, for what was written before.
        Effect.tap(() => wakeup.wake),
        Effect.flatMap((stream) => Stream.runForEach(stream, () => wakeup.wake))
      )
    ).pipe(
      Effect.catch((error) =>
        Effect.logWarning("webhooks listen: the database's notifications were lost; looking every 5 s meanwhile", {
          error: error.message
        })
      ),
      Effect.andThen(Effect.sleep(Duration.seconds(1))),
      Effect.forever,
      Effect.forkScoped
    )
    let wait = POLL
    while (true) {
      const more = yield* round
      if (more) continue
      const woken = yield* wakeup.sleep(Duration.toMillis(wait))
      wait = woken ? FOLLOW_UP : POLL
    }
  }, Effect.scoped, Effect.provide(Layer.mergeAll(Listeners.layer, DeliveryQueue.layer, receiverLayer).pipe(Layer.provideMerge(Database.layer))))
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
