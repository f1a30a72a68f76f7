/**
 * Local webhook listeners and sample events (docs/integrators.md "Receiving
 * webhooks on your machine"; docs/operations.md "Operator CLI"; migration
 * 1100): what `webhooks listen` and `webhooks trigger` do to the database.
 *
 * - A listener is a subscription with `listener_seen_at` set, at most
 *   MAX_LISTENERS open per school; listeners do not count against
 *   WEBHOOK_MAX_SUBSCRIPTIONS, nor show in the back office's list
 *   (Webhooks `create`, `list`, `find`). Fan-out makes
 *   its deliveries as for any subscription; the dispatcher never claims them
 *   (DeliveryQueue `claim`): the CLI that opened it claims them (`claim`,
 *   the same body and columns as the dispatcher's claim), sends them itself
 *   and records the attempts with DeliveryQueue `record`. It refreshes
 *   `listener_seen_at` (`heartbeat`) while it runs and deletes the
 *   subscription (Webhooks `remove`) when it stops; a listener not seen for
 *   `staleMs` (its CLI died) is removed by `removeStale`.
 * - A sample (`queueSample`) is an outbox event marked `sample`, addressed
 *   to one subscription like `webhook.test`, so fan-out gives it to that
 *   subscription only.
 *
 * Rows are decoded here; SQL and decode failures are defects.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import type { EventName, SubscribableEventName } from "@school/domain/Events"
import { ListenerLimitReached, SchoolNotFound } from "@school/domain/DomainErrors"
import * as Ids from "@school/domain/Ids"
import { WebhookId } from "@school/domain/WebhookSubscriptions"
import { Claimed, claimedColumnsSql, leasePickedSql } from "./DeliveryQueue.ts"
import { Webhooks } from "./Webhooks.ts"

/** A queued sample: its event's id and the subscription's school. */
export interface QueuedSample {
  readonly eventId: number
  readonly schoolId: Ids.SchoolId
}

/**
 * A listener not seen for this long is removed (its CLI died without Ctrl-C): ten heartbeats
 * missed (`HEARTBEAT_MS`).
 */
export const HEARTBEAT_MS = 30_000
export const STALE_AFTER_MS = 10 * HEARTBEAT_MS

/**
 * Listeners a school may have open at once. They do not count against
 * WEBHOOK_MAX_SUBSCRIPTIONS (a school's real subscriptions must not be
 * blocked by developers running `webhooks listen`), so they have a bound of
 * their own: each is a subscription row that fan-out gives every event of
 * the school, so listeners left open cost every write a delivery row each.
 * Ten is a team's developers each with a terminal or two open; a listener
 * whose CLI died stops counting once removed (STALE_AFTER_MS).
 */
export const MAX_LISTENERS = 10

const decodeId = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ id: WebhookId })))
const decodeClaimed = Schema.decodeUnknownEffect(Schema.Array(Claimed))
const decodeQueued = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ id: Schema.Number, school_id: Ids.SchoolId })))
const decodeStale = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ school_id: Ids.SchoolId, id: WebhookId })))

