/**
 * A school's webhook subscriptions and their deliveries as the back office
 * shows and changes them (docs/back-office.md "Webhooks"; docs/decisions.md
 * "Webhooks"): the ids, what a creation, a change and a recovery accept (the
 * events a subscription may tick, the receiver URL's text), a subscription
 * (with its secret only when created), the journal and one delivery with its
 * attempts. The back-office contract (libs/domain/src/api/backoffice/Webhooks.ts)
 * and the repository (libs/persistence Webhooks.ts) both import them from
 * here; the event catalog itself is libs/domain/src/Events.ts.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { isSubscribable, SUBSCRIBABLE_EVENTS, SubscribableEventName, TEST_EVENT } from "./Events.ts"
import { PositiveInt32 } from "./Ids.ts"
import { MAX_URL_LENGTH } from "./ReceiverAddress.ts"
import { Text } from "./Text.ts"
import { IsoInstant, Timestamp } from "./Timestamps.ts"
import { DeliveryPublicId } from "./WebhookSignature.ts"

// ---------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------

/** A subscription id (an `integer` column). */
export const WebhookId = PositiveInt32.pipe(Schema.brand("WebhookId"))
export type WebhookId = typeof WebhookId.Type

/**
 * A delivery id: a `bigint` column, on the wire a JSON integer within the
 * safe range (2^53 − 1), which an identity column will not reach.
 */
export const DeliveryId = Schema.Number.annotate({ message: "Expected an integer" }).check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }, { message: "Expected a positive integer id" })
).pipe(Schema.brand("DeliveryId"))
export type DeliveryId = typeof DeliveryId.Type

/** An outbox event id (`bigint`), as a JSON integer. */
export const EventId = Schema.Int

// ---------------------------------------------------------------------------
// Events and URLs
// ---------------------------------------------------------------------------

/** One event name in a request: a catalog event, with a message of its own for `webhook.test`. */
export const SubscribableEvent = Schema.String.annotate({ message: "Expected an event name" }).pipe(
  Schema.decodeTo(
    SubscribableEventName,
    SchemaTransformation.transformEffect({
      decode: (name: string) =>
        isSubscribable(name)
          ? Effect.succeed(name)
          : Effect.fail(
            new SchemaIssue.InvalidValue(
              {
                message: name === TEST_EVENT
                  ? `${TEST_EVENT} cannot be subscribed to: send it with POST /webhooks/{id}/test`
                  : `Expected one of ${SUBSCRIBABLE_EVENTS.join(", ")}`
              },
              name
            )
          ),
      encode: (name: SubscribableEventName) => Effect.succeed(name)
    })
  )
)

/** At most this many names in `events` (duplicates are dropped, so more could only be repeats). */
export const MAX_EVENT_NAMES = 50

/**
 * `events`: at least one catalog event; duplicates are dropped and the
 * stored list is in the catalog's order (`normalizeEvents`).
 */
export const EventList = Schema.Array(SubscribableEvent).check(
  Schema.isMinLength(1, { message: "Expected at least one event" }),
  Schema.isMaxLength(MAX_EVENT_NAMES, { message: `Expected at most ${MAX_EVENT_NAMES} event names` })
)

/** The events as stored: each once, in the catalog's order. */
export const normalizeEvents = (events: ReadonlyArray<SubscribableEventName>): ReadonlyArray<SubscribableEventName> =>
  SUBSCRIBABLE_EVENTS.filter((name) => events.includes(name))

/**
 * `url` as sent: a trimmed, storable string of at most MAX_URL_LENGTH
 * characters. The receiver rule itself (scheme, credentials, public
 * address) depends on a setting and on DNS, so the handler applies it
 * (libs/domain/src/ReceiverAddress.ts) and answers 422 with `fields.url`.
 */
export const ReceiverUrlText = Text(MAX_URL_LENGTH).check(Schema.isMinLength(1, { message: "Expected a URL" }))

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/** `POST /webhooks`. */
export const CreateWebhookRequest = Schema.Struct({
  url: ReceiverUrlText,
  events: EventList
}).annotate({ examples: [{ url: "https://crm.example.com/hooks/school", events: ["lead.created", "payment.received"] }] })
export type CreateWebhookRequest = typeof CreateWebhookRequest.Type

