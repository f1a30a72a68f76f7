/**
 * A school's webhook subscriptions and their deliveries as the back office
 * reads and writes them (spec 5.3, 6.1; docs/decisions.md "Webhooks";
 * migration 0510): subscriptions (the secret only ever written, encrypted),
 * the journal of the last 50 deliveries, one delivery with its attempts, and
 * the work the dispatcher will consume: a `webhook.test` outbox event
 * addressed to one subscription (`outbox_events.subscription_id`), and new
 * delivery rows for a resend or a recovery (same event, same body,
 * `resend_of` the delivery repeated, a fresh plan: pending, 0 attempts, due
 * now).
 *
 * Every call takes the caller's SchoolId; a subscription or delivery of
 * another school is not found, exactly like a missing one. A write that
 * queues work locks the subscription row first (`FOR UPDATE`), so it is
 * ordered with a concurrent disable and with another recovery. Rows are
 * decoded here; SQL and decode failures are defects.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import type { Ids } from "@school/domain"
import {
  DeliveryDetail,
  DeliveryId,
  EventId,
  JOURNAL_LENGTH,
  JournalEntry,
  type SubscribableEventName,
  Subscription,
  type WebhookId,
  WebhookStatus
} from "@school/domain/api/backoffice/Webhooks"
import type { PageRequest } from "@school/domain/Pagination"
import { toWindow } from "@school/domain/Pagination"
import { Timestamp } from "@school/domain/Timestamps"
import { type PageResult, pageReader } from "./Paging.ts"

/** What a new subscription is made of: the checked URL, its events, its secret already encrypted. */
export interface NewSubscription {
  readonly url: string
  readonly events: ReadonlyArray<SubscribableEventName>
  readonly secretCiphertext: Uint8Array
}

/** A change of URL, events or both (already checked). */
export interface SubscriptionChange {
  readonly url?: string | undefined
  readonly events?: ReadonlyArray<SubscribableEventName> | undefined
}

/** The outcome of queueing work for a subscription. */
export type Queued<A> =
  | { readonly _tag: "Queued"; readonly value: A }
  /** No such subscription (or delivery) in this school. */
  | { readonly _tag: "NotFound"; readonly what: "subscription" | "delivery" }
  /** The subscription is disabled: no new deliveries are made for it (docs/decisions.md "Webhooks"). */
  | { readonly _tag: "Disabled" }

/** The message of a `webhook.test` event. */
export const TEST_MESSAGE = "This is a test event from the school service: your endpoint receives its webhooks."

const Created = Schema.Struct({
  id: Subscription.fields.id,
  url: Schema.String,
  events: Subscription.fields.events,
  status: Schema.Literal("active"),
  created_at: Timestamp
})
export type Created = typeof Created.Type

const decodeCreated = Schema.decodeUnknownEffect(Schema.Array(Created))
const decodeSubscriptions = Schema.decodeUnknownEffect(Schema.Array(Subscription))
const decodeJournal = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ journal: Schema.Array(JournalEntry) })))
const decodeDetail = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ delivery: DeliveryDetail })))
const decodeStatus = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ status: WebhookStatus })))
const decodeEventId = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ id: EventId })))
const decodeDeliveryId = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ id: DeliveryId })))
const decodeCount = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ queued: Schema.Int })))

const first = <A>(rows: ReadonlyArray<A>): Option.Option<A> => Option.fromNullishOr(rows[0])