export class Listeners extends Context.Service<Listeners, {
  /** A new listener of the school for `events`, delivering to `url`: its subscription id. */
  open(
    schoolId: Ids.SchoolId,
    listener: {
      readonly url: string
      readonly events: ReadonlyArray<SubscribableEventName>
      readonly secretCiphertext: Uint8Array
    }
  ): Effect.Effect<WebhookId, SchoolNotFound | ListenerLimitReached>
  /** The listener is alive: `listener_seen_at` now. */
  heartbeat(schoolId: Ids.SchoolId, id: WebhookId): Effect.Effect<void>
  /** Up to `limit` of the listener's due deliveries, leased for `leaseMs`, with their bodies built. */
  claim(schoolId: Ids.SchoolId, id: WebhookId, limit: number, leaseMs: number): Effect.Effect<ReadonlyArray<Claimed>>
  /** Deletes the listener with its deliveries and sample events (Webhooks `remove`). */
  close(schoolId: Ids.SchoolId, id: WebhookId): Effect.Effect<boolean>
  /** Removes the listeners not seen for STALE_AFTER_MS (up to 100 a call): how many. */
  readonly removeStale: Effect.Effect<number>
  /** A sample `event` with `payloadJson`, addressed to subscription `id` only; None: no such subscription. */
  queueSample(id: WebhookId, event: EventName, payloadJson: string): Effect.Effect<Option.Option<QueuedSample>>
}>()("school/persistence/Listeners") {
  static readonly layer = Layer.effect(
    Listeners,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const webhooks = yield* Webhooks

      const open = Effect.fn("Listeners.open")(function*(
        schoolId: Ids.SchoolId,
        listener: {
          readonly url: string
          readonly events: ReadonlyArray<SubscribableEventName>
          readonly secretCiphertext: Uint8Array
        }
      ) {
        const opened = yield* sql.withTransaction(Effect.gen(function*() {
          // One opening (or back-office creation, Webhooks `create`) of the school at a time, so the count
          // below cannot miss a concurrent one; NO KEY UPDATE, as Webhooks `create` takes it.
          const school = yield* sql`SELECT 1 FROM schools WHERE id = ${schoolId} FOR NO KEY UPDATE`
          if (school.length === 0) return "no school" as const
          // A statement of its own: its snapshot is taken after the lock.
          const rows = yield* sql`
            INSERT INTO webhook_subscriptions (school_id, url, events, secret_ciphertext, listener_seen_at)
            SELECT ${schoolId}, ${listener.url}, ${listener.events}::text[], ${listener.secretCiphertext}, now()
            WHERE (SELECT count(*) FROM webhook_subscriptions
                   WHERE school_id = ${schoolId} AND listener_seen_at IS NOT NULL) < ${MAX_LISTENERS}
            RETURNING id`.pipe(Effect.flatMap(decodeId))
          return rows[0]?.id ?? ("full" as const)
        })).pipe(Effect.orDie)
        if (opened === "no school") return yield* new SchoolNotFound({ schoolId })
        if (opened === "full") return yield* new ListenerLimitReached({ schoolId, limit: MAX_LISTENERS })
        return opened
      })

      const heartbeat = Effect.fn("Listeners.heartbeat")(function*(schoolId: Ids.SchoolId, id: WebhookId) {
        yield* Effect.orDie(
          sql`UPDATE webhook_subscriptions SET listener_seen_at = now()
              WHERE school_id = ${schoolId} AND id = ${id} AND listener_seen_at IS NOT NULL`
        )
      })

      const claim = Effect.fn("Listeners.claim")(function*(
        schoolId: Ids.SchoolId,
        id: WebhookId,
        limit: number,
        leaseMs: number
      ) {
        return yield* sql`
          WITH picked AS (
            SELECT d.school_id, d.id FROM webhook_deliveries d
            WHERE d.school_id = ${schoolId} AND d.subscription_id = ${id}
              AND d.status = 'pending' AND d.next_attempt_at <= now()
              AND (d.lease_until IS NULL OR d.lease_until <= now())
            ORDER BY d.next_attempt_at, d.id
            LIMIT ${limit}
            FOR UPDATE SKIP LOCKED
          )
          ${leasePickedSql(sql, leaseMs)}
          RETURNING ${claimedColumnsSql(sql)}, 0 AS level`.pipe(Effect.flatMap(decodeClaimed), Effect.orDie)
      })

      const close = (schoolId: Ids.SchoolId, id: WebhookId) => webhooks.remove(schoolId, id)

      const removeStale = Effect.gen(function*() {
        const stale = yield* sql`
          SELECT school_id, id FROM webhook_subscriptions
          WHERE listener_seen_at IS NOT NULL
            AND listener_seen_at < now() - ${STALE_AFTER_MS}::float8 * interval '1 millisecond'
          ORDER BY listener_seen_at LIMIT 100`.pipe(Effect.flatMap(decodeStale), Effect.orDie)
        const removed = yield* Effect.forEach(stale, (row) => webhooks.remove(row.school_id, row.id))
        return removed.filter(Boolean).length
      }).pipe(Effect.withSpan("Listeners.removeStale"))

      const queueSample = Effect.fn("Listeners.queueSample")(function*(
        id: WebhookId,
        event: EventName,
        payloadJson: string
      ) {
        const rows = yield* sql`
          INSERT INTO outbox_events (school_id, event, payload, subscription_id, sample)
          SELECT school_id, ${event}, ${payloadJson}::json, id, true
          FROM webhook_subscriptions WHERE id = ${id}
          RETURNING id::float8 AS id, school_id`.pipe(Effect.flatMap(decodeQueued), Effect.orDie)
        return Option.map(Option.fromNullishOr(rows[0]), (row): QueuedSample => ({
          eventId: row.id,
          schoolId: row.school_id
        }))
      })

      return Listeners.of({ open, heartbeat, claim, close, removeStale, queueSample })
    })
  ).pipe(Layer.provide(Webhooks.layer))
}
