/**
 * The delivery queue's statements on their own (libs/persistence/src/
 * DeliveryQueue.ts; docs/decisions.md "Webhooks"):
 *
 * - the fan-out: one delivery per subscription that ticked the event (a
 *   disabled one's journaled as `skipped`), `webhook.test` to its one
 *   subscription, idempotent (a delivery already there, as after a crash
 *   between insert and mark, is not made twice), an event nobody takes
 *   deleted; the unique index refuses a second fan-out delivery of an event
 *   to a subscription and takes any number of resends;
 * - the claim: the per-subscription cap counts live leases, due time first
 *   (a retry due long ago before the first attempts made after it),
 *   disabled subscriptions wait, an expired lease is taken over, a lease
 *   held is not (the fair share between schools: fair-share.test.ts);
 * - the record: only under the lease the claim gave;
 * - the purge: older than the retention and outside the last 50 of their
 *   subscription (skipped entries like delivered ones), never a delivery a
 *   resend names; an event goes with its last delivery; a run goes on while
 *   its batches come back full, and the next comes a second after a run that
 *   found work, the full interval after one that found none;
 * - the gauges: a disabled subscription's due work is not counted.
 */
import { assert, layer } from "@effect/vitest"
import * as Signature from "@school/domain/WebhookSignature"
import { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import { Duration, Effect, Layer, Option, Ref, Schedule } from "effect"
import * as Outage from "@school/dispatcher/Outage"
import * as Purge from "@school/dispatcher/Purge"
import { SqlClient } from "effect/sql"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

const Env = DeliveryQueue.layer.pipe(Layer.provideMerge(TestDatabase.layer))
const claimOptions = { limit: 100, perSubscription: 3, leaseMs: 60_000, capacity: 200, reserve: 1, active: [], holding: [], after: 0 }

/** Marks the school's pending deliveries delivered: a clean slate for the next test. */
const settle = (schoolId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE webhook_deliveries SET status = 'delivered', finished_at = now(), lease_until = NULL
               WHERE school_id = ${schoolId} AND status = 'pending'`
  }).pipe(Effect.orDie)

layer(Env, { excludeTestServices: true })("the delivery queue", (it) => {
  it.effect("fan-out: ticked (skipped when disabled); webhook.test to its one subscription; idempotent; untaken events deleted", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const queue = yield* DeliveryQueue
      const { schoolId } = yield* T.school("Fan-out school")
      const leadsOnly = yield* T.subscription(schoolId, "http://127.0.0.1:9/a", ["lead.created"])
      const students = yield* T.subscription(schoolId, "http://127.0.0.1:9/b", ["student.created"])
      const disabled = yield* T.subscription(schoolId, "http://127.0.0.1:9/c", ["lead.created"])
      yield* T.setStatus(schoolId, disabled.id, "disabled")
      const [lead] = yield* T.leads(schoolId, 1)
      // A delivery already made for this event (the crash case): the fan-out must not make a second.
      yield* sql`INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event)
                 VALUES (${schoolId}, ${leadsOnly.id}, ${lead ?? 0}, 'lead.created')`
      const [test] = yield* sql<{ id: string }>`
        INSERT INTO outbox_events (school_id, event, payload, subscription_id)
        VALUES (${schoolId}, 'webhook.test', json_build_object('subscription_id', ${students.id}::int, 'message', 'hi'), ${students.id})
        RETURNING id::text AS id`
      const [orphan] = yield* sql<{ id: string }>`
        INSERT INTO outbox_events (school_id, event, payload)
        VALUES (${schoolId}, 'payment.received', '{}'::json) RETURNING id::text AS id`
      const done = yield* queue.fanOut(500)
      assert.deepStrictEqual(done, { events: 3, deliveries: 1, skipped: 1 })
      const rows = yield* T.deliveries(schoolId)
      assert.deepStrictEqual(
        rows.map((row) => [row.subscription_id, row.event_id, row.status, row.attempts]),
        [[leadsOnly.id, lead, "pending", 0], [disabled.id, lead, "skipped", 0], [students.id, Number(test?.id), "pending", 0]]
      )
      const [skipped] = yield* sql<{ finished: boolean }>`
        SELECT finished_at IS NOT NULL AS finished FROM webhook_deliveries WHERE school_id = ${schoolId} AND status = 'skipped'`
      assert.isTrue(skipped?.finished, "a skipped delivery is finished: the purge and the journal's 50 treat it like any other")
      const events = yield* sql<{ id: string; fanned: boolean }>`
        SELECT id::text AS id, fanned_out_at IS NOT NULL AS fanned FROM outbox_events WHERE school_id = ${schoolId} ORDER BY id`
      assert.deepStrictEqual(events.map((e) => [e.id, e.fanned]), [[String(lead), true], [test?.id, true]])
      assert.isFalse(events.some((e) => e.id === orphan?.id), "an event no subscription takes is gone")
      assert.deepStrictEqual(yield* queue.fanOut(500), { events: 0, deliveries: 0, skipped: 0 })
      yield* settle(schoolId)
    }))

  it.effect("one delivery of an event per subscription from the fan-out, any number of resends (resend_key)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const queue = yield* DeliveryQueue
      const { schoolId } = yield* T.school("Event key school")
      const sub = yield* T.subscription(schoolId, "http://127.0.0.1:9/k", ["lead.created"])
      yield* T.leads(schoolId, 1)
      yield* queue.fanOut(500)
      const [first] = yield* T.deliveries(schoolId)
      // A second fan-out row of the same event and subscription: the unique index refuses it.
      const twice = yield* sql`INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event)
                               VALUES (${schoolId}, ${sub.id}, ${first?.event_id ?? 0}, 'lead.created')`.pipe(Effect.flip)
      assert.deepStrictEqual(
        twice.reason._tag === "UniqueViolation" ? twice.reason.constraint : twice.reason._tag,
        "webhook_deliveries_event_key"
      )
      // Two resends of it, as the back office writes them: each its own key.
      yield* T.resends(schoolId, first, 2)
      const keys = yield* sql<{ resend_of: string | null; resend_key: string }>`
        SELECT resend_of::text AS resend_of, resend_key::text AS resend_key FROM webhook_deliveries
        WHERE school_id = ${schoolId} ORDER BY id`
      assert.strictEqual(keys.length, 3)
      assert.deepStrictEqual(keys.map((k) => k.resend_of), [null, String(first?.id), String(first?.id)])
      assert.strictEqual(keys[0]?.resend_key, "0")
      assert.strictEqual(new Set(keys.map((k) => k.resend_key)).size, 3, "each resend has a key of its own, none 0")
      // Were the delivery they name ever gone (ON DELETE SET NULL), the resends would still be two resends.
      yield* sql`UPDATE webhook_deliveries SET resend_of = NULL WHERE school_id = ${schoolId} AND resend_of IS NOT NULL`
      assert.strictEqual((yield* T.deliveries(schoolId)).length, 3)
      yield* settle(schoolId)
    }))

  it.effect("claim: the cap counts live leases but those whose attempt ended, due time first, disabled waits, expired leases taken over", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const queue = yield* DeliveryQueue
      const { schoolId } = yield* T.school("Claim school")
      const busy = yield* T.subscription(schoolId, "http://127.0.0.1:9/busy", ["lead.created"])
      yield* T.leads(schoolId, 10)
      yield* queue.fanOut(500)
      const quiet = yield* T.subscription(schoolId, "http://127.0.0.1:9/quiet", ["lead.created"])
      const off = yield* T.subscription(schoolId, "http://127.0.0.1:9/off", ["lead.created"])
      yield* T.leads(schoolId, 2)
      yield* queue.fanOut(500)
      yield* T.setStatus(schoolId, off.id, "disabled")
      // One of busy's deliveries is a retry that fell due long ago.
      yield* sql`UPDATE webhook_deliveries SET attempts = 1, next_attempt_at = now() - interval '1 hour'
                 WHERE school_id = ${schoolId} AND id = (SELECT min(id) FROM webhook_deliveries WHERE school_id = ${schoolId})`

      const first = yield* queue.claim(claimOptions)
      const bySub = (rows: ReadonlyArray<{ readonly subscription_id: number }>, id: number) =>
        rows.filter((row) => row.subscription_id === id).length
      assert.strictEqual(bySub(first, busy.id), 3)
      assert.strictEqual(bySub(first, quiet.id), 2)
      assert.strictEqual(bySub(first, off.id), 0)
      // By due time: the retry that fell due an hour ago before the first attempts made since.
      const busyFirst = first.filter((row) => row.subscription_id === busy.id)
      assert.deepStrictEqual(busyFirst.map((row) => row.attempt).sort(), [1, 1, 2])
      for (const row of first) assert.match(row.public_id, /^msg_[0-9a-f]{32}$/u)
      assert.strictEqual(new Set(first.map((row) => row.public_id)).size, first.length)
      // The claim stored each first attempt's body, spelled as WebhookSignature.deliveryBody spells it:
      // the payload's stored text spliced in, the claim's time as the API writes times.
      const payloads = yield* sql<{ id: number; payload: string; body: string | null }>`
        SELECT d.id::float8 AS id, e.payload::text AS payload, d.body FROM webhook_deliveries d
        JOIN outbox_events e ON e.school_id = d.school_id AND e.id = d.event_id WHERE d.school_id = ${schoolId}`
      for (const row of first) {
        const stored = payloads.find((p) => p.id === row.id)
        const timestamp = String((JSON.parse(row.body) as { timestamp: unknown }).timestamp)
        assert.match(timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
        assert.strictEqual(
          row.body,
          Signature.deliveryBody({ event: "lead.created", accountId: schoolId, payloadJson: stored?.payload ?? "", timestamp })
        )
        assert.strictEqual(stored?.body, row.body, "stored before it is sent")
      }
      // Busy is at its cap while the leases live: nothing more.
      assert.strictEqual((yield* queue.claim(claimOptions)).length, 0)
      // The cap bounds requests in flight: a lease whose attempt ended and waits for its record, named by the
      // dispatcher that holds it, does not count; the same id named for another school changes nothing.
      const ended = first.find((row) => row.subscription_id === busy.id)
      assert.strictEqual((yield* queue.claim({ ...claimOptions, finished: [{ school: schoolId + 1, id: ended?.id ?? 0 }] })).length, 0)
      const beside = yield* queue.claim({ ...claimOptions, finished: [{ school: schoolId, id: ended?.id ?? 0 }] })
      assert.strictEqual(bySub(beside, busy.id), 1)
      assert.strictEqual(beside.length, 1)
      yield* queue.release(beside.map((row) => ({ schoolId: row.school_id, id: row.id, lease: row.lease })))
      assert.strictEqual((yield* queue.claim(claimOptions)).length, 0)

      // A lease that ran out (a dispatcher that died) is taken over; the attempts under it no longer record.
      const expired = first.find((row) => row.subscription_id === busy.id)
      yield* sql`UPDATE webhook_deliveries SET lease_until = now() - interval '1 second'
                 WHERE school_id = ${schoolId} AND id = ${expired?.id ?? 0}`
      // (The other due work of the school waits an hour meanwhile, so the claim can only take that one.)
      yield* sql`UPDATE webhook_deliveries SET next_attempt_at = next_attempt_at + interval '1 day'
                 WHERE school_id = ${schoolId} AND status = 'pending' AND lease_until IS NULL`
      const taken = yield* queue.claim(claimOptions)
      assert.deepStrictEqual(taken.map((row) => row.id), [expired?.id])
      assert.strictEqual(taken[0]?.body, expired?.body, "the body is built once: a takeover sends the same bytes")
      yield* sql`UPDATE webhook_deliveries SET next_attempt_at = next_attempt_at - interval '1 day'
                 WHERE school_id = ${schoolId} AND status = 'pending' AND lease_until IS NULL`
      const stale = yield* queue.record([{
        schoolId,
        id: expired?.id ?? 0,
        lease: expired?.lease ?? "",
        attempt: 1,
        at: new Date(),
        responseCode: 204,
        error: null,
        durationMs: 1,
        responseBody: "",
        outcome: "delivered",
        pauseMs: 0
      }])
      assert.strictEqual(stale.recorded, 0, "the old lease records nothing")
      const fresh = yield* queue.record([{
        schoolId,
        id: taken[0]?.id ?? 0,
        lease: taken[0]?.lease ?? "",
        attempt: 1,
        at: new Date(),
        responseCode: 204,
        error: null,
        durationMs: 1,
        responseBody: "",
        outcome: "delivered",
        pauseMs: 0
      }])
      assert.strictEqual(fresh.recorded, 1)
      // One slot of busy is free again: the next of its first attempts by due time.
      const next = yield* queue.claim(claimOptions)
      assert.strictEqual(bySub(next, busy.id), 1)
      assert.strictEqual(next[0]?.attempt, 1)
      yield* settle(schoolId)
    }))

  it.effect("gauges: due work of a disabled subscription is not counted, so disabling one fires no backlog alert", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const queue = yield* DeliveryQueue
      const { schoolId } = yield* T.school("Gauges school")
      const on = yield* T.subscription(schoolId, "http://127.0.0.1:9/on", ["lead.created"])
      const off = yield* T.subscription(schoolId, "http://127.0.0.1:9/off", ["lead.created"])
      yield* T.leads(schoolId, 3)
      yield* queue.fanOut(500)
      // Both have 3 deliveries due since a minute ago.
      yield* sql`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 minute' WHERE school_id = ${schoolId}`
      const before = yield* queue.gauges()
      assert.isAtLeast(before.due, 6)
      assert.isAtLeast(before.oldestDueAgeSeconds, 59)
      yield* T.setStatus(schoolId, off.id, "disabled")
      const after = yield* queue.gauges()
      assert.strictEqual(before.due - after.due, 3, "the disabled subscription's 3 are not due")
      // Only the disabled one waits: nothing is due, the oldest age is 0.
      yield* T.setStatus(schoolId, on.id, "disabled")
      const none = yield* queue.gauges()
      assert.strictEqual(before.due - none.due, 6)
      yield* T.setStatus(schoolId, on.id, "active")
      yield* T.setStatus(schoolId, off.id, "active")
      yield* settle(schoolId)
    }))

  it.effect("purge: old, outside the last 50, not named by a resend; the event goes with its last delivery", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const queue = yield* DeliveryQueue
      const { schoolId } = yield* T.school("Purge school")
      yield* T.subscription(schoolId, "http://127.0.0.1:9/p", ["lead.created"])
      yield* T.leads(schoolId, 60)
      yield* queue.fanOut(500)
      // All 60 finished 40 days ago, delivered or (every third) skipped while disabled: skipped entries follow
      // the same retention and the same last 50; a resend of the oldest, delivered last week.
      yield* sql`UPDATE webhook_deliveries
                 SET status = CASE WHEN id % 3 = 0 THEN 'skipped' ELSE 'delivered' END, finished_at = now() - interval '40 days'
                 WHERE school_id = ${schoolId}`
      const rows = yield* T.deliveries(schoolId)
      const oldest = rows[0]
      yield* T.resends(schoolId, oldest, 1, 7)
      const purged = yield* queue.purge({ retentionMs: 30 * 86_400_000, keep: 50, batch: 500 })
      // 61 deliveries, the last 50 kept, the oldest kept for its resend: 10 purged, with their 10 events.
      assert.deepStrictEqual(purged, { deliveries: 10, events: 10 })
      const left = yield* T.deliveries(schoolId)
      assert.strictEqual(left.length, 51)
      assert.isTrue(left.some((row) => row.status === "skipped"), "skipped entries among the journal's last 50")
      assert.strictEqual(left[0]?.id, oldest?.id)
      assert.deepStrictEqual(yield* queue.purge({ retentionMs: 30 * 86_400_000, keep: 50, batch: 500 }), {
        deliveries: 0,
        events: 0
      })
      const [events] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox_events WHERE school_id = ${schoolId}`
      assert.strictEqual(events?.n, 50)
    }))
  it.effect("a purge run goes on while its batches come back full, within its time budget", () =>
    Effect.gen(function*() {
      const queue = yield* DeliveryQueue
      const { schoolId } = yield* T.school("Purge budget school")
      yield* T.subscription(schoolId, "http://127.0.0.1:9/b", ["lead.created"])
      yield* T.leads(schoolId, 1)
      yield* queue.fanOut(500)
      const [first] = yield* T.deliveries(schoolId)
      // 1 300 resends of it, delivered 40 days ago: 1 250 past the journal's last 50 (the first stays, named by them).
      yield* T.resends(schoolId, first, 1300, 40)
      const retention = Duration.days(30)
      // No budget left after the first batch: one batch of 500.
      const short = yield* Purge.once(queue, retention, Duration.zero)
      assert.strictEqual(short.deliveries, 500)
      // Budget enough: the rest, 500 then 250 (a short batch ends the run).
      const rest = yield* Purge.once(queue, retention, Duration.minutes(1))
      assert.strictEqual(rest.deliveries, 750)
      assert.strictEqual((yield* T.deliveries(schoolId)).length, 51)
    }))

  it.effect("the purge runs again a second after a run that found work, the full interval after one that found none", () =>
    Effect.gen(function*() {
      const queue = yield* DeliveryQueue
      const { schoolId } = yield* T.school("Purge schedule school")
      yield* T.subscription(schoolId, "http://127.0.0.1:9/s", ["lead.created"])
      yield* T.leads(schoolId, 1)
      yield* queue.fanOut(500)
      const [first] = yield* T.deliveries(schoolId)
      /** `count` resends of the first delivery, delivered 40 days ago; each pushes one more out of the journal's last 50. */
      const finishedLongAgo = (count: number) => T.resends(schoolId, first, count, 40)
      const left = Effect.map(T.deliveries(schoolId), (rows) => rows.length)
      /** Polls `left` every 100 ms until it is `n`: whether it got there within `within`. */
      const reaches = (n: number, within: Duration.Duration) =>
        Effect.repeat(left, { until: (count) => count === n, schedule: Schedule.spaced(Duration.millis(100)) }).pipe(
          Effect.timeoutOption(within),
          Effect.map(Option.isSome)
        )
      const statements = yield* Ref.make(0)
      const listenerRuns = yield* Ref.make(0)
      const counted: DeliveryQueue["Service"] = {
        ...queue,
        purge: (options) => Effect.tap(queue.purge(options), () => Ref.update(statements, (n) => n + 1))
      }
      // The dispatcher's interval of a minute; its first run 2 s from now.
      yield* Effect.forkScoped(Purge.run({
        queue: counted,
        outage: yield* Outage.make,
        retention: Duration.days(30),
        every: Duration.minutes(1),
        soon: Duration.seconds(1),
        removeStaleListeners: Effect.as(Ref.update(listenerRuns, (n) => n + 1), 0)
      }))
      // 50 past the retention every 200 ms for 5 s, the journal's last 50 among them: the first run
      // purges what came before it; the rest come after it, each a run a second later takes.
      for (let i = 0; i < 25; i++) {
        yield* finishedLongAgo(50)
        yield* Effect.sleep(Duration.millis(200))
      }
      assert.isTrue(
        yield* reaches(51, Duration.seconds(4)),
        "what came after the first run is gone within seconds (a run a minute would leave it for a minute)"
      )
      // Nothing more to find: one run finds nothing, and the next waits the full minute.
      yield* Effect.sleep(Duration.millis(2_500))
      const settled = yield* Ref.get(statements)
      yield* Effect.sleep(Duration.millis(2_500))
      assert.strictEqual(yield* Ref.get(statements), settled, "no statement while there is nothing to purge")
      assert.strictEqual(yield* Ref.get(listenerRuns), 1, "the stale listeners once per interval, not once per run")
    }).pipe(Effect.scoped))
})
