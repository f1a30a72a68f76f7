/**
 * The dispatcher delivering (docs/integrators.md "Receiving webhooks"; docs/decisions.md
 * "Webhooks"), in process over a real database and real receivers on
 * loopback, with the retry plan shortened to 100, 200 and 300 ms:
 *
 * - every attempt, retries included, carries both signatures, verified by
 *   independent code (node:crypto HMAC over the received bytes with
 *   timingSafeEqual; the `standardwebhooks` library); the body is
 *   byte-identical across attempts while `webhook-timestamp` is each
 *   attempt's own;
 * - 3 failures then a success: 4 attempts after the configured pauses,
 *   `delivered`;
 * - 4 failures: `failed`, the subscription `problematic`, the full-access
 *   staff (owner, administrator) notified once per transition, new events
 *   still delivered, and a success returns it to `active`;
 * - a disabled subscription's new events are journaled as `skipped` and
 *   nothing is sent for them, its pending retries wait; enabled again, they
 *   go on, and the skipped events stay skipped;
 * - resend and recovery rows (new deliveries with `resend_of`) go out like
 *   any other, with the same body.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac, timingSafeEqual } from "node:crypto"
import { Webhook } from "standardwebhooks"
import { startReceiver, ok, status } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

const header = (value: string | ReadonlyArray<string> | undefined): string => typeof value === "string" ? value : ""

const Body = Schema.Struct({
  event: Schema.String,
  account_id: Schema.Int,
  payload: Schema.Struct({ lead_id: Schema.Int, name: Schema.String, phone: Schema.String, source: Schema.String }),
  timestamp: Schema.String
})
const decodeBody = Schema.decodeUnknownSync(Schema.fromJsonString(Body))

/** Both signatures of one received request, checked as a receiver would. */
const verify = (secret: string, raw: Buffer, headers: Record<string, string | ReadonlyArray<string> | undefined>) => {
  const expected = createHmac("sha256", Buffer.from(secret, "utf8")).update(raw).digest()
  const sent = Buffer.from(header(headers["x-service-signature"]), "hex")
  assert.strictEqual(sent.length, expected.length)
  assert.isTrue(timingSafeEqual(sent, expected), "X-Service-Signature")
  new Webhook(secret).verify(raw.toString("utf8"), {
    "webhook-id": header(headers["webhook-id"]),
    "webhook-timestamp": header(headers["webhook-timestamp"]),
    "webhook-signature": header(headers["webhook-signature"])
  })
}

