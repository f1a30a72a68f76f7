/**
 * Each back-office action → its webhook event, end to end through the real
 * processes (docs/integrators.md "Event catalog"; docs/decisions.md "Webhooks"): the API
 * process and the dispatcher process on one test database, a real receiver
 * on loopback. An owner signs in and subscribes with `POST /webhooks` (the
 * secret shown once), then registers a student (`student.created`), enrolls
 * them (`group.enrolled`), marks attendance 2 (nothing) then 1
 * (`lesson.completed`), posts two payments (`payment.received`, amounts in
 * roubles in the raw body text: 150050 kopecks → `"amount":1500.5`), creates
 * a lead (`lead.created`), sends a test event (`webhook.test`) and resends a
 * delivered delivery (the same body bytes again under a new delivery id).
 * Then the subscription is disabled: three leads are journaled `skipped`
 * and nothing is sent; enabled, nothing is sent; `recover` with `which:
 * "skipped"` sends exactly those three, as new deliveries.
 *
 * Every arrival is checked as a receiver would: `X-Service-Event`, the
 * body's `event` and `account_id`, its fields and their order, the payload
 * decoded strictly with the catalog's schema (libs/domain/src/Events.ts: no
 * field more or less, integers as JSON integers), and both signatures
 * verified by code independent of the dispatcher's (node:crypto HMAC over
 * the raw bytes with `timingSafeEqual`; `standardwebhooks`' `Webhook.verify`),
 * and `webhook-id` = `X-Service-Delivery` = the journal's opaque `webhook_id`.
 * In the end nothing else arrived, and the journal shows every delivery
 * delivered at the first attempt.
 */
import { assert, layer } from "@effect/vitest"
import { Enrollments, Events, Leads, Models } from "@school/domain"
import * as Records from "@school/domain/SchoolRecords"
import { TEST_MESSAGE } from "@school/persistence/Webhooks"
import { freePort } from "@school/runtime/Ports"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac, timingSafeEqual } from "node:crypto"
import { Webhook } from "standardwebhooks"
import * as BackOffice from "../support/BackOffice.ts"
import { type RawReply, rawClient } from "../support/Clients.ts"
import { startApi, startDispatcher } from "../support/Processes.ts"
import { type Received, startReceiver } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

/**
 * Both processes: loopback receivers allowed, short pauses (no retry is expected here), and a
 * time-out no loaded CI machine reaches with a receiver on loopback (this test is not about
 * time-outs; test/dispatcher/failures.test.ts is).
 */
const SETTINGS = {
  WEBHOOK_ALLOW_INSECURE_URLS: "true",
  WEBHOOK_RETRY_DELAYS: "100ms,200ms,300ms",
  WEBHOOK_TIMEOUT: "5s"
}

const CATALOG = ["student.created", "lead.created", "group.enrolled", "lesson.completed", "payment.received"] as const

const Subscribed = BackOffice.CreatedWebhook
const Queued = Schema.Struct({ event_id: Schema.Int })
const Resent = Schema.Struct({ delivery_id: Schema.Int })
const JournalEntry = Schema.Struct({
  id: Schema.Int,
  webhook_id: Schema.String,
  event: Schema.String,
  status: Schema.Literals(["pending", "delivered", "failed", "skipped"]),
  response_code: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  created_at: Schema.String,
  last_attempt_at: Schema.NullOr(Schema.String),
  next_attempt_at: Schema.NullOr(Schema.String)
})

/** Polls `get` every 50 ms until `check` holds (dies after 10 s). */
const poll = <A>(what: string, get: Effect.Effect<A>, check: (value: A) => boolean): Effect.Effect<A> =>
  Effect.gen(function*() {
    const started = Date.now()
    while (true) {
      const value = yield* get
      if (check(value)) return value
      if (Date.now() - started > 10_000) return yield* Effect.die(new Error(`not within 10 s: ${what}`))
      yield* Effect.sleep("50 millis")
    }
  })

/** The delivery body (docs/integrators.md "Receiving webhooks"), its payload left to the event's schema. */
const Envelope = Schema.Struct({
  event: Events.EventName,
  account_id: Schema.Int,
  payload: Schema.Unknown,
  timestamp: Schema.String
})