const PATCH_MESSAGE = "Give url, events or both"

/** `PATCH /webhooks/{id}`: at least one of `url` and `events`. */
export const UpdateWebhookRequest = Schema.Struct({
  url: Schema.optionalKey(ReceiverUrlText),
  events: Schema.optionalKey(EventList)
}).annotate({
  // Before the check: a check's own `examples` are not written into the document.
  examples: [{ url: "https://crm.example.com/hooks/school-v2", events: ["lead.created", "payment.received", "group.enrolled"] }]
}).check(
  Schema.makeFilter((body) =>
    body.url === undefined && body.events === undefined
      ? [{ path: ["url"], issue: PATCH_MESSAGE }, { path: ["events"], issue: PATCH_MESSAGE }]
      : undefined
  )
)
export type UpdateWebhookRequest = typeof UpdateWebhookRequest.Type

/** What `recover` queues again: deliveries that ended `failed` (the default), or that were `skipped` while disabled. */
export const RecoverWhich = Schema.Literals(["failed", "skipped"]).annotate({
  message: "Expected failed or skipped",
  description: "failed (the default): deliveries that failed; skipped: events journaled while the subscription was disabled"
})
export type RecoverWhich = typeof RecoverWhich.Type

/**
 * `POST /webhooks/{id}/recover`: deliveries that ended `failed` (or were
 * journaled `skipped`, with `which: "skipped"`) at or after `since` (ISO
 * 8601 with offset).
 */
export const RecoverRequest = Schema.Struct({
  since: IsoInstant,
  which: Schema.optionalKey(RecoverWhich)
}).annotate({ examples: [{ since: "2026-11-22T12:15:03+03:00", which: "failed" }] })
export type RecoverRequest = typeof RecoverRequest.Type

// ---------------------------------------------------------------------------
// Subscriptions and deliveries
// ---------------------------------------------------------------------------

export const WebhookStatus = Schema.Literals(["active", "problematic", "disabled"])
export type WebhookStatus = typeof WebhookStatus.Type

/** The subscription the examples show. */
const subscriptionExample = {
  id: WebhookId.make(4),
  url: "https://crm.example.com/hooks/school",
  events: ["lead.created" as const, "payment.received" as const],
  status: "active" as const
}

/** A subscription as every call but creation shows it: never its secret. */
export const Subscription = Schema.Struct({
  id: WebhookId,
  url: Schema.String,
  events: Schema.Array(SubscribableEventName),
  status: WebhookStatus,
  created_at: Timestamp,
  updated_at: Timestamp,
  skipped_events: Schema.Int.annotate({
    description: "Deliveries journaled skipped while the subscription was disabled and not recovered yet " +
      "(POST /webhooks/{id}/recover with which: skipped)"
  })
}).annotate({
  examples: [{
    ...subscriptionExample,
    created_at: "2026-11-22T09:15:03.123456Z",
    updated_at: "2026-11-22T09:15:03.123456Z",
    skipped_events: 0
  }]
})
export type Subscription = typeof Subscription.Type

/** The created subscription, with its secret: the only time the secret is shown. */
export const CreatedSubscription = Schema.Struct({
  id: WebhookId,
  url: Schema.String,
  events: Schema.Array(SubscribableEventName),
  status: Schema.Literal("active"),
  secret: Schema.String.annotate({ description: "whsec_ + base64 of 32 random bytes; shown only here" }),
  created_at: Timestamp
}).annotate({
  examples: [{
    ...subscriptionExample,
    secret: "whsec_KCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/QEFCQ0RFRkc=",
    created_at: "2026-11-22T09:15:03.123456Z"
  }]
})
export type CreatedSubscription = typeof CreatedSubscription.Type

/** `skipped`: an event the subscription would have received while it was disabled; no attempt was made. */
export const DeliveryStatus = Schema.Literals(["pending", "delivered", "failed", "skipped"])

