/**
 * A school's webhook subscriptions and their deliveries as the back office
 * reads and writes them (docs/decisions.md "Webhooks";
 * docs/back-office.md "Webhooks", "Webhook limits"; migrations 0510, 0700):
 * subscriptions (the secret only ever written, encrypted), each with the
 * count of its skipped deliveries not recovered yet, their deletion, the
 * journal of the last 50 deliveries, one delivery with its attempts, and the
 * work the dispatcher will consume: a `webhook.test` outbox event addressed
 * to one subscription (`outbox_events.subscription_id`), and new delivery
 * rows for a resend or a recovery (same event, same body, `resend_of` the
 * delivery repeated, a fresh plan: pending, 0 attempts, due now).
 *
 * Every call takes the caller's SchoolId; a subscription or delivery of
 * another school is not found, exactly like a missing one. A write that
 * queues work locks the subscription row first (`FOR UPDATE`), so it is
 * ordered with a concurrent disable, deletion and another recovery; under
 * that lock it applies the subscription's action limit
 * (libs/domain/src/WebhookLimits.ts) to `action_times`. A creation locks the
 * school's row, so the count of its subscriptions it checks holds until it
 * commits. The limits come from the caller (the settings are the API's);
 * what they decide is an outcome here (`LimitReached`, `TooMany`), never an
 * HTTP answer. Rows are decoded here; SQL and decode failures are defects.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { Ids } from "@school/domain"
import type { SubscribableEventName } from "@school/domain/Events"
import {
  DeliveryDetail,
  DeliveryId,
  EventId,
  JOURNAL_LENGTH,
  JournalEntry,
  RecoverWhich,
  Subscription,
  WebhookId,
  WebhookStatus
} from "@school/domain/WebhookSubscriptions"
import type { PageRequest } from "@school/domain/Pagination"
import { toWindow } from "@school/domain/Pagination"
import { Timestamp } from "@school/domain/Timestamps"
import { takeAction } from "@school/domain/WebhookLimits"
import { currentTraceparent } from "./Outbox.ts"
import { type PageResult, pageReader } from "./Paging.ts"
import { named } from "./Spans.ts"

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
  /**
   * The subscription accepted `limit` calls within the last minute
   * (docs/back-office.md "Webhook limits"): nothing was queued; a call in
   * `retryAfterSeconds` whole seconds is accepted.
   */
  | { readonly _tag: "TooMany"; readonly limit: number; readonly retryAfterSeconds: number }

/** The outcome of a creation. */
export type Creation =
  | { readonly _tag: "Created"; readonly value: Created }
  /** The school already has `limit` subscriptions (docs/back-office.md "Webhook limits"): nothing was written. */
  | { readonly _tag: "LimitReached"; readonly limit: number }

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

/** A subscription of a school. */
const SubscriptionKey = Schema.Struct({ school_id: Ids.SchoolId, id: WebhookId })

/** A delivery of a school's subscription. */
const DeliveryKey = Schema.Struct({ ...SubscriptionKey.fields, delivery_id: DeliveryId })

/** The locked subscription: its status, the times of its accepted actions and the database's now, in µs. */
const Locked = Schema.Struct({
  status: WebhookStatus,
  action_times: Schema.Array(Schema.Number),
  now: Schema.Number
})

/** How many attempts a deletion makes when PostgreSQL picks it as a deadlock's victim (a dispatcher touching the same rows). */
const DELETE_ATTEMPTS = 3