/** The catalog's field order per event (docs/integrators.md "Event catalog"; webhook.test: docs/decisions.md "Webhooks"). */
const ORDER: Readonly<Record<Events.EventName, ReadonlyArray<string>>> = {
  "student.created": ["student_id", "student_name", "filial_id"],
  "lead.created": ["lead_id", "name", "phone", "source"],
  "group.enrolled": ["enrollment_id", "student_id", "group_id", "group_name", "filial_id"],
  "lesson.completed": ["student_id", "lesson_id", "group_id", "teacher_id", "visit_status", "filial_id"],
  "payment.received": ["student_id", "payment_id", "amount", "payment_amount", "payment_type", "group_id", "filial_id"],
  "webhook.test": ["subscription_id", "message"]
}

/** ISO 8601 with an offset. */
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/u

const header = (request: Received, name: string): string => {
  const value = request.headers[name]
  assert.isString(value, `header ${name}`)
  return typeof value === "string" ? value : ""
}

/** X-Service-Signature, checked the way a receiver writes it: HMAC over the raw bytes, compared in constant time. */
const verifyServiceSignature = (request: Received, secret: string): void => {
  const sent = header(request, "x-service-signature")
  assert.match(sent, /^[0-9a-f]{64}$/u)
  const expected = createHmac("sha256", Buffer.from(secret, "utf8")).update(request.raw).digest()
  const given = Buffer.from(sent, "hex")
  assert.strictEqual(given.length, expected.length)
  assert.isTrue(timingSafeEqual(given, expected), "X-Service-Signature does not verify")
}

/** Standard Webhooks, checked with the public library (throws when it does not verify). */
const verifyStandardSignature = (request: Received, secret: string): void => {
  new Webhook(secret).verify(request.raw.toString("utf8"), {
    "webhook-id": header(request, "webhook-id"),
    "webhook-timestamp": header(request, "webhook-timestamp"),
    "webhook-signature": header(request, "webhook-signature")
  })
}

/**
 * The number text of `key` in a raw JSON body, exactly as sent (`"amount" : 1500.5` → `1500.5`;
 * JSON allows whitespace around the colon, and the stored payload keeps PostgreSQL's).
 */
const rawNumber = (text: string, key: string): string => {
  const matches = [...text.matchAll(new RegExp(`"${key}"\\s*:\\s*(-?[0-9][0-9.eE+-]*)\\s*[,}]`, "gu"))]
  assert.strictEqual(matches.length, 1, `one number ${key} in ${text}`)
  return matches[0]?.[1] ?? ""
}

interface Arrival {
  readonly request: Received
  /** The delivery's opaque id (docs/decisions.md "Delivery ids"). */
  readonly webhookId: string
  readonly payload: unknown
}

/**
 * Checks one arrival of `event` for `schoolId` signed with `secret` and
 * returns its payload decoded strictly with the catalog's schema.
 */
const arrival = (request: Received, event: Events.EventName, schoolId: number, secret: string): Arrival => {
  assert.strictEqual(request.method, "POST")
  assert.strictEqual(request.path, "/hook")
  assert.strictEqual(header(request, "x-service-event"), event)
  assert.strictEqual(header(request, "content-type"), "application/json")
  assert.strictEqual(header(request, "user-agent"), "school-service-webhooks/1")
  const webhookId = header(request, "x-service-delivery")
  assert.match(webhookId, /^msg_[0-9a-f]{32}$/u)
  assert.strictEqual(header(request, "webhook-id"), webhookId)
  const seconds = Number(header(request, "webhook-timestamp"))
  assert.isTrue(Number.isInteger(seconds) && Math.abs(seconds - Date.now() / 1000) < 60, `webhook-timestamp ${seconds}`)
  verifyServiceSignature(request, secret)
  verifyStandardSignature(request, secret)

  const parsed: unknown = JSON.parse(request.body)
  const body = Schema.decodeUnknownSync(Envelope)(parsed, Events.strict)
  assert.deepStrictEqual(typeof parsed === "object" && parsed !== null ? Object.keys(parsed) : [], [
    "event",
    "account_id",
    "payload",
    "timestamp"
  ])
  assert.strictEqual(body.event, event)
  assert.strictEqual(body.account_id, schoolId)
  assert.match(body.timestamp, ISO_WITH_OFFSET)
  assert.isBelow(Math.abs(Date.parse(body.timestamp) - Date.now()), 60_000, body.timestamp)
  const payload = Schema.decodeUnknownSync(Events.payloads[event])(body.payload, Events.strict)
  assert.deepStrictEqual(
    typeof body.payload === "object" && body.payload !== null ? Object.keys(body.payload) : [],
    ORDER[event]
  )
  return { request, webhookId, payload }
}