/** The delivery the journal's and a delivery's examples show. */
const journalExample = {
  id: DeliveryId.make(21),
  event: "lead.created",
  status: "delivered" as const,
  response_code: 200,
  attempts: 1,
  created_at: "2026-11-22T09:15:03.123456Z",
  last_attempt_at: "2026-11-22T09:15:03.456789Z",
  next_attempt_at: null,
  webhook_id: "msg_4b1e3f0c9a8d4e2f8c6b5a4d3e2f1a0b"
}

/** A delivery in the journal. */
export const JournalEntry = Schema.Struct({
  id: DeliveryId,
  event: Schema.String,
  status: DeliveryStatus,
  response_code: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  created_at: Timestamp,
  last_attempt_at: Schema.NullOr(Timestamp),
  next_attempt_at: Schema.NullOr(Timestamp).annotate({ description: "When the next attempt is due while pending; null otherwise" }),
  webhook_id: DeliveryPublicId.annotate({
    description: "The delivery's id as the receiver sees it (webhook-id and X-Service-Delivery headers)",
    examples: ["msg_4b1e3f0c9a8d4e2f8c6b5a4d3e2f1a0b"]
  })
}).annotate({
  examples: [journalExample]
})
export type JournalEntry = typeof JournalEntry.Type

/**
 * How much of a receiver's response body an attempt keeps (docs/back-office.md "Webhooks"): the
 * dispatcher reads at most this many bytes of it (`RESPONSE_BODY_LIMIT` of its receiver client,
 * libs/runtime/src/Receiver.ts) and stores them as text, so an attempt's `response_excerpt` is
 * never longer. test/backoffice/plain-data.test.ts holds the two together.
 */
export const RESPONSE_EXCERPT_BYTES = 4096

export const Attempt = Schema.Struct({
  attempt: Schema.Int,
  at: Timestamp,
  response_code: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String).annotate({
    description: "Why the attempt got no whole answer: timeout, connection_refused, connection_closed, dns_error, " +
      "tls_error, connection_error, blocked_address, invalid_url or secret_unreadable; null when the receiver answered"
  }),
  duration_ms: Schema.Int,
  response_excerpt: Schema.NullOr(Schema.String).annotate({
    description: `The start of the receiver's response body: at most its first ${RESPONSE_EXCERPT_BYTES} bytes, ` +
      "read as UTF-8 (bytes that are not UTF-8 become U+FFFD, NUL characters are dropped); " +
      "null when there was no response or its body was empty. Plain text from the receiver: never markup to render"
  })
})

/** One delivery: the journal's fields, the body as sent (null until the first attempt) and every attempt. */
export const DeliveryDetail = Schema.Struct({
  ...JournalEntry.fields,
  body: Schema.NullOr(Schema.String),
  attempts_detail: Schema.Array(Attempt)
}).annotate({
  examples: [{
    ...journalExample,
    attempts: 3,
    last_attempt_at: "2026-11-22T09:21:13.612345Z",
    body: '{"event":"lead.created","account_id":1,"payload":{"lead_id":7,"name":"Anna Ivanova",' +
      '"phone":"+7 (999) 123-45-67","source":"website"},"timestamp":"2026-11-22T09:15:03.123456Z"}',
    attempts_detail: [
      { attempt: 1, at: "2026-11-22T09:15:03.456789Z", response_code: null, error: "timeout", duration_ms: 10_002, response_excerpt: null },
      {
        attempt: 2,
        at: "2026-11-22T09:16:13.501234Z",
        response_code: 503,
        error: null,
        duration_ms: 131,
        response_excerpt: '{"error":"database is restarting"}'
      },
      { attempt: 3, at: "2026-11-22T09:21:13.612345Z", response_code: 200, error: null, duration_ms: 84, response_excerpt: "ok" }
    ]
  }]
})
export type DeliveryDetail = typeof DeliveryDetail.Type

/** The journal's length (docs/back-office.md "Webhooks"). */
export const JOURNAL_LENGTH = 50