export class Webhooks extends Context.Service<Webhooks, {
  create(schoolId: Ids.SchoolId, subscription: NewSubscription): Effect.Effect<Created>
  list(schoolId: Ids.SchoolId, page: PageRequest): Effect.Effect<PageResult<Subscription>>
  find(schoolId: Ids.SchoolId, id: WebhookId): Effect.Effect<Option.Option<Subscription>>
  update(schoolId: Ids.SchoolId, id: WebhookId, change: SubscriptionChange): Effect.Effect<Option.Option<Subscription>>
  /** `disabled` from any status; enable: `disabled` back to `active`, any other status unchanged. */
  setEnabled(schoolId: Ids.SchoolId, id: WebhookId, enabled: boolean): Effect.Effect<Option.Option<Subscription>>
  /** A `webhook.test` outbox event addressed to this subscription: its event id. */
  queueTest(schoolId: Ids.SchoolId, id: WebhookId): Effect.Effect<Queued<number>>
  /** The last JOURNAL_LENGTH deliveries, newest first; None when the subscription is not the school's. */
  journal(schoolId: Ids.SchoolId, id: WebhookId): Effect.Effect<Option.Option<ReadonlyArray<JournalEntry>>>
  /** One delivery of this subscription with its attempts. */
  delivery(schoolId: Ids.SchoolId, id: WebhookId, deliveryId: DeliveryId): Effect.Effect<Option.Option<DeliveryDetail>>
  /** A new delivery of the same event and body: its id. */
  resend(schoolId: Ids.SchoolId, id: WebhookId, deliveryId: DeliveryId): Effect.Effect<Queued<DeliveryId>>
  /**
   * A new delivery for every event whose delivery to this subscription
   * ended `failed` at or after `since` (UTC text), unless one of that
   * event's deliveries is already pending or delivered: how many.
   */
  recover(schoolId: Ids.SchoolId, id: WebhookId, since: string): Effect.Effect<Queued<number>>
}>()("school/persistence/Webhooks") {
  static readonly layer = Layer.effect(
    Webhooks,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const readPage = pageReader(sql, Subscription)

      const columns = sql`id, url, to_json(events) AS events, status,
        api_ts(created_at) AS created_at, api_ts(updated_at) AS updated_at`
      /** The events as a text[] from their JSON (one parameter, whatever the count). */
      const eventArray = (events: ReadonlyArray<SubscribableEventName>) =>
        sql`ARRAY(SELECT json_array_elements_text(${JSON.stringify(events)}::json))`
      const journalFields = sql`'id', d.id, 'event', d.event, 'status', d.status,
        'response_code', d.response_code, 'attempts', d.attempts,
        'created_at', api_ts(d.created_at), 'last_attempt_at', api_ts(d.last_attempt_at)`

      const oneSubscription = (rows: ReadonlyArray<unknown>) =>
        decodeSubscriptions(rows).pipe(Effect.map(first), Effect.orDie)

      /** Locks the subscription row for the rest of the transaction: its status, or None when it is not the school's. */
      const lock = (schoolId: Ids.SchoolId, id: WebhookId) =>
        sql`SELECT status FROM webhook_subscriptions WHERE school_id = ${schoolId} AND id = ${id} FOR UPDATE`.pipe(
          Effect.flatMap(decodeStatus),
          Effect.map((rows) => Option.map(first(rows), (row) => row.status))
        )

      /** Runs `queue` in a transaction after locking an enabled subscription. */
      const whenEnabled = <A>(
        schoolId: Ids.SchoolId,
        id: WebhookId,
        queue: Effect.Effect<Queued<A>, unknown>
      ): Effect.Effect<Queued<A>> =>
        sql.withTransaction(Effect.gen(function*() {
          const status = yield* lock(schoolId, id)
          if (Option.isNone(status)) return { _tag: "NotFound", what: "subscription" } as const
          if (status.value === "disabled") return { _tag: "Disabled" } as const
          return yield* queue
        })).pipe(Effect.orDie)

      return Webhooks.of({
        create: (schoolId, subscription) =>
          sql`
            INSERT INTO webhook_subscriptions (school_id, url, events, secret_ciphertext)
            VALUES (${schoolId}, ${subscription.url}, ${eventArray(subscription.events)}, ${subscription.secretCiphertext})
            RETURNING id, url, to_json(events) AS events, status, api_ts(created_at) AS created_at`.pipe(
            Effect.flatMap(decodeCreated),
            Effect.map((rows) => Option.getOrThrow(first(rows))),
            Effect.orDie
          ),

        list: (schoolId, page) => {
          const { limit, offset } = toWindow(page)
          return readPage(
            sql`SELECT count(*)::int AS total FROM webhook_subscriptions WHERE school_id = ${schoolId}`,
            sql`SELECT ${columns} FROM webhook_subscriptions WHERE school_id = ${schoolId}
                ORDER BY id LIMIT ${limit} OFFSET ${offset}`
          )
        },

        find: (schoolId, id) =>
          sql`SELECT ${columns} FROM webhook_subscriptions WHERE school_id = ${schoolId} AND id = ${id}`.pipe(
            Effect.orDie,
            Effect.flatMap(oneSubscription)
          ),

        update: (schoolId, id, change) =>
          sql`
            UPDATE webhook_subscriptions
            SET url = ${change.url === undefined ? sql`url` : sql`${change.url}::text`},
                events = ${change.events === undefined ? sql`events` : eventArray(change.events)},
                updated_at = now()
            WHERE school_id = ${schoolId} AND id = ${id}
            RETURNING ${columns}`.pipe(Effect.orDie, Effect.flatMap(oneSubscription)),

        setEnabled: (schoolId, id, enabled) => {
          // Only a real change of status moves updated_at.
          const next = enabled ? sql`CASE WHEN status = 'disabled' THEN 'active' ELSE status END` : sql`'disabled'`
          return sql`
            UPDATE webhook_subscriptions
            SET status = ${next},
                updated_at = CASE WHEN status = ${next} THEN updated_at ELSE now() END
            WHERE school_id = ${schoolId} AND id = ${id}
            RETURNING ${columns}`.pipe(Effect.orDie, Effect.flatMap(oneSubscription))
        },

        queueTest: (schoolId, id) =>
          whenEnabled(
            schoolId,
            id,
            sql`
              INSERT INTO outbox_events (school_id, event, payload, subscription_id)
              VALUES (${schoolId}, 'webhook.test',
                      json_build_object('subscription_id', ${id}::int, 'message', ${TEST_MESSAGE}::text), ${id})
              RETURNING id::float8 AS id`.pipe(
              Effect.flatMap(decodeEventId),
              Effect.map((rows) => ({ _tag: "Queued", value: Option.getOrThrow(first(rows)).id }) as const)
            )
          ),

        journal: (schoolId, id) =>
          sql`
            SELECT coalesce((
              SELECT json_agg(json_build_object(${journalFields}) ORDER BY d.id DESC)
              FROM (
                SELECT * FROM webhook_deliveries
                WHERE school_id = s.school_id AND subscription_id = s.id
                ORDER BY id DESC LIMIT ${JOURNAL_LENGTH}
              ) d
            ), '[]'::json) AS journal
            FROM webhook_subscriptions s
            WHERE s.school_id = ${schoolId} AND s.id = ${id}`.pipe(
            Effect.flatMap(decodeJournal),
            Effect.map((rows) => Option.map(first(rows), (row) => row.journal)),
            Effect.orDie
          ),

        delivery: (schoolId, id, deliveryId) =>
          sql`
            SELECT json_build_object(${journalFields},
              'body', d.body,
              'attempts_detail', coalesce((
                SELECT json_agg(json_build_object(
                  'attempt', a.attempt, 'at', api_ts(a.at), 'response_code', a.response_code,
                  'error', a.error, 'duration_ms', a.duration_ms) ORDER BY a.attempt)
                FROM webhook_attempts a
                WHERE a.school_id = d.school_id AND a.delivery_id = d.id
              ), '[]'::json)) AS delivery
            FROM webhook_deliveries d
            WHERE d.school_id = ${schoolId} AND d.subscription_id = ${id} AND d.id = ${deliveryId}::int8`.pipe(
            Effect.flatMap(decodeDetail),
            Effect.map((rows) => Option.map(first(rows), (row) => row.delivery)),
            Effect.orDie
          ),

        resend: (schoolId, id, deliveryId) =>
          whenEnabled(
            schoolId,
            id,
            sql`
              INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, resend_of, body)
              SELECT school_id, subscription_id, event_id, event, id, body
              FROM webhook_deliveries
              WHERE school_id = ${schoolId} AND subscription_id = ${id} AND id = ${deliveryId}::int8
              RETURNING id::float8 AS id`.pipe(
              Effect.flatMap(decodeDeliveryId),
              Effect.map((rows): Queued<DeliveryId> =>
                Option.match(first(rows), {
                  onNone: () => ({ _tag: "NotFound", what: "delivery" }),
                  onSome: (row) => ({ _tag: "Queued", value: row.id })
                })
              )
            )
          ),

        recover: (schoolId, id, since) =>
          whenEnabled(
            schoolId,
            id,
            sql`
              WITH failed AS (
                -- One new delivery per event: the latest failure's body, resend_of that failure.
                SELECT DISTINCT ON (d.event_id) d.id, d.event_id, d.event, d.body
                FROM webhook_deliveries d
                WHERE d.school_id = ${schoolId} AND d.subscription_id = ${id}
                  AND d.status = 'failed' AND d.finished_at >= ${since}::timestamptz
                  AND NOT EXISTS (
                    SELECT 1 FROM webhook_deliveries o
                    WHERE o.school_id = d.school_id AND o.subscription_id = d.subscription_id
                      AND o.event_id = d.event_id AND o.status IN ('pending', 'delivered')
                  )
                ORDER BY d.event_id, d.id DESC
              ), queued AS (
                INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, resend_of, body)
                SELECT ${schoolId}, ${id}, event_id, event, id, body FROM failed
                RETURNING 1
              )
              SELECT count(*)::int AS queued FROM queued`.pipe(
              Effect.flatMap(decodeCount),
              Effect.map((rows) => ({ _tag: "Queued", value: Option.getOrThrow(first(rows)).queued }) as const)
            )
          )
      })
    })
  )
}
