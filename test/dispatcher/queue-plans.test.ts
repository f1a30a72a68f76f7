/**
 * The dispatcher's connections keep keyed plans when the queue's tables
 * grow under them (apps/dispatcher/src/main.ts `sequentialScans: false`;
 * docs/decisions.md "The delivery queue", plans). A connection keeps a
 * statement's generic plan until an ANALYZE; one made while the tables were
 * small (a new school system, the minute after a purge) scanned the whole
 * table in the record's join and the fan-out's check for dropped events on
 * every call once a burst had grown it. Without the option the record and
 * the fan-out here scan `webhook_deliveries` after it has grown to 5 000 rows.
 */
import { assert, layer } from "@effect/vitest"
import { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import * as Sql from "@school/persistence/Sql"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

const claimOptions = { limit: 100, perSubscription: 10, leaseMs: 60_000, capacity: 200, reserve: 1, active: [], holding: [], after: 0 }
const GROWN = 5_000

const Scans = Schema.Array(Schema.Struct({ relname: Schema.String, seq_scan: Schema.Number }))

/** Three new events fanned out, claimed and recorded delivered: the dispatcher's statements once each. */
const round = Effect.fnUntraced(function*(schoolId: number) {
  const queue = yield* DeliveryQueue
  yield* T.leads(schoolId, 3)
  yield* queue.fanOut(100)
  const claimed = yield* queue.claim(claimOptions)
  yield* queue.record(claimed.map((delivery) => ({
    schoolId,
    id: delivery.id,
    lease: delivery.lease,
    attempt: delivery.attempt,
    at: new Date(),
    responseCode: 200,
    error: null,
    durationMs: 1,
    responseBody: "",
    outcome: "delivered" as const,
    pauseMs: 0
  })))
  return claimed.length
})

layer(TestDatabase.layer, { excludeTestServices: true })("the delivery queue's plans", (it) => {
  it.effect("stay keyed after the tables grow under a connection that planned them small", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      // One connection, as the dispatcher's are made: every statement below runs on it, with its plans.
      const context = yield* Layer.build(DeliveryQueue.layer.pipe(Layer.provideMerge(
        Sql.layer({ url: database.url, maxConnections: 1, applicationName: "test-queue-plans", sequentialScans: false })
      )))
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* Effect.gen(function*() {
        // Statistics that say small, as autovacuum leaves them on a quiet queue.
        yield* sql`ANALYZE outbox_events, webhook_deliveries, webhook_attempts`
        const { schoolId } = yield* T.school("Plans school")
        const subscription = yield* T.subscription(schoolId, "http://127.0.0.1:9/plans", ["lead.created"])
        // More rounds than the five custom plans PostgreSQL makes before it settles on a generic one.
        for (let i = 0; i < 7; i++) assert.strictEqual(yield* round(schoolId), 3)
        // A burst: the journal grows to 5 000 deliveries (and their events) under the same connection.
        yield* sql`
          WITH e AS (
            INSERT INTO outbox_events (school_id, event, payload, fanned_out_at)
            SELECT ${schoolId}, 'lead.created', json_build_object('lead_id', g), now() FROM generate_series(1, ${GROWN}::int) g
            RETURNING school_id, id
          )
          INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, status, attempts, finished_at)
          SELECT school_id, ${subscription.id}, id, 'lead.created', 'delivered', 1, now() FROM e`
        const scans = yield* sql.withTransaction(Effect.gen(function*() {
          assert.strictEqual(yield* round(schoolId), 3)
          return yield* sql`
            SELECT relname, seq_scan::int4 FROM pg_stat_xact_user_tables
            WHERE relname IN ('outbox_events', 'webhook_deliveries', 'webhook_attempts') ORDER BY relname`.pipe(
            Effect.flatMap(Schema.decodeUnknownEffect(Scans))
          )
        }))
        assert.deepStrictEqual(scans.map((row) => [row.relname, row.seq_scan]), [
          ["outbox_events", 0],
          ["webhook_attempts", 0],
          ["webhook_deliveries", 0]
        ])
      }).pipe(Effect.provide(context))
    }).pipe(Effect.scoped, Effect.orDie))
})