layer(TestDatabase.layer, { excludeTestServices: true })("the dispatcher delivers", (it) => {
  it.effect("3 failures then a success: 4 attempts after the pauses, both signatures on each, the same bytes", () =>
    Effect.gen(function*() {
      const { schoolId } = yield* T.school("Retry school")
      const receiver = yield* startReceiver((index) => index < 3 ? status(500, "try again") : ok)
      const sub = yield* T.subscription(schoolId, receiver.url)
      yield* T.runDispatcher()
      const [eventId] = yield* T.leads(schoolId, 1, "Anna")
      const received = yield* receiver.waitFor(4)
      const [first] = received
      assert.isDefined(first)
      if (first === undefined) return
      for (const request of received) {
        assert.isTrue(request.raw.equals(first.raw), "byte-identical body")
        verify(sub.secret, request.raw, request.headers)
        assert.strictEqual(request.method, "POST")
        assert.strictEqual(request.headers["content-type"], "application/json")
        assert.strictEqual(request.headers["user-agent"], "school-service-webhooks/1")
        assert.strictEqual(request.headers["x-service-event"], "lead.created")
        assert.strictEqual(request.headers["webhook-id"], first.headers["webhook-id"])
        assert.strictEqual(request.headers["x-service-delivery"], first.headers["webhook-id"])
        // webhook-timestamp is this attempt's own time (unix seconds).
        const stamp = Number(header(request.headers["webhook-timestamp"]))
        assert.approximately(stamp, request.at / 1000, 2)
      }
      // The pauses of the plan, measured at the receiver.
      const gaps = received.slice(1).map((request, i) => request.at - (received[i]?.at ?? 0))
      ;[100, 200, 300].forEach((pause, i) => {
        assert.isAtLeast(gaps[i] ?? 0, pause - 15, `pause ${i + 1}: ${gaps[i]}`)
        assert.isBelow(gaps[i] ?? 0, pause + 1_100, `pause ${i + 1}: ${gaps[i]}`)
      })
      const body = decodeBody(first.body)
      assert.deepStrictEqual(
        { event: body.event, account_id: body.account_id, payload: body.payload },
        {
          event: "lead.created",
          account_id: schoolId,
          payload: { lead_id: 1, name: "Anna 1", phone: "+79000000000", source: "api" }
        }
      )
      assert.match(body.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/)

      const [delivery] = yield* T.eventually("delivered", T.deliveries(schoolId), (rows) => rows[0]?.status === "delivered")
      assert.strictEqual(delivery?.attempts, 4)
      assert.strictEqual(delivery?.event_id, eventId)
      assert.strictEqual(delivery?.body, first.body)
      // The delivery's opaque id, never its number (docs/decisions.md "Delivery ids").
      assert.strictEqual(header(first.headers["webhook-id"]), delivery?.public_id)
      assert.match(delivery?.public_id ?? "", /^msg_[0-9a-f]{32}$/u)
      const attempts = yield* T.attempts(schoolId)
      assert.deepStrictEqual(attempts.map((a) => [a.attempt, a.response_code, a.error]), [
        [1, 500, null],
        [2, 500, null],
        [3, 500, null],
        [4, 204, null]
      ])
      assert.strictEqual(attempts[0]?.response_body, "try again")
      assert.strictEqual(yield* T.subscriptionStatus(schoolId, sub.id), "active")
    }))

  it.effect("4 failures: failed, problematic, full-access staff notified once; still receiving; a success: active", () =>
    Effect.gen(function*() {
      const { schoolId, staff } = yield* T.school("Failing school")
      const receiver = yield* startReceiver(() => status(503))
      const sub = yield* T.subscription(schoolId, receiver.url)
      yield* T.runDispatcher()
      // Two events in one statement: both fail 4 times; one transition, one notification per employee.
      yield* T.leads(schoolId, 2, "Boris")
      const failed = yield* T.eventually(
        "both failed",
        T.deliveries(schoolId),
        (rows) => rows.length === 2 && rows.every((row) => row.status === "failed")
      )
      assert.deepStrictEqual(failed.map((row) => row.attempts), [4, 4])
      assert.strictEqual(receiver.received.length, 8)
      assert.strictEqual(yield* T.subscriptionStatus(schoolId, sub.id), "problematic")
      const notified = yield* T.notifications(schoolId)
      assert.deepStrictEqual(
        notified.map((n) => [n.employee_id, n.kind, n.subscription_id]).sort(),
        [[staff["owner"] ?? 0, "subscription_problematic", sub.id], [staff["administrator"] ?? 0, "subscription_problematic", sub.id]].sort()
      )
      assert.include(notified[0]?.message ?? "", receiver.url)

      // Problematic, not disabled: a new event goes out, and its success makes the subscription active.
      receiver.setBehaviour(() => ok)
      yield* T.leads(schoolId, 1, "Vera")
      yield* T.eventually("active again", T.subscriptionStatus(schoolId, sub.id), (s) => s === "active")
      const rows = yield* T.deliveries(schoolId)
      assert.strictEqual(rows[2]?.status, "delivered")
      assert.strictEqual((yield* T.notifications(schoolId)).length, 2)

      // A second transition is notified again, once.
      receiver.setBehaviour(() => status(500))
      yield* T.leads(schoolId, 1, "Gleb")
      yield* T.eventually("problematic again", T.subscriptionStatus(schoolId, sub.id), (s) => s === "problematic")
      assert.strictEqual((yield* T.notifications(schoolId)).length, 4)
      yield* T.setStatus(schoolId, sub.id, "disabled")
    }))

  it.effect("a disabled subscription: events journaled as skipped, nothing sent, its pending retries wait; enabled, they go on", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { schoolId } = yield* T.school("Disabled school")
      const receiver = yield* startReceiver(() => status(500))
      const sub = yield* T.subscription(schoolId, receiver.url)
      yield* T.runDispatcher({ WEBHOOK_RETRY_DELAYS: "400ms,400ms,400ms" })
      yield* T.leads(schoolId, 1, "Dina")
      yield* receiver.waitFor(1)
      yield* T.setStatus(schoolId, sub.id, "disabled")
      yield* Effect.sleep("1500 millis")
      const attemptsWhileDisabled = receiver.received.length
      // The retry that was due while disabled did not go out (at most one already in flight at the switch).
      assert.isAtMost(attemptsWhileDisabled, 2)
      yield* T.leads(schoolId, 1, "Egor")
      const whileDisabled = yield* T.eventually("the event journaled as skipped", T.deliveries(schoolId), (rows) => rows.length === 2)
      assert.deepStrictEqual(whileDisabled.map((row) => [row.status, row.attempts]), [["pending", attemptsWhileDisabled], ["skipped", 0]])
      yield* Effect.sleep("500 millis")
      assert.strictEqual(receiver.received.length, attemptsWhileDisabled, "nothing sent for it")

      receiver.setBehaviour(() => ok)
      yield* T.setStatus(schoolId, sub.id, "active")
      const [row, skipped] = yield* T.eventually("retried and delivered", T.deliveries(schoolId), (rows) => rows[0]?.status === "delivered")
      assert.strictEqual(row?.attempts, attemptsWhileDisabled + 1)
      // Enabling sends nothing by itself: the skipped event stays skipped (recover sends it).
      yield* Effect.sleep("300 millis")
      assert.strictEqual(skipped?.status, "skipped")
      assert.strictEqual(receiver.received.length, attemptsWhileDisabled + 1)
      // The skipped event stays in the outbox while its journal entry does (recover needs its payload).
      const events = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox_events WHERE school_id = ${schoolId}`
      assert.strictEqual(events[0]?.n, 2)
    }))

  it.effect("resend and recovery rows go out like any other, with the stored body", () =>
    Effect.gen(function*() {
      const { schoolId } = yield* T.school("Resend school")
      const receiver = yield* startReceiver(() => status(500))
      const sub = yield* T.subscription(schoolId, receiver.url)
      yield* T.runDispatcher()
      yield* T.leads(schoolId, 1, "Fedor")
      const [failed] = yield* T.eventually("failed", T.deliveries(schoolId), (rows) => rows[0]?.status === "failed")
      receiver.setBehaviour(() => ok)
      // What the back office's resend writes (libs/persistence/src/Webhooks.ts).
      yield* T.resends(schoolId, failed, 1)
      const rows = yield* T.eventually("resent", T.deliveries(schoolId), (rows) => rows[1]?.status === "delivered")
      assert.strictEqual(rows[1]?.resend_of, failed?.id)
      assert.strictEqual(rows[1]?.attempts, 1)
      const last = receiver.received.at(-1)
      assert.strictEqual(last?.body, failed?.body ?? "")
      // A resend is a new delivery: a new opaque id.
      assert.strictEqual(header(last?.headers["webhook-id"]), rows[1]?.public_id)
      assert.notStrictEqual(rows[1]?.public_id, failed?.public_id)
      verify(sub.secret, last?.raw ?? Buffer.alloc(0), last?.headers ?? {})
    }))
})