export class Webhooks extends Context.Service<Webhooks, {
  /** A new subscription, unless the school already has `maxSubscriptions`. */
  create(schoolId: Ids.SchoolId, subscription: NewSubscription, maxSubscriptions: number): Effect.Effect<Creation>
  list(schoolId: Ids.SchoolId, page: PageRequest): Effect.Effect<PageResult<Subscription>>
  find(schoolId: Ids.SchoolId, id: WebhookId): Effect.Effect<Option.Option<Subscription>>
  update(schoolId: Ids.SchoolId, id: WebhookId, change: SubscriptionChange): Effect.Effect<Option.Option<Subscription>>
  /** `disabled` from any status; enable: `disabled` back to `active`, any other status unchanged. */
  setEnabled(schoolId: Ids.SchoolId, id: WebhookId, enabled: boolean): Effect.Effect<Option.Option<Subscription>>
  /**
   * Deletes the subscription with its secret, its deliveries (their attempts
   * go with them), its `webhook.test` events and the events no delivery
   * names any more; its notifications stay, unlinked. False when it is not
   * the school's.
   */
  remove(schoolId: Ids.SchoolId, id: WebhookId): Effect.Effect<boolean>
  /**
   * A `webhook.test` outbox event addressed to this subscription: its event
   * id. Like `resend` and `recover`, at most `actionsPerMinute` accepted
   * calls per subscription in any minute.
   */
  queueTest(schoolId: Ids.SchoolId, id: WebhookId, actionsPerMinute: number): Effect.Effect<Queued<number>>
  /** The last JOURNAL_LENGTH deliveries, newest first; None when the subscription is not the school's. */
  journal(schoolId: Ids.SchoolId, id: WebhookId): Effect.Effect<Option.Option<ReadonlyArray<JournalEntry>>>
  /** One delivery of this subscription with its attempts. */
  delivery(schoolId: Ids.SchoolId, id: WebhookId, deliveryId: DeliveryId): Effect.Effect<Option.Option<DeliveryDetail>>
  /** A new delivery of the same event and body: its id. */
  resend(
    schoolId: Ids.SchoolId,
    id: WebhookId,
    deliveryId: DeliveryId,
    actionsPerMinute: number
  ): Effect.Effect<Queued<DeliveryId>>
  /**
   * A new delivery for every event whose delivery to this subscription
   * ended `which` (`failed`, or `skipped` while disabled) at or after
   * `since` (UTC text), unless one of that event's deliveries to it is
   * already pending or delivered: how many.
   */
  recover(
    schoolId: Ids.SchoolId,
    id: WebhookId,
    since: string,
    which: RecoverWhich,
    actionsPerMinute: number
  ): Effect.Effect<Queued<number>>
}>()("school/persistence/Webhooks") {
  static readonly layer = Layer.effect(
    Webhooks,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const readPage = pageReader(sql, Subscription)

      // `s` is the subscription's row. skipped_events: its skipped deliveries that no resend or recovery
      // names yet (webhook_deliveries_resends), within the subscription's own index range.
      const columns = sql`s.id, s.url, to_json(s.events) AS events, s.status,
        api_ts(s.created_at) AS created_at, api_ts(s.updated_at) AS updated_at,
        (SELECT count(*) FROM webhook_deliveries k
         WHERE k.school_id = s.school_id AND k.subscription_id = s.id AND k.status = 'skipped'
           AND NOT EXISTS (
             SELECT 1 FROM webhook_deliveries r WHERE r.school_id = k.school_id AND r.resend_of = k.id
           ))::int AS skipped_events`
      /** The events as a text[] from their JSON (one parameter, whatever the count). */
      const eventArray = (events: ReadonlyArray<SubscribableEventName>) =>
        sql`ARRAY(SELECT json_array_elements_text(${JSON.stringify(events)}::json))`
      const journalFields = sql`'id', d.id, 'event', d.event, 'status', d.status,
        'response_code', d.response_code, 'attempts', d.attempts,
        'created_at', api_ts(d.created_at), 'last_attempt_at', api_ts(d.last_attempt_at),
        'next_attempt_at', CASE WHEN d.status = 'pending' THEN api_ts(d.next_attempt_at) END,
        'webhook_id', d.public_id`

      /**
       * Locks the subscription row for the rest of the transaction: its
       * status, the times of its accepted actions and the database's now
       * (µs), or None when it is not the school's.
       */
      const lockRow = SqlSchema.findOneOption({
        Request: SubscriptionKey,
        Result: Locked,
        execute: ({ id, school_id }) =>
          sql`
            SELECT status,
                   to_json(ARRAY(SELECT (extract(epoch FROM t) * 1000000)::float8 FROM unnest(action_times) t)) AS action_times,
                   (extract(epoch FROM now()) * 1000000)::float8 AS now
            FROM webhook_subscriptions WHERE school_id = ${school_id} AND id = ${id} FOR UPDATE`
      })
      const lock = (schoolId: Ids.SchoolId, id: WebhookId) => lockRow({ school_id: schoolId, id })

      // A creation's insert: the new subscription, or none when the school has `max` already.
      const insertSubscription = SqlSchema.findOneOption({
        Request: Schema.Struct({
          school_id: Ids.SchoolId,
          url: Schema.String,
          events: Subscription.fields.events,
          secret_ciphertext: Schema.Uint8Array,
          max: Schema.Number
        }),
        Result: Created,
        execute: (row) =>
          sql`
            INSERT INTO webhook_subscriptions (school_id, url, events, secret_ciphertext)
            SELECT ${row.school_id}, ${row.url}, ${eventArray(row.events)}, ${row.secret_ciphertext}
            -- Developers' local listeners (Listeners.ts) have their own bound and do not count.
            WHERE (SELECT count(*) FROM webhook_subscriptions
                   WHERE school_id = ${row.school_id} AND listener_seen_at IS NULL) < ${row.max}
            RETURNING id, url, to_json(events) AS events, status, api_ts(created_at) AS created_at`
      })
      const findSubscription = SqlSchema.findOneOption({
        Request: SubscriptionKey,
        Result: Subscription,
        execute: ({ id, school_id }) =>
          sql`SELECT ${columns} FROM webhook_subscriptions s
              WHERE s.school_id = ${school_id} AND s.id = ${id} AND s.listener_seen_at IS NULL`
      })
      const updateSubscription = SqlSchema.findOneOption({
        Request: Schema.Struct({
          ...SubscriptionKey.fields,
          url: Schema.optional(Schema.String),
          events: Schema.optional(Subscription.fields.events)
        }),
        Result: Subscription,
        execute: (change) =>
          sql`
            UPDATE webhook_subscriptions s
            SET url = ${change.url === undefined ? sql`url` : sql`${change.url}::text`},
                events = ${change.events === undefined ? sql`events` : eventArray(change.events)},
                updated_at = now()
            WHERE school_id = ${change.school_id} AND id = ${change.id}
            RETURNING ${columns}`
      })
      const setStatus = SqlSchema.findOneOption({
        Request: Schema.Struct({ ...SubscriptionKey.fields, enabled: Schema.Boolean }),
        Result: Subscription,
        execute: ({ enabled, id, school_id }) => {
          // Only a real change of status moves updated_at.
          const next = enabled ? sql`CASE WHEN status = 'disabled' THEN 'active' ELSE status END` : sql`'disabled'`
          return sql`
            UPDATE webhook_subscriptions s
            SET status = ${next},
                updated_at = CASE WHEN status = ${next} THEN updated_at ELSE now() END
            WHERE school_id = ${school_id} AND id = ${id}
            RETURNING ${columns}`
        }
      })

      /**
       * Runs `queue` in a transaction after locking an enabled subscription
       * whose action limit admits one more call (docs/back-office.md
       * "Webhook limits"). Only a call that queued something counts: its
       * time is stored with the ones still in the window.
       */
      const whenEnabled = <A>(
        schoolId: Ids.SchoolId,
        id: WebhookId,
        actionsPerMinute: number,
        queue: Effect.Effect<Queued<A>, unknown>
      ): Effect.Effect<Queued<A>> =>
        sql.withTransaction(Effect.gen(function*() {
          const locked = yield* lock(schoolId, id)
          if (Option.isNone(locked)) return { _tag: "NotFound", what: "subscription" } as const
          if (locked.value.status === "disabled") return { _tag: "Disabled" } as const
          const decision = takeAction(locked.value.action_times, locked.value.now, actionsPerMinute)
          if (decision._tag === "Refused") {
            return { _tag: "TooMany", limit: actionsPerMinute, retryAfterSeconds: decision.retryAfterSeconds } as const
          }
          const outcome = yield* queue
          if (outcome._tag === "Queued") {
            yield* sql`
              UPDATE webhook_subscriptions
              SET action_times = ARRAY(
                SELECT 'epoch'::timestamptz + t.us::int8 * interval '1 microsecond'
                FROM json_array_elements_text(${JSON.stringify(decision.times)}::json) WITH ORDINALITY AS t(us, n)
                ORDER BY t.n)
              WHERE school_id = ${schoolId} AND id = ${id}`
          }
          return outcome
        })).pipe(Effect.orDie)

      // A deletion's statement, after the lock (see `remove`): the subscription's id, or none.
      const deleteSubscription = SqlSchema.findOneOption({
        Request: SubscriptionKey,
        Result: Schema.Struct({ id: WebhookId }),
        execute: ({ id, school_id }) =>
          sql`
            WITH gone AS (
              DELETE FROM webhook_deliveries
              WHERE school_id = ${school_id} AND subscription_id = ${id}
              RETURNING event_id
            ), tests AS (
              DELETE FROM outbox_events
              WHERE school_id = ${school_id} AND subscription_id = ${id}
              RETURNING 1
            ), unused AS (
              -- Fanned-out events no delivery names any more; one not fanned out yet is the fan-out's.
              DELETE FROM outbox_events e
              USING (SELECT DISTINCT event_id FROM gone) g
              WHERE e.school_id = ${school_id} AND e.id = g.event_id
                AND e.subscription_id IS NULL AND e.fanned_out_at IS NOT NULL
                AND NOT EXISTS (
                  SELECT 1 FROM webhook_deliveries d
                  WHERE d.school_id = e.school_id AND d.event_id = e.id AND d.subscription_id <> ${id}
                )
              RETURNING 1
            ), unlinked AS (
              UPDATE notifications SET subscription_id = NULL
              WHERE school_id = ${school_id} AND subscription_id = ${id}
              RETURNING 1
            )
            DELETE FROM webhook_subscriptions
            WHERE school_id = ${school_id} AND id = ${id}
            RETURNING id`
      })
      // One row: the event inserted.
      const insertTestEvent = SqlSchema.findOne({
        Request: Schema.Struct({ ...SubscriptionKey.fields, traceparent: Schema.NullOr(Schema.String) }),
        Result: Schema.Struct({ id: EventId }),
        execute: ({ id, school_id, traceparent }) =>
          sql`
            INSERT INTO outbox_events (school_id, event, payload, subscription_id, traceparent)
            VALUES (${school_id}, 'webhook.test',
                    json_build_object('subscription_id', ${id}::int, 'message', ${TEST_MESSAGE}::text), ${id},
                    ${traceparent}::text)
            RETURNING id::float8 AS id`
      })
      const readJournal = SqlSchema.findOneOption({
        Request: SubscriptionKey,
        Result: Schema.Struct({ journal: Schema.Array(JournalEntry) }),
        execute: ({ id, school_id }) =>
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
            WHERE s.school_id = ${school_id} AND s.id = ${id}`
      })
      const readDelivery = SqlSchema.findOneOption({
        Request: DeliveryKey,
        Result: Schema.Struct({ delivery: DeliveryDetail }),
        execute: ({ delivery_id, id, school_id }) =>
          sql`
            SELECT json_build_object(${journalFields},
              'body', d.body,
              'attempts_detail', coalesce((
                SELECT json_agg(json_build_object(
                  'attempt', a.attempt, 'at', api_ts(a.at), 'response_code', a.response_code,
                  'error', a.error, 'duration_ms', a.duration_ms,
                  -- the first 4 KiB the dispatcher kept, as text; an empty body is none (Attempt's response_excerpt)
                  'response_excerpt', nullif(a.response_body, '')) ORDER BY a.attempt)
                FROM webhook_attempts a
                WHERE a.school_id = d.school_id AND a.delivery_id = d.id
              ), '[]'::json)) AS delivery
            FROM webhook_deliveries d
            WHERE d.school_id = ${school_id} AND d.subscription_id = ${id} AND d.id = ${delivery_id}::int8`
      })
      // The new delivery, or none when the delivery repeated is not the subscription's.
      const insertResend = SqlSchema.findOneOption({
        Request: DeliveryKey,
        Result: Schema.Struct({ id: DeliveryId }),
        execute: ({ delivery_id, id, school_id }) =>
          sql`
            INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, resend_of, resend_key, body)
            SELECT school_id, subscription_id, event_id, event, id, nextval('webhook_deliveries_resend_key'), body
            FROM webhook_deliveries
            WHERE school_id = ${school_id} AND subscription_id = ${id} AND id = ${delivery_id}::int8
            RETURNING id::float8 AS id`
      })
      // One row: how many deliveries were queued.
      const insertRecovered = SqlSchema.findOne({
        Request: Schema.Struct({ ...SubscriptionKey.fields, since: Schema.String, which: RecoverWhich }),
        Result: Schema.Struct({ queued: Schema.Int }),
        execute: ({ id, school_id, since, which }) =>
          sql`
            WITH ended AS (
              -- One new delivery per event: the latest such delivery's body (NULL for a skipped one:
              -- the dispatcher builds it at the first attempt), resend_of that delivery. A skipped
              -- delivery's finished_at is when the fan-out journaled it.
              SELECT DISTINCT ON (d.event_id) d.id, d.event_id, d.event, d.body
              FROM webhook_deliveries d
              WHERE d.school_id = ${school_id} AND d.subscription_id = ${id}
                AND d.status = ${which === "skipped" ? sql`'skipped'` : sql`'failed'`}
                AND d.finished_at >= ${since}::timestamptz
                AND NOT EXISTS (
                  SELECT 1 FROM webhook_deliveries o
                  WHERE o.school_id = d.school_id AND o.subscription_id = d.subscription_id
                    AND o.event_id = d.event_id AND o.status IN ('pending', 'delivered')
                )
              ORDER BY d.event_id, d.id DESC
            ), queued AS (
              INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, resend_of, resend_key, body)
              SELECT ${school_id}, ${id}, event_id, event, id, nextval('webhook_deliveries_resend_key'), body FROM ended
              RETURNING 1
            )
            SELECT count(*)::int AS queued FROM queued`
      })

      return Webhooks.of({
        create: named("Webhooks.create", (schoolId, subscription, maxSubscriptions) =>
          sql.withTransaction(Effect.gen(function*() {
            // One creation of the school at a time, so the count below cannot miss a concurrent one
            // (docs/back-office.md "Webhook limits"). NO KEY UPDATE: the school's other writes, which
            // only take KEY SHARE through their foreign keys, do not wait for it.
            yield* sql`SELECT 1 FROM schools WHERE id = ${schoolId} FOR NO KEY UPDATE`
            // A statement of its own: its snapshot is taken after the lock, so it counts every committed creation.
            const created = yield* insertSubscription({
              school_id: schoolId,
              url: subscription.url,
              events: subscription.events,
              secret_ciphertext: subscription.secretCiphertext,
              max: maxSubscriptions
            })
            return Option.match(created, {
              onNone: (): Creation => ({ _tag: "LimitReached", limit: maxSubscriptions }),
              onSome: (value): Creation => ({ _tag: "Created", value })
            })
          })).pipe(Effect.orDie)),

        list: named("Webhooks.list", (schoolId, page) => {
          const { limit, offset } = toWindow(page)
          return readPage(
            // The school's subscriptions, not developers' local listeners (Listeners.ts).
            sql`SELECT count(*)::int AS total FROM webhook_subscriptions
                WHERE school_id = ${schoolId} AND listener_seen_at IS NULL`,
            sql`SELECT ${columns} FROM webhook_subscriptions s WHERE s.school_id = ${schoolId} AND s.listener_seen_at IS NULL
                ORDER BY s.id LIMIT ${limit} OFFSET ${offset}`
          )
        }),

        find: named("Webhooks.find", (schoolId, id) => findSubscription({ school_id: schoolId, id }).pipe(Effect.orDie)),

        update: named("Webhooks.update", (schoolId, id, change) =>
          updateSubscription({ school_id: schoolId, id, url: change.url, events: change.events }).pipe(Effect.orDie)),

        setEnabled: named("Webhooks.setEnabled", (schoolId, id, enabled) =>
          setStatus({ school_id: schoolId, id, enabled }).pipe(Effect.orDie)),

        remove: named("Webhooks.remove", (schoolId, id) =>
          sql.withTransaction(Effect.gen(function*() {
            const locked = yield* sql`
              SELECT id FROM webhook_subscriptions WHERE school_id = ${schoolId} AND id = ${id} FOR UPDATE`
            if (locked.length === 0) return false
            // After the lock, in a statement of its own: no delivery to the subscription can be made
            // meanwhile (the fan-out's insert waits for the lock), and this snapshot sees every one made
            // before. Every part sees the rows as they were before the statement, so an event is kept
            // when a delivery of ANOTHER subscription names it; the foreign keys are checked at the end
            // of the statement, when the deliveries, the events and the notifications' links are gone.
            const deleted = yield* deleteSubscription({ school_id: schoolId, id })
            return Option.isSome(deleted)
          })).pipe(
            Effect.retry({
              times: DELETE_ATTEMPTS - 1,
              while: (error) => error._tag === "SqlError" && error.reason._tag === "DeadlockError"
            }),
            Effect.orDie
          )),

        queueTest: named("Webhooks.queueTest", (schoolId, id, actionsPerMinute) =>
          whenEnabled(
            schoolId,
            id,
            actionsPerMinute,
            insertTestEvent({ school_id: schoolId, id, traceparent: currentTraceparent() }).pipe(
              Effect.map((row) => ({ _tag: "Queued", value: row.id }) as const)
            )
          )),

        journal: named("Webhooks.journal", (schoolId, id) =>
          readJournal({ school_id: schoolId, id }).pipe(
            Effect.map(Option.map((row) => row.journal)),
            Effect.orDie
          )),

        delivery: named("Webhooks.delivery", (schoolId, id, deliveryId) =>
          readDelivery({ school_id: schoolId, id, delivery_id: deliveryId }).pipe(
            Effect.map(Option.map((row) => row.delivery)),
            Effect.orDie
          )),

        resend: named("Webhooks.resend", (schoolId, id, deliveryId, actionsPerMinute) =>
          whenEnabled(
            schoolId,
            id,
            actionsPerMinute,
            insertResend({ school_id: schoolId, id, delivery_id: deliveryId }).pipe(
              Effect.map((row): Queued<DeliveryId> =>
                Option.match(row, {
                  onNone: () => ({ _tag: "NotFound", what: "delivery" }),
                  onSome: (row) => ({ _tag: "Queued", value: row.id })
                })
              )
            )
          )),

        recover: named("Webhooks.recover", (schoolId, id, since, which, actionsPerMinute) =>
          whenEnabled(
            schoolId,
            id,
            actionsPerMinute,
            insertRecovered({ school_id: schoolId, id, since, which }).pipe(
              Effect.map((row) => ({ _tag: "Queued", value: row.queued }) as const)
            )
          ))
      })
    })
  )
}