layer(TestDatabase.layer, { excludeTestServices: true })("back-office events end to end", (it) => {
  it.effect("each back-office action → its event at the receiver, from the dispatcher process, signed twice", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const sql = yield* SqlClient.SqlClient
      const school = yield* BackOffice.staffSchool("pro")
      const { schoolId, filialId } = school
      const receiver = yield* startReceiver()
      const port = yield* freePort
      const [, dispatcher] = yield* Effect.all([startApi(database.url, port, SETTINGS), startDispatcher(database.url, SETTINGS)], {
        concurrency: 2
      })

      // The owner signs in on the API process and calls the back office with the session token.
      const api = rawClient(`http://127.0.0.1:${port}`)
      const signedIn = yield* api.post(`${BackOffice.CRM}/sessions`, {
        body: { email: school.emails.owner, password: BackOffice.PASSWORD }
      })
      const { token } = BackOffice.dataOf(
        Schema.Struct({ token: Schema.String, expires_at: Schema.String, employee: Schema.Unknown }),
        signedIn,
        201
      )
      const post = (path: string, body?: unknown): Effect.Effect<RawReply> =>
        api.request(`${BackOffice.CRM}${path}`, {
          method: "POST",
          headers: { authorization: `Session ${token}` },
          ...(body === undefined ? {} : { body })
        }).pipe(Effect.orDie)
      const get = (path: string): Effect.Effect<RawReply> =>
        api.request(`${BackOffice.CRM}${path}`, { headers: { authorization: `Session ${token}` } }).pipe(Effect.orDie)

      /** Arrivals taken by `next` so far. */
      let arrived = 0
      /** The next arrival (the arrivals taken so far plus one), checked as `event`. */
      const next = (event: Events.EventName) =>
        Effect.gen(function*() {
          // Counted, not read from the receiver when called: an arrival can come before the action's own
          // answer has reached this test (both are answered on this process's one event loop).
          const count = arrived
          arrived += 1
          const all = yield* receiver.waitFor(count + 1, 10_000).pipe(
            // An arrival that does not come: what the outbox, the journal and the dispatcher say, for the report.
            Effect.onExit((exit) =>
              exit._tag === "Success" ? Effect.void : Effect.gen(function*() {
                const outbox = yield* sql`SELECT id, event, fanned_out_at FROM outbox_events WHERE school_id = ${schoolId} ORDER BY id`
                const journal = yield* sql`
                  SELECT d.id, d.event, d.status, d.attempts, d.lease_until, d.next_attempt_at, a.error, a.response_code
                  FROM webhook_deliveries d LEFT JOIN webhook_attempts a ON a.school_id = d.school_id AND a.delivery_id = d.id
                  WHERE d.school_id = ${schoolId} ORDER BY d.id, a.attempt`
                yield* Effect.logError("arrival missing", { event, count, outbox, journal, dispatcherLog: dispatcher.log() })
              }).pipe(Effect.orDie)
            )
          )
          const request = all[count]
          if (request === undefined) return yield* Effect.die(new Error("no arrival"))
          return arrival(request, event, schoolId, subscription.secret)
        })

      // Subscribe: every catalog event, the secret shown once.
      const subscription = BackOffice.dataOf(
        Subscribed,
        yield* post("/webhooks", { url: receiver.url, events: [...CATALOG].reverse() }),
        201
      )
      assert.strictEqual(subscription.url, receiver.url)
      assert.deepStrictEqual(subscription.events, CATALOG)
      assert.match(subscription.secret, /^whsec_[A-Za-z0-9+/]{43}=$/u)

      // student.created
      const student = BackOffice.dataOf(
        Models.StudentCard,
        yield* post("/students", { fio: "Anna Smirnova", phone: "+7 900 123-45-67", filial_id: filialId }),
        201
      )
      const created = yield* next("student.created")
      assert.deepStrictEqual(created.payload, { student_id: student.id, student_name: "Anna Smirnova", filial_id: filialId })

      // group.enrolled
      const group = BackOffice.dataOf(
        Models.Group,
        yield* post("/groups", { name: "English B1", filial_id: filialId, capacity: 4, teacher_id: school.ids.teacher }),
        201
      )
      const enrollment = BackOffice.dataOf(
        Enrollments.Enrollment,
        yield* post(`/students/${student.id}/enrollments`, { group_id: group.id }),
        201
      )
      const enrolled = yield* next("group.enrolled")
      assert.deepStrictEqual(enrolled.payload, {
        enrollment_id: enrollment.id,
        student_id: student.id,
        group_id: group.id,
        group_name: "English B1",
        filial_id: filialId
      })

      // Attendance: 2 (absent) raises nothing, then 1 (attended) raises lesson.completed.
      const lesson = BackOffice.dataOf(
        Models.Lesson,
        yield* post("/lessons", { group_id: group.id, starts_at: "2026-06-01T09:00:00Z", ends_at: "2026-06-01T10:00:00Z" }),
        201
      )
      BackOffice.dataOf(Records.AttendanceMark, yield* post(`/lessons/${lesson.id}/attendance`, { student_id: student.id, visit_status: 2 }))
      BackOffice.dataOf(Records.AttendanceMark, yield* post(`/lessons/${lesson.id}/attendance`, { student_id: student.id, visit_status: 1 }))
      const completed = yield* next("lesson.completed")
      assert.deepStrictEqual(completed.payload, {
        student_id: student.id,
        lesson_id: lesson.id,
        group_id: group.id,
        teacher_id: school.ids.teacher,
        visit_status: 1,
        filial_id: filialId
      })

      // payment.received: roubles with kopecks after the point, in the raw text itself (docs/integrators.md "Event catalog").
      const payment = BackOffice.dataOf(
        Models.Payment,
        yield* post("/payments", { student_id: student.id, amount_kopecks: 150050, payment_type: "card", group_id: group.id }),
        201
      )
      const paid = yield* next("payment.received")
      assert.deepStrictEqual(paid.payload, {
        student_id: student.id,
        payment_id: payment.id,
        amount: 1500.5,
        payment_amount: 1500.5,
        payment_type: "card",
        group_id: group.id,
        filial_id: filialId
      })
      assert.strictEqual(rawNumber(paid.request.body, "amount"), "1500.5")
      assert.strictEqual(rawNumber(paid.request.body, "payment_amount"), "1500.5")
      // Without a group: group_id 0, and one kopeck is 0.01.
      const small = BackOffice.dataOf(
        Models.Payment,
        yield* post("/payments", { student_id: student.id, amount_kopecks: 1, payment_type: "cash" }),
        201
      )
      const paidSmall = yield* next("payment.received")
      assert.deepStrictEqual(paidSmall.payload, {
        student_id: student.id,
        payment_id: small.id,
        amount: 0.01,
        payment_amount: 0.01,
        payment_type: "cash",
        group_id: 0,
        filial_id: filialId
      })
      assert.strictEqual(rawNumber(paidSmall.request.body, "amount"), "0.01")
      assert.strictEqual(rawNumber(paidSmall.request.body, "payment_amount"), "0.01")
      assert.strictEqual(rawNumber(paidSmall.request.body, "group_id"), "0")

      // lead.created from the CRM: source "crm" when none is given.
      const lead = BackOffice.dataOf(
        Leads.CrmLead,
        yield* post("/leads", { name: "Ivan Petrov", phone: "+7 (999) 123-45-67" }),
        201
      )
      const leadCreated = yield* next("lead.created")
      assert.deepStrictEqual(leadCreated.payload, {
        lead_id: lead.id,
        name: "Ivan Petrov",
        phone: "+7 (999) 123-45-67",
        source: "crm"
      })

      // webhook.test
      BackOffice.dataOf(Queued, yield* post(`/webhooks/${subscription.id}/test`), 202)
      const tested = yield* next("webhook.test")
      assert.deepStrictEqual(tested.payload, { subscription_id: subscription.id, message: TEST_MESSAGE })

      // Resend a delivered delivery: the same bytes again, under a new delivery id.
      const journal = BackOffice.dataOf(Schema.Array(JournalEntry), yield* get(`/webhooks/${subscription.id}/deliveries`))
      const original = journal.find((entry) => entry.webhook_id === created.webhookId)
      assert.deepStrictEqual(
        original === undefined ? undefined : [original.event, original.status, original.response_code, original.attempts],
        ["student.created", "delivered", 204, 1]
      )
      const { delivery_id } = BackOffice.dataOf(
        Resent,
        yield* post(`/webhooks/${subscription.id}/deliveries/${original?.id ?? 0}/resend`),
        202
      )
      const resent = yield* next("student.created")
      const afterResend = BackOffice.dataOf(Schema.Array(JournalEntry), yield* get(`/webhooks/${subscription.id}/deliveries`))
      assert.strictEqual(afterResend.find((entry) => entry.id === delivery_id)?.webhook_id, resent.webhookId)
      assert.notStrictEqual(resent.webhookId, created.webhookId)
      assert.isTrue(resent.request.raw.equals(created.request.raw), "a resend carries the original body bytes")
      assert.strictEqual(header(resent.request, "x-service-signature"), header(created.request, "x-service-signature"))
      assert.deepStrictEqual(resent.payload, created.payload)

      // Nothing else arrives (the absent mark raised nothing), and the journal shows each delivery once, delivered.
      const arrivals = [created, enrolled, completed, paid, paidSmall, leadCreated, tested, resent]
      yield* Effect.sleep("300 millis")
      assert.strictEqual(receiver.received.length, arrivals.length)
      assert.strictEqual(new Set(arrivals.map((a) => a.webhookId)).size, arrivals.length)
      const waiting = yield* sql<{ count: number }>`
        SELECT count(*)::int AS count FROM outbox_events WHERE school_id = ${schoolId} AND fanned_out_at IS NULL`.pipe(
        Effect.orDie
      )
      assert.deepStrictEqual(waiting, [{ count: 0 }])
      const final = BackOffice.dataOf(Schema.Array(JournalEntry), yield* get(`/webhooks/${subscription.id}/deliveries`))
      assert.deepStrictEqual(
        final.map((entry) => JSON.stringify([entry.webhook_id, entry.event, entry.status, entry.response_code, entry.attempts, entry.next_attempt_at])).sort(),
        arrivals.map((a) => JSON.stringify([a.webhookId, header(a.request, "x-service-event"), "delivered", 204, 1, null])).sort()
      )

      // Disabled: each event it would have received is journaled as skipped, and nothing is sent.
      BackOffice.dataOf(Schema.Unknown, yield* post(`/webhooks/${subscription.id}/disable`))
      const since = new Date(Date.now() - 1_000).toISOString()
      const skippedLeads: Array<number> = []
      for (const name of ["Skipped One", "Skipped Two", "Skipped Three"]) {
        const made = BackOffice.dataOf(Leads.CrmLead, yield* post("/leads", { phone: "+7 900 000-00-01", name }), 201)
        skippedLeads.push(made.id)
      }
      const journalOf = get(`/webhooks/${subscription.id}/deliveries`).pipe(
        Effect.map((reply) => BackOffice.dataOf(Schema.Array(JournalEntry), reply))
      )
      const skipped = (yield* poll("three skipped entries", journalOf, (entries) => entries.filter((e) => e.status === "skipped").length === 3))
        .filter((entry) => entry.status === "skipped")
      for (const entry of skipped) {
        assert.deepStrictEqual(
          [entry.event, entry.attempts, entry.response_code, entry.last_attempt_at, entry.next_attempt_at],
          ["lead.created", 0, null, null, null]
        )
      }
      const SkippedCount = Schema.Struct({
        id: Schema.Int,
        url: Schema.String,
        events: Schema.Array(Schema.String),
        status: Schema.String,
        skipped_events: Schema.Int,
        created_at: Schema.String,
        updated_at: Schema.String
      })
      assert.strictEqual(BackOffice.dataOf(SkippedCount, yield* get(`/webhooks/${subscription.id}`)).skipped_events, 3)
      assert.strictEqual(receiver.received.length, arrivals.length, "nothing sent while disabled")

      // Enabled: nothing is sent by itself.
      BackOffice.dataOf(Schema.Unknown, yield* post(`/webhooks/${subscription.id}/enable`))
      yield* Effect.sleep("500 millis")
      assert.strictEqual(receiver.received.length, arrivals.length, "enabling sends nothing")

      // recover which=skipped: exactly those three, as new deliveries.
      const recovered = BackOffice.dataOf(
        Schema.Struct({ queued: Schema.Int }),
        yield* post(`/webhooks/${subscription.id}/recover`, { since, which: "skipped" }),
        202
      )
      assert.strictEqual(recovered.queued, 3)
      const sent = [yield* next("lead.created"), yield* next("lead.created"), yield* next("lead.created")]
      assert.deepStrictEqual(
        sent.map((a) => Number((a.payload as { readonly lead_id: unknown }).lead_id)).sort((x, y) => x - y),
        [...skippedLeads].sort((x, y) => x - y)
      )
      for (const a of sent) assert.notInclude(skipped.map((e) => e.webhook_id), a.webhookId, "a recovery is a new delivery")
      yield* Effect.sleep("300 millis")
      assert.strictEqual(receiver.received.length, arrivals.length + 3, "nothing else")
      assert.strictEqual(BackOffice.dataOf(SkippedCount, yield* get(`/webhooks/${subscription.id}`)).skipped_events, 0)
      const after = yield* poll(
        "the recoveries delivered",
        journalOf,
        (entries) => entries.filter((e) => e.status === "delivered").length === arrivals.length + 3
      )
      assert.strictEqual(after.filter((entry) => entry.status === "skipped").length, 3, "the skipped entries stay in the journal")
    }), { timeout: 60_000 })
})
