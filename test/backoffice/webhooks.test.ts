/**
 * The back office's webhook subscriptions over a real socket against a real
 * database (docs/back-office.md "Webhooks"; docs/decisions.md
 * "Webhooks", "Webhook secrets"): every call's success and failures, the
 * roles (403 before anything is decoded or changed), 404 across schools and
 * across subscriptions, the receiver-URL rule with DNS (a resolver that
 * knows a few `.example.test` names, the system's for the rest), the secret
 * shown once and stored encrypted, the journal (skipped entries,
 * `next_attempt_at`, `webhook_id`), `skipped_events`, deletion (what goes,
 * what stays), resend and recover rows, `which: "skipped"` included
 * (written with SQL where the dispatcher would write them), and concurrent
 * recoveries. This server allows more subscriptions per school than the
 * default (test/backoffice/webhook-limits.test.ts tests the limits), since
 * every test here adds to one school. A second server allows insecure URLs
 * and has its own key.
 */
import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Option, Result, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  DevelopmentKeyWarning,
  HostResolver,
  type Resolve,
  systemResolve,
  webhookSettings
} from "@school/api/http/backoffice/Webhooks"
import { WebhookTest } from "@school/domain/Events"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { freePort } from "@school/runtime/Ports"
import * as BackOffice from "../support/BackOffice.ts"
import * as Logs from "../support/Logs.ts"
import { entryPoints, lines, run, runUntil } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u
const Ts = Schema.String.check(Schema.isPattern(TIMESTAMP))

const Created = BackOffice.CreatedWebhook
const Subscription = Schema.Struct({
  id: Schema.Int,
  url: Schema.String,
  events: Schema.Array(Schema.String),
  status: Schema.Literals(["active", "problematic", "disabled"]),
  created_at: Ts,
  updated_at: Ts,
  skipped_events: Schema.Int
})
const Page = Schema.Struct({
  success: Schema.Literal(true),
  data: Schema.Array(Subscription),
  meta: Schema.Struct({ page: Schema.Int, per_page: Schema.Int, total: Schema.Int })
})
const JournalEntry = Schema.Struct({
  id: Schema.Int,
  event: Schema.String,
  status: Schema.Literals(["pending", "delivered", "failed", "skipped"]),
  response_code: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  created_at: Ts,
  last_attempt_at: Schema.NullOr(Ts),
  next_attempt_at: Schema.NullOr(Ts),
  webhook_id: Schema.String.check(Schema.isPattern(/^msg_[0-9a-f]{32}$/u))
})
const Detail = Schema.Struct({
  ...JournalEntry.fields,
  body: Schema.NullOr(Schema.String),
  attempts_detail: Schema.Array(Schema.Struct({
    attempt: Schema.Int,
    at: Ts,
    response_code: Schema.NullOr(Schema.Int),
    error: Schema.NullOr(Schema.String),
    duration_ms: Schema.Int,
    response_excerpt: Schema.NullOr(Schema.String)
  }))
})
const strict = { onExcessProperty: "error" } as const

/** A resolver that knows a few names and asks the system for the rest (`localhost`, `.invalid`). */
const FAKE_DNS: Readonly<Record<string, ReadonlyArray<string>>> = {
  "hooks.example.test": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
  "other.example.test": ["151.101.1.69"],
  "internal.example.test": ["10.0.0.5"],
  "rebind.example.test": ["93.184.215.14", "192.168.1.1"],
  "mapped.example.test": ["::ffff:127.0.0.1"],
  "metadata.example.test": ["169.254.169.254"]
}
const fakeResolve: Resolve = (host) => {
  const known = FAKE_DNS[host]
  if (known !== undefined) return Effect.succeed(known)
  return host.endsWith(".example.test") ? Effect.fail(`${host} does not resolve`) : systemResolve(host)
}

const HOOK = "https://hooks.example.test/in"

class World extends Context.Service<World, {
  readonly a: BackOffice.StaffSchool
  readonly b: BackOffice.StaffSchool
  readonly owner: BackOffice.Crm
  readonly admin: BackOffice.Crm
  readonly manager: BackOffice.Crm
  readonly teacher: BackOffice.Crm
  /** The owner of school B. */
  readonly otherOwner: BackOffice.Crm
}>()("test/backoffice/webhooks/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const a = yield* BackOffice.staffSchool()
      const b = yield* BackOffice.staffSchool()
      return {
        a,
        b,
        owner: yield* BackOffice.crm(a.emails.owner),
        admin: yield* BackOffice.crm(a.emails.administrator),
        manager: yield* BackOffice.crm(a.emails.manager),
        teacher: yield* BackOffice.crm(a.emails.teacher),
        otherOwner: yield* BackOffice.crm(b.emails.owner)
      }
    }).pipe(Effect.orDie)
  )
}

/** Creates a subscription as `as` (201 asserted). */
const create = Effect.fnUntraced(function*(as: BackOffice.Crm, body: unknown = { url: HOOK, events: ["student.created"] }) {
  return BackOffice.dataOf(Created, yield* as.post("/webhooks", body), 201)
}, Effect.orDie)

const countRows = (table: "webhook_subscriptions" | "webhook_deliveries" | "outbox_events", schoolId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE school_id = ${schoolId}`
    return rows[0]?.n ?? 0
  }).pipe(Effect.orDie)

/** An outbox event of school `schoolId` (already fanned out, as the dispatcher would leave it): its id. */
const insertEvent = (schoolId: number, studentId = 1) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: number }>`
      INSERT INTO outbox_events (school_id, event, payload, fanned_out_at)
      VALUES (${schoolId}, 'student.created',
              json_build_object('student_id', ${studentId}::int, 'student_name', 'Ann', 'filial_id', 0), now())
      RETURNING id::float8 AS id`
    return rows[0]?.id ?? 0
  }).pipe(Effect.orDie)

interface DeliveryRow {
  readonly status?: "pending" | "delivered" | "failed" | "skipped"
  readonly finishedAt?: string | null
  readonly attempts?: number
  readonly responseCode?: number | null
  readonly body?: string | null
  readonly id?: number
  readonly createdAt?: string
  /** The delivery this one repeats (a resend or a recovery; the fan-out makes one delivery per event). */
  readonly resendOf?: number
}

/** A delivery row as the dispatcher writes them: its id. */
const insertDelivery = (schoolId: number, subscriptionId: number, eventId: number, row: DeliveryRow = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const status = row.status ?? "pending"
    const finishedAt = row.finishedAt === undefined ? (status === "pending" ? null : "2026-01-01T00:00:00Z") : row.finishedAt
    const rows = yield* sql<{ id: number }>`
      INSERT INTO webhook_deliveries (school_id, id, subscription_id, event_id, event, body, status, attempts,
                                      response_code, last_attempt_at, finished_at, created_at, resend_of, resend_key)
      VALUES (${schoolId}, coalesce(${row.id ?? null}::int8, nextval(pg_get_serial_sequence('webhook_deliveries', 'id'))),
              ${subscriptionId}, ${eventId}, 'student.created', ${row.body ?? null}::text, ${status},
              ${row.attempts ?? 0}, ${row.responseCode ?? null}::int2,
              ${(row.attempts ?? 0) > 0 ? "2026-01-01T00:00:00Z" : null}::timestamptz,
              ${finishedAt}::timestamptz, coalesce(${row.createdAt ?? null}::timestamptz, now()), ${row.resendOf ?? null}::int8,
              CASE WHEN ${row.resendOf ?? null}::int8 IS NULL THEN 0 ELSE nextval('webhook_deliveries_resend_key') END)
      RETURNING id::float8 AS id`
    return rows[0]?.id ?? 0
  }).pipe(Effect.orDie)

/** Every test here adds subscriptions to school A: more than WEBHOOK_MAX_SUBSCRIPTIONS' default allows. */
const ROOMY = { WEBHOOK_MAX_SUBSCRIPTIONS: "10000" }

const Env = World.layer.pipe(
  Layer.provideMerge(
    TestServer.layer({ settings: ROOMY }).pipe(
      Layer.provide(Layer.succeed(HostResolver, fakeResolve))
    )
  ),
  Layer.provideMerge(TestDatabase.layer)
)

layer(Env, { excludeTestServices: true })("webhook subscriptions", (it) => {
  describe("POST /webhooks", () => {
    it.effect("201 with the secret, shown once; the URL normalised; events deduplicated in the catalog's order", () =>
      Effect.gen(function*() {
        const { a, owner, admin } = yield* World
        const sql = yield* SqlClient.SqlClient
        const reply = yield* owner.post("/webhooks", {
          url: "  https://Hooks.Example.TEST:443/in?x=1  ",
          events: ["payment.received", "student.created", "payment.received"]
        })
        const created = BackOffice.dataOf(Created, reply, 201)
        assert.strictEqual(created.url, "https://hooks.example.test/in?x=1")
        assert.deepStrictEqual(created.events, ["student.created", "payment.received"])
        assert.isTrue(WebhookSecret.isSecretShaped(created.secret), created.secret)
        assert.deepStrictEqual(Object.keys(Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Record(Schema.String, Schema.Unknown) }))(reply.json).data), [
          "id",
          "url",
          "events",
          "status",
          "secret",
          "created_at"
        ])
        // Stored encrypted (the development key here), never in the clear.
        const stored = yield* sql<{ secret_ciphertext: Uint8Array; clear: boolean }>`
          SELECT secret_ciphertext, position(convert_to(${created.secret}, 'UTF8') IN secret_ciphertext) > 0 AS clear
          FROM webhook_subscriptions WHERE school_id = ${a.schoolId} AND id = ${created.id}`
        const row = stored[0]
        assert.isDefined(row)
        assert.isFalse(row?.clear)
        assert.deepStrictEqual(
          WebhookSecret.decrypt([WebhookSecret.DEVELOPMENT_KEY], row?.secret_ciphertext ?? new Uint8Array()),
          Result.succeed(created.secret)
        )
        // An administrator may create too; each subscription has its own secret.
        const second = yield* create(admin)
        assert.notStrictEqual(second.secret, created.secret)
      }))

    it.effect("no later call shows the secret: GET, list, PATCH, disable, enable", () =>
      Effect.gen(function*() {
        const { owner } = yield* World
        const created = yield* create(owner)
        const replies = [
          yield* owner.get(`/webhooks/${created.id}`),
          yield* owner.get("/webhooks?per_page=100"),
          yield* owner.patch(`/webhooks/${created.id}`, { events: ["lead.created"] }),
          yield* owner.post(`/webhooks/${created.id}/disable`),
          yield* owner.post(`/webhooks/${created.id}/enable`),
          yield* owner.get(`/webhooks/${created.id}/deliveries`)
        ]
        for (const reply of replies) {
          assert.strictEqual(reply.status, 200, reply.text)
          assert.notInclude(reply.text, created.secret)
          assert.notInclude(reply.text, created.secret.slice(6))
          assert.notInclude(reply.text, "\"secret\"")
          assert.notInclude(reply.text, "ciphertext")
        }
      }))

    it.effect("422 fields.url: not https, a non-public literal in any spelling, a host resolving to one, credentials, length", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const before = yield* countRows("webhook_subscriptions", a.schoolId)
        const refused = [
          "http://hooks.example.test/in",
          "ftp://hooks.example.test/in",
          "https://127.0.0.1/in",
          "https://2130706433/in",
          "https://0x7f.1/in",
          "https://017700000001/in",
          "https://127.1/in",
          "https://10.1.2.3/in",
          "https://169.254.169.254/latest/meta-data",
          "https://100.64.0.1/",
          "https://192.168.0.10/",
          "https://[::1]/in",
          "https://[::ffff:127.0.0.1]/in",
          "https://[::ffff:a00:1]/in",
          "https://[fe80::1]/in",
          "https://[fd12:3456::1]/in",
          "https://[64:ff9b::a00:1]/in",
          "https://[2002:c0a8:1::1]/in",
          "https://0.0.0.0/",
          "https://localhost/in",
          "https://localhost./in",
          "https://internal.example.test/in",
          "https://rebind.example.test/in",
          "https://mapped.example.test/in",
          "https://metadata.example.test/in",
          "https://nowhere.example.test/in",
          "https://no-such-host.invalid/in",
          "https://user:secret@hooks.example.test/in",
          "https://user@hooks.example.test/in",
          `https://hooks.example.test/${"a".repeat(2048)}`,
          "hooks.example.test/in",
          "not a url",
          ""
        ]
        for (const url of refused) {
          const error = BackOffice.expectError(yield* owner.post("/webhooks", { url, events: ["student.created"] }), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["url"], url)
        }
        const rebind = BackOffice.expectError(
          yield* owner.post("/webhooks", { url: "https://rebind.example.test/in", events: ["student.created"] }),
          422,
          "VALIDATION_FAILED"
        )
        assert.include(String(rebind.fields?.["url"]), "192.168.1.1")
        const spelled = BackOffice.expectError(
          yield* owner.post("/webhooks", { url: "https://0x7f.1/in", events: ["student.created"] }),
          422,
          "VALIDATION_FAILED"
        )
        assert.include(String(spelled.fields?.["url"]), "127.0.0.1 is not a public address")
        // docs/integrators.md "Receiving webhooks on your machine": the way to develop locally instead.
        assert.include(
          String(spelled.fields?.["url"]),
          `To receive webhooks on your machine, run \`npm run cli -- webhooks listen --school ${a.schoolId} --forward-to`
        )
        assert.strictEqual(yield* countRows("webhook_subscriptions", a.schoolId), before)
      }))

    it.effect("a public literal address or a name resolving only to public addresses is accepted", () =>
      Effect.gen(function*() {
        const { owner } = yield* World
        for (const url of ["https://93.184.215.14/in", "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:8443/in", "https://other.example.test/x"]) {
          const created = yield* create(owner, { url, events: ["lead.created"] })
          assert.strictEqual(created.url, new URL(url).href)
        }
      }))

    it.effect("422 fields.events: none, webhook.test, unknown names, not a list; every bad field at once", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const before = yield* countRows("webhook_subscriptions", a.schoolId)
        for (const events of [[], ["webhook.test"], ["student.created", "webhook.test"], ["nope"], "student.created", [1], null]) {
          const error = BackOffice.expectError(yield* owner.post("/webhooks", { url: HOOK, events }), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["events"], JSON.stringify(events))
        }
        const test = BackOffice.expectError(yield* owner.post("/webhooks", { url: HOOK, events: ["webhook.test"] }), 422, "VALIDATION_FAILED")
        assert.include(String(test.fields?.["events"]), "webhook.test cannot be subscribed to")
        const both = BackOffice.expectError(yield* owner.post("/webhooks", { url: 5, events: [] }), 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(Object.keys(both.fields ?? {}).sort(), ["events", "url"])
        const missing = BackOffice.expectError(yield* owner.post("/webhooks", {}), 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(Object.keys(missing.fields ?? {}).sort(), ["events", "url"])
        BackOffice.expectError(yield* owner.post("/webhooks", "[1,"), 422, "VALIDATION_FAILED")
        assert.strictEqual(yield* countRows("webhook_subscriptions", a.schoolId), before)
      }))

    it.effect("403 for manager and teacher whatever they send; 401 without a session; nothing written", () =>
      Effect.gen(function*() {
        const { a, manager, teacher } = yield* World
        const server = yield* TestServer
        const before = yield* countRows("webhook_subscriptions", a.schoolId)
        for (const as of [manager, teacher]) {
          BackOffice.expectError(yield* as.post("/webhooks", { url: HOOK, events: ["student.created"] }), 403, "FORBIDDEN")
          BackOffice.expectError(yield* as.post("/webhooks", {}), 403, "FORBIDDEN")
          BackOffice.expectError(yield* as.post("/webhooks", "not json"), 403, "FORBIDDEN")
        }
        BackOffice.expectError(
          yield* server.raw.post(`${BackOffice.CRM}/webhooks`, { body: { url: HOOK, events: ["student.created"] } }),
          401,
          "UNAUTHENTICATED"
        )
        assert.strictEqual(yield* countRows("webhook_subscriptions", a.schoolId), before)
      }))
  })

  describe("GET /webhooks, GET /webhooks/{id}", () => {
    it.effect("the school's subscriptions by id, paginated with meta; another school's are not there", () =>
      Effect.gen(function*() {
        const { owner, otherOwner, admin } = yield* World
        const theirs = yield* create(otherOwner)
        const mine = yield* create(owner)
        const all = Schema.decodeUnknownSync(Page)((yield* admin.get("/webhooks?per_page=100")).json, strict)
        assert.isTrue(all.data.some((s) => s.id === mine.id))
        assert.isFalse(all.data.some((s) => s.url === theirs.url && s.id === theirs.id && s.created_at === theirs.created_at))
        assert.deepStrictEqual(all.data.map((s) => s.id), [...all.data.map((s) => s.id)].sort((x, y) => x - y))
        assert.strictEqual(all.meta.total, all.data.length)
        const page = Schema.decodeUnknownSync(Page)((yield* owner.get("/webhooks?per_page=1&page=2")).json, strict)
        assert.deepStrictEqual(page.meta, { page: 2, per_page: 1, total: all.meta.total })
        assert.deepStrictEqual(page.data.map((s) => s.id), [all.data[1]?.id])
        const one = BackOffice.dataOf(Subscription, yield* admin.get(`/webhooks/${mine.id}`))
        assert.deepStrictEqual(all.data.find((s) => s.id === mine.id), one)
      }))

    it.effect("one subscription: exactly its fields; 404 for a missing id and for another school's; 422 for a bad id", () =>
      Effect.gen(function*() {
        const { owner, otherOwner } = yield* World
        const mine = yield* create(owner, { url: HOOK, events: ["group.enrolled", "lesson.completed"] })
        const one = BackOffice.dataOf(Subscription, yield* owner.get(`/webhooks/${mine.id}`))
        assert.deepStrictEqual(one, {
          id: mine.id,
          url: mine.url,
          events: ["group.enrolled", "lesson.completed"],
          status: "active",
          created_at: mine.created_at,
          updated_at: mine.created_at,
          skipped_events: 0
        })
        const theirs = yield* create(otherOwner)
        BackOffice.expectError(yield* owner.get(`/webhooks/${theirs.id}`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.get("/webhooks/2147483000"), 404, "NOT_FOUND")
        for (const bad of ["abc", "0", "-1", "1e3", "2147483648"]) {
          const error = BackOffice.expectError(yield* owner.get(`/webhooks/${bad}`), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["id"], bad)
        }
        BackOffice.expectError(yield* owner.get("/webhooks?per_page=0"), 422, "VALIDATION_FAILED")
      }))

    it.effect("403 for manager and teacher, before anything is decoded", () =>
      Effect.gen(function*() {
        const { owner, manager, teacher } = yield* World
        const mine = yield* create(owner)
        for (const as of [manager, teacher]) {
          BackOffice.expectError(yield* as.get("/webhooks"), 403, "FORBIDDEN")
          BackOffice.expectError(yield* as.get("/webhooks?per_page=0"), 403, "FORBIDDEN")
          BackOffice.expectError(yield* as.get(`/webhooks/${mine.id}`), 403, "FORBIDDEN")
          BackOffice.expectError(yield* as.get("/webhooks/abc"), 403, "FORBIDDEN")
        }
      }))
  })

  describe("PATCH /webhooks/{id}", () => {
    it.effect("changes the URL, the events or both, with the same rules; status kept; 200 with the subscription", () =>
      Effect.gen(function*() {
        const { owner, admin } = yield* World
        const created = yield* create(owner)
        const url = BackOffice.dataOf(Subscription, yield* owner.patch(`/webhooks/${created.id}`, { url: "https://other.example.test/new" }))
        assert.deepStrictEqual([url.url, url.events, url.status], ["https://other.example.test/new", ["student.created"], "active"])
        assert.isTrue(url.updated_at >= created.created_at)
        const events = BackOffice.dataOf(
          Subscription,
          yield* admin.patch(`/webhooks/${created.id}`, { events: ["payment.received", "lead.created", "lead.created"] })
        )
        assert.deepStrictEqual([events.url, events.events], ["https://other.example.test/new", ["lead.created", "payment.received"]])
        const both = BackOffice.dataOf(Subscription, yield* owner.patch(`/webhooks/${created.id}`, { url: HOOK, events: ["group.enrolled"] }))
        assert.deepStrictEqual([both.url, both.events], [HOOK, ["group.enrolled"]])
        assert.deepStrictEqual(BackOffice.dataOf(Subscription, yield* owner.get(`/webhooks/${created.id}`)), both)
      }))

    it.effect("422: neither field, a refused URL, bad events; nothing changes", () =>
      Effect.gen(function*() {
        const { owner } = yield* World
        const created = yield* create(owner)
        const before = BackOffice.dataOf(Subscription, yield* owner.get(`/webhooks/${created.id}`))
        const empty = BackOffice.expectError(yield* owner.patch(`/webhooks/${created.id}`, {}), 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(Object.keys(empty.fields ?? {}).sort(), ["events", "url"])
        for (const url of ["https://127.0.0.1/", "http://hooks.example.test/", "https://internal.example.test/", ""]) {
          const error = BackOffice.expectError(yield* owner.patch(`/webhooks/${created.id}`, { url }), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["url"], url)
        }
        for (const events of [[], ["webhook.test"], ["x"]]) {
          const error = BackOffice.expectError(yield* owner.patch(`/webhooks/${created.id}`, { events }), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["events"])
        }
        assert.deepStrictEqual(BackOffice.dataOf(Subscription, yield* owner.get(`/webhooks/${created.id}`)), before)
      }))

    it.effect("404 for another school's and a missing id; 403 for manager and teacher; nothing changes", () =>
      Effect.gen(function*() {
        const { owner, otherOwner, manager, teacher } = yield* World
        const theirs = yield* create(otherOwner)
        BackOffice.expectError(yield* owner.patch(`/webhooks/${theirs.id}`, { url: HOOK }), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.patch("/webhooks/2147483000", { events: ["lead.created"] }), 404, "NOT_FOUND")
        const mine = yield* create(owner)
        for (const as of [manager, teacher]) {
          BackOffice.expectError(yield* as.patch(`/webhooks/${mine.id}`, { url: "https://other.example.test/x" }), 403, "FORBIDDEN")
          BackOffice.expectError(yield* as.patch(`/webhooks/${mine.id}`, {}), 403, "FORBIDDEN")
        }
        assert.deepStrictEqual(BackOffice.dataOf(Subscription, yield* otherOwner.get(`/webhooks/${theirs.id}`)).url, theirs.url)
        assert.deepStrictEqual(BackOffice.dataOf(Subscription, yield* owner.get(`/webhooks/${mine.id}`)).url, mine.url)
      }))
  })

  describe("POST /webhooks/{id}/disable, /enable", () => {
    it.effect("disabled, then back to active; a problematic subscription stays problematic on enable; deliveries kept", () =>
      Effect.gen(function*() {
        const { a, owner, admin } = yield* World
        const sql = yield* SqlClient.SqlClient
        const created = yield* create(owner)
        const event = yield* insertEvent(a.schoolId)
        yield* insertDelivery(a.schoolId, created.id, event, { status: "failed", attempts: 4 })
        const disabled = BackOffice.dataOf(Subscription, yield* owner.post(`/webhooks/${created.id}/disable`))
        assert.strictEqual(disabled.status, "disabled")
        assert.isTrue(disabled.updated_at > created.created_at)
        // Disabling again changes nothing, not even updated_at.
        assert.deepStrictEqual(BackOffice.dataOf(Subscription, yield* admin.post(`/webhooks/${created.id}/disable`)), disabled)
        const journal = yield* owner.get(`/webhooks/${created.id}/deliveries`)
        assert.strictEqual(BackOffice.dataOf(Schema.Array(JournalEntry), journal).length, 1)
        const enabled = BackOffice.dataOf(Subscription, yield* admin.post(`/webhooks/${created.id}/enable`))
        assert.strictEqual(enabled.status, "active")
        assert.isTrue(enabled.updated_at > disabled.updated_at)
        assert.deepStrictEqual(BackOffice.dataOf(Subscription, yield* owner.post(`/webhooks/${created.id}/enable`)), enabled)

        yield* sql`UPDATE webhook_subscriptions SET status = 'problematic' WHERE school_id = ${a.schoolId} AND id = ${created.id}`
        const problematic = BackOffice.dataOf(Subscription, yield* owner.post(`/webhooks/${created.id}/enable`))
        assert.strictEqual(problematic.status, "problematic")
        assert.strictEqual(BackOffice.dataOf(Subscription, yield* owner.post(`/webhooks/${created.id}/disable`)).status, "disabled")
        assert.isAbove(yield* countRows("webhook_deliveries", a.schoolId), 0)
      }))

    it.effect("404 across schools and for a missing id; 403 for manager and teacher; nothing changes", () =>
      Effect.gen(function*() {
        const { owner, otherOwner, manager, teacher } = yield* World
        const theirs = yield* create(otherOwner)
        const mine = yield* create(owner)
        for (const action of ["disable", "enable"]) {
          BackOffice.expectError(yield* owner.post(`/webhooks/${theirs.id}/${action}`), 404, "NOT_FOUND")
          BackOffice.expectError(yield* owner.post(`/webhooks/2147483000/${action}`), 404, "NOT_FOUND")
          BackOffice.expectError(yield* owner.post(`/webhooks/x/${action}`), 422, "VALIDATION_FAILED")
          for (const as of [manager, teacher]) {
            BackOffice.expectError(yield* as.post(`/webhooks/${mine.id}/${action}`), 403, "FORBIDDEN")
          }
        }
        assert.strictEqual(BackOffice.dataOf(Subscription, yield* otherOwner.get(`/webhooks/${theirs.id}`)).status, "active")
        assert.strictEqual(BackOffice.dataOf(Subscription, yield* owner.get(`/webhooks/${mine.id}`)).status, "active")
      }))
  })

  describe("POST /webhooks/{id}/test", () => {
    it.effect("202 with the event id: a webhook.test outbox event addressed to this subscription, payload { subscription_id, message }", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const sql = yield* SqlClient.SqlClient
        const created = yield* create(owner)
        const { event_id } = BackOffice.dataOf(Schema.Struct({ event_id: Schema.Int }), yield* owner.post(`/webhooks/${created.id}/test`), 202)
        const rows = yield* sql<{ event: string; subscription_id: number; payload: unknown; fanned_out_at: unknown }>`
          SELECT event, subscription_id, payload, fanned_out_at FROM outbox_events WHERE school_id = ${a.schoolId} AND id = ${event_id}`
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]?.event, "webhook.test")
        assert.strictEqual(rows[0]?.subscription_id, created.id)
        assert.isNull(rows[0]?.fanned_out_at)
        const payload = Schema.decodeUnknownSync(WebhookTest)(rows[0]?.payload, strict)
        assert.strictEqual(payload.subscription_id, created.id)
        assert.isAbove(payload.message.length, 0)
        const json = yield* sql<{ text: string }>`SELECT payload::text AS text FROM outbox_events WHERE school_id = ${a.schoolId} AND id = ${event_id}`
        assert.match(json[0]?.text ?? "", /^\{"subscription_id" : \d+, "message" : ".+"\}$/u)
        // Another test is another event.
        const again = BackOffice.dataOf(Schema.Struct({ event_id: Schema.Int }), yield* owner.post(`/webhooks/${created.id}/test`), 202)
        assert.isAbove(again.event_id, event_id)
      }))

    it.effect("409 CONFLICT when disabled, no event written; 404 across schools; 403 for manager and teacher", () =>
      Effect.gen(function*() {
        const { a, b, owner, otherOwner, manager, teacher } = yield* World
        const created = yield* create(owner)
        yield* owner.post(`/webhooks/${created.id}/disable`)
        const before = yield* countRows("outbox_events", a.schoolId)
        BackOffice.expectError(yield* owner.post(`/webhooks/${created.id}/test`), 409, "CONFLICT")
        const theirs = yield* create(otherOwner)
        const beforeB = yield* countRows("outbox_events", b.schoolId)
        BackOffice.expectError(yield* owner.post(`/webhooks/${theirs.id}/test`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.post("/webhooks/2147483000/test"), 404, "NOT_FOUND")
        yield* owner.post(`/webhooks/${created.id}/enable`)
        for (const as of [manager, teacher]) {
          BackOffice.expectError(yield* as.post(`/webhooks/${created.id}/test`), 403, "FORBIDDEN")
        }
        assert.strictEqual(yield* countRows("outbox_events", a.schoolId), before)
        assert.strictEqual(yield* countRows("outbox_events", b.schoolId), beforeB)
      }))
  })

  describe("the journal and one delivery", () => {
    it.effect("GET /webhooks/{id}/deliveries: the last 50 of this subscription, newest first, exactly the journal's fields", () =>
      Effect.gen(function*() {
        const { a, owner, admin } = yield* World
        const created = yield* create(owner)
        const other = yield* create(owner)
        assert.deepStrictEqual(BackOffice.dataOf(Schema.Array(JournalEntry), yield* owner.get(`/webhooks/${created.id}/deliveries`)), [])
        const ids: Array<number> = []
        for (let i = 0; i < 55; i++) {
          const event = yield* insertEvent(a.schoolId, i)
          const status = i % 3 === 0 ? "delivered" : i % 3 === 1 ? "failed" : "pending"
          ids.push(yield* insertDelivery(a.schoolId, created.id, event, {
            status,
            attempts: status === "pending" ? 0 : 2,
            responseCode: status === "delivered" ? 204 : status === "failed" ? 500 : null
          }))
          if (i % 10 === 0) yield* insertDelivery(a.schoolId, other.id, event)
        }
        const journal = BackOffice.dataOf(Schema.Array(JournalEntry), yield* admin.get(`/webhooks/${created.id}/deliveries`))
        assert.strictEqual(journal.length, 50)
        assert.deepStrictEqual(journal.map((d) => d.id), ids.slice(-50).reverse())
        const newest = journal[0]
        assert.deepStrictEqual(newest && { ...newest, created_at: "", last_attempt_at: null, webhook_id: "" }, {
          id: ids[54] ?? 0,
          event: "student.created",
          status: "delivered",
          response_code: 204,
          attempts: 2,
          created_at: "",
          last_attempt_at: null,
          next_attempt_at: null,
          webhook_id: ""
        })
        assert.strictEqual(journal[0]?.last_attempt_at, "2026-01-01T00:00:00.000000Z")
        assert.deepStrictEqual([journal[1]?.status, journal[1]?.last_attempt_at, journal[1]?.response_code], ["pending", null, null])
        assert.deepStrictEqual([journal[2]?.status, journal[2]?.response_code], ["failed", 500])
      }))

    it.effect("GET /webhooks/{id}/deliveries/{delivery_id}: the journal's fields, the body (null before the first attempt) and every attempt in order", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const sql = yield* SqlClient.SqlClient
        const created = yield* create(owner)
        const event = yield* insertEvent(a.schoolId)
        const fresh = yield* insertDelivery(a.schoolId, created.id, event)
        const pending = BackOffice.dataOf(Detail, yield* owner.get(`/webhooks/${created.id}/deliveries/${fresh}`))
        assert.strictEqual(pending.body, null)
        assert.deepStrictEqual(pending.attempts_detail, [])
        // A bigint id beyond 32 bits, a resend of the first.
        const big = 5_000_000_000 + a.schoolId
        const body = `{"event":"student.created","account_id":${a.schoolId},"payload":{"student_id":1},"timestamp":"2026-01-01T00:00:00+00:00"}`
        yield* insertDelivery(a.schoolId, created.id, event, { id: big, status: "failed", attempts: 2, responseCode: 503, body, resendOf: fresh })
        yield* sql`
          INSERT INTO webhook_attempts (school_id, delivery_id, attempt, at, response_code, error, duration_ms, response_body)
          VALUES (${a.schoolId}, ${big}::int8, 2, '2026-01-01T00:01:00.123456Z', 503, NULL, 812, 'busy'),
                 (${a.schoolId}, ${big}::int8, 1, '2026-01-01T00:00:00Z', NULL, 'timeout', 10000, NULL)`
        const detail = BackOffice.dataOf(Detail, yield* owner.get(`/webhooks/${created.id}/deliveries/${big}`))
        assert.deepStrictEqual({ ...detail, created_at: "", webhook_id: "" }, {
          id: big,
          event: "student.created",
          status: "failed",
          response_code: 503,
          attempts: 2,
          created_at: "",
          last_attempt_at: "2026-01-01T00:00:00.000000Z",
          next_attempt_at: null,
          webhook_id: "",
          body,
          attempts_detail: [
            { attempt: 1, at: "2026-01-01T00:00:00.000000Z", response_code: null, error: "timeout", duration_ms: 10000, response_excerpt: null },
            { attempt: 2, at: "2026-01-01T00:01:00.123456Z", response_code: 503, error: null, duration_ms: 812, response_excerpt: "busy" }
          ]
        })
        const journal = BackOffice.dataOf(Schema.Array(JournalEntry), yield* owner.get(`/webhooks/${created.id}/deliveries`))
        assert.strictEqual(journal[0]?.id, big)
      }))

    it.effect("404: a delivery of another subscription of the school, of another school, a missing one; 422 for a bad id; 403 for manager and teacher", () =>
      Effect.gen(function*() {
        const { a, b, owner, otherOwner, manager, teacher } = yield* World
        const mine = yield* create(owner)
        const sibling = yield* create(owner)
        const theirs = yield* create(otherOwner)
        const event = yield* insertEvent(a.schoolId)
        const eventB = yield* insertEvent(b.schoolId)
        const ofMine = yield* insertDelivery(a.schoolId, mine.id, event)
        const ofSibling = yield* insertDelivery(a.schoolId, sibling.id, event)
        const ofTheirs = yield* insertDelivery(b.schoolId, theirs.id, eventB)
        BackOffice.expectError(yield* owner.get(`/webhooks/${mine.id}/deliveries/${ofSibling}`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.get(`/webhooks/${theirs.id}/deliveries/${ofTheirs}`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.get(`/webhooks/${mine.id}/deliveries/${ofTheirs}`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.get(`/webhooks/${mine.id}/deliveries/9007199254740991`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.get(`/webhooks/${theirs.id}/deliveries`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.get("/webhooks/2147483000/deliveries"), 404, "NOT_FOUND")
        for (const bad of ["x", "0", "9007199254740992", "1.5"]) {
          const error = BackOffice.expectError(yield* owner.get(`/webhooks/${mine.id}/deliveries/${bad}`), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["delivery_id"], bad)
        }
        for (const as of [manager, teacher]) {
          BackOffice.expectError(yield* as.get(`/webhooks/${mine.id}/deliveries`), 403, "FORBIDDEN")
          BackOffice.expectError(yield* as.get(`/webhooks/${mine.id}/deliveries/${ofMine}`), 403, "FORBIDDEN")
        }
        BackOffice.dataOf(Detail, yield* owner.get(`/webhooks/${mine.id}/deliveries/${ofMine}`))
      }))
  })

  describe("POST /webhooks/{id}/deliveries/{delivery_id}/resend", () => {
    it.effect("202 with a new delivery of the same event: same body, resend_of the original, a fresh plan", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const sql = yield* SqlClient.SqlClient
        const created = yield* create(owner)
        const event = yield* insertEvent(a.schoolId)
        const original = yield* insertDelivery(a.schoolId, created.id, event, {
          status: "failed",
          attempts: 4,
          responseCode: 500,
          body: "{\"event\":\"student.created\"}"
        })
        const reply = yield* owner.post(`/webhooks/${created.id}/deliveries/${original}/resend`)
        const { delivery_id } = BackOffice.dataOf(Schema.Struct({ delivery_id: Schema.Int }), reply, 202)
        assert.isAbove(delivery_id, original)
        const rows = yield* sql<Record<string, unknown>>`
          SELECT subscription_id, event_id::float8 AS event_id, event, resend_of::float8 AS resend_of, body, status, attempts,
                 next_attempt_at <= now() AS due, lease_until, response_code, last_attempt_at, finished_at
          FROM webhook_deliveries WHERE school_id = ${a.schoolId} AND id = ${delivery_id}`
        assert.deepStrictEqual(rows[0], {
          subscription_id: created.id,
          event_id: event,
          event: "student.created",
          resend_of: original,
          body: "{\"event\":\"student.created\"}",
          status: "pending",
          attempts: 0,
          due: true,
          lease_until: null,
          response_code: null,
          last_attempt_at: null,
          finished_at: null
        })
        const journal = BackOffice.dataOf(Schema.Array(JournalEntry), yield* owner.get(`/webhooks/${created.id}/deliveries`))
        assert.deepStrictEqual(journal.map((d) => [d.id, d.status]), [[delivery_id, "pending"], [original, "failed"]])
      }))

    it.effect("409 when disabled; 404 for a delivery of another subscription or school, a missing one; 403 for manager and teacher; nothing written", () =>
      Effect.gen(function*() {
        const { a, b, owner, otherOwner, manager, teacher } = yield* World
        const mine = yield* create(owner)
        const sibling = yield* create(owner)
        const theirs = yield* create(otherOwner)
        const event = yield* insertEvent(a.schoolId)
        const ofMine = yield* insertDelivery(a.schoolId, mine.id, event, { status: "failed", attempts: 4 })
        const ofSibling = yield* insertDelivery(a.schoolId, sibling.id, event, { status: "failed", attempts: 4 })
        const ofTheirs = yield* insertDelivery(b.schoolId, theirs.id, yield* insertEvent(b.schoolId), { status: "failed", attempts: 4 })
        const before = yield* countRows("webhook_deliveries", a.schoolId)
        const beforeB = yield* countRows("webhook_deliveries", b.schoolId)
        BackOffice.expectError(yield* owner.post(`/webhooks/${mine.id}/deliveries/${ofSibling}/resend`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.post(`/webhooks/${theirs.id}/deliveries/${ofTheirs}/resend`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.post(`/webhooks/${mine.id}/deliveries/${ofTheirs}/resend`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.post(`/webhooks/${mine.id}/deliveries/2147483000/resend`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.post(`/webhooks/${mine.id}/deliveries/x/resend`), 422, "VALIDATION_FAILED")
        for (const as of [manager, teacher]) {
          BackOffice.expectError(yield* as.post(`/webhooks/${mine.id}/deliveries/${ofMine}/resend`), 403, "FORBIDDEN")
        }
        yield* owner.post(`/webhooks/${mine.id}/disable`)
        BackOffice.expectError(yield* owner.post(`/webhooks/${mine.id}/deliveries/${ofMine}/resend`), 409, "CONFLICT")
        assert.strictEqual(yield* countRows("webhook_deliveries", a.schoolId), before)
        assert.strictEqual(yield* countRows("webhook_deliveries", b.schoolId), beforeB)
      }))
  })

  describe("POST /webhooks/{id}/recover", () => {
    it.effect("202 { queued }: one new delivery per event whose delivery ended failed at or after since; a second run queues nothing", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const sql = yield* SqlClient.SqlClient
        const created = yield* create(owner)
        const sibling = yield* create(owner)
        const e: Array<number> = []
        for (let i = 0; i < 7; i++) e.push(yield* insertEvent(a.schoolId, i + 1))
        const [e1 = 0, e2 = 0, e3 = 0, e4 = 0, e5 = 0, e6 = 0, e7 = 0] = e
        const failed = (event: number, finishedAt: string, body: string | null = null) =>
          insertDelivery(a.schoolId, created.id, event, { status: "failed", attempts: 4, finishedAt, body })
        yield* failed(e1, "2026-01-01T23:59:59.999999Z") // before since
        const d2 = yield* failed(e2, "2026-01-02T10:00:00Z", "body-2")
        const d3 = yield* failed(e3, "2026-01-02T00:00:00Z") // exactly since
        const d4 = yield* failed(e4, "2026-01-03T00:00:00Z")
        // e4 was delivered by a resend since: nothing to recover.
        yield* insertDelivery(a.schoolId, created.id, e4, { status: "delivered", attempts: 1, finishedAt: "2026-01-03T01:00:00Z", resendOf: d4 })
        const d5a = yield* failed(e5, "2026-01-02T05:00:00Z", "body-5a")
        const d5b = yield* insertDelivery(a.schoolId, created.id, e5, {
          status: "failed",
          attempts: 4,
          finishedAt: "2026-01-04T05:00:00Z",
          body: "body-5b",
          resendOf: d5a
        })
        yield* insertDelivery(a.schoolId, created.id, e6) // pending
        yield* insertDelivery(a.schoolId, created.id, e7, { status: "delivered", attempts: 1 })
        yield* insertDelivery(a.schoolId, sibling.id, e1, { status: "failed", attempts: 4, finishedAt: "2026-01-05T00:00:00Z" })

        // 2026-01-02T00:00:00Z, written with an offset.
        const reply = yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-01-02T03:00:00+03:00" })
        assert.deepStrictEqual(BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), reply, 202), { queued: 3 })
        const queued = yield* sql<{ event_id: number; resend_of: number; body: string | null }>`
          SELECT event_id::float8 AS event_id, resend_of::float8 AS resend_of, body
          FROM webhook_deliveries
          WHERE school_id = ${a.schoolId} AND subscription_id = ${created.id} AND resend_of IS NOT NULL
            AND status = 'pending' AND attempts = 0 AND finished_at IS NULL
          ORDER BY event_id`
        assert.deepStrictEqual(queued, [
          { event_id: e2, resend_of: d2, body: "body-2" },
          { event_id: e3, resend_of: d3, body: null },
          { event_id: e5, resend_of: d5b, body: "body-5b" }
        ])
        const again = yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z" })
        // e1 (failed before the first since) is queued now; the others already have a pending delivery.
        assert.deepStrictEqual(BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), again, 202), { queued: 1 })
        const third = yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z" })
        assert.deepStrictEqual(BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), third, 202), { queued: 0 })
        // The sibling subscription's failure was not touched.
        const siblingRows = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_deliveries WHERE school_id = ${a.schoolId} AND subscription_id = ${sibling.id}`
        assert.strictEqual(siblingRows[0]?.n, 1)
      }))

    it.effect("two recoveries at once queue each failed event once", () =>
      Effect.gen(function*() {
        const { a, owner, admin } = yield* World
        const sql = yield* SqlClient.SqlClient
        const created = yield* create(owner)
        // Enough failures that the statements overlap.
        const FAILED = 2000
        yield* sql`
          WITH e AS (
            INSERT INTO outbox_events (school_id, event, payload, fanned_out_at)
            SELECT ${a.schoolId}, 'student.created', json_build_object('student_id', i, 'student_name', 'Ann', 'filial_id', 0), now()
            FROM generate_series(1, ${FAILED}) i
            RETURNING id
          )
          INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, status, attempts, finished_at)
          SELECT ${a.schoolId}, ${created.id}, id, 'student.created', 'failed', 4, '2026-02-01T00:00:00Z' FROM e`
        const replies = yield* Effect.all(
          [owner, admin, owner, admin, owner, admin].map((as) =>
            as.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z" })
          ),
          { concurrency: "unbounded" }
        )
        const counts = replies.map((reply) => BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), reply, 202).queued)
        assert.strictEqual(counts.reduce((x, y) => x + y, 0), FAILED, JSON.stringify(counts))
        const pending = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_deliveries
          WHERE school_id = ${a.schoolId} AND subscription_id = ${created.id} AND status = 'pending'`
        assert.strictEqual(pending[0]?.n, FAILED)
      }))

    it.effect("422 for since without an offset or not a time, or missing; 409 when disabled; 404 across schools; 403 for manager and teacher", () =>
      Effect.gen(function*() {
        const { a, owner, otherOwner, manager, teacher } = yield* World
        const created = yield* create(owner)
        yield* insertDelivery(a.schoolId, created.id, yield* insertEvent(a.schoolId), { status: "failed", attempts: 4, finishedAt: "2026-02-01T00:00:00Z" })
        const before = yield* countRows("webhook_deliveries", a.schoolId)
        for (const since of ["2026-01-01T00:00:00", "2026-01-01", "yesterday", "", 5, null]) {
          const error = BackOffice.expectError(yield* owner.post(`/webhooks/${created.id}/recover`, { since }), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["since"], String(since))
        }
        BackOffice.expectError(yield* owner.post(`/webhooks/${created.id}/recover`, {}), 422, "VALIDATION_FAILED")
        const theirs = yield* create(otherOwner)
        BackOffice.expectError(yield* owner.post(`/webhooks/${theirs.id}/recover`, { since: "2026-01-01T00:00:00Z" }), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.post("/webhooks/2147483000/recover", { since: "2026-01-01T00:00:00Z" }), 404, "NOT_FOUND")
        for (const as of [manager, teacher]) {
          BackOffice.expectError(yield* as.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z" }), 403, "FORBIDDEN")
          BackOffice.expectError(yield* as.post(`/webhooks/${created.id}/recover`, {}), 403, "FORBIDDEN")
        }
        yield* owner.post(`/webhooks/${created.id}/disable`)
        BackOffice.expectError(yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z" }), 409, "CONFLICT")
        assert.strictEqual(yield* countRows("webhook_deliveries", a.schoolId), before)
      }))
  })
  describe("DELETE /webhooks/{id}", () => {
    it.effect("200 { id }: the subscription, its secret, deliveries, attempts and test events go; a shared event and its other deliveries stay; notifications stay, unlinked", () =>
      Effect.gen(function*() {
        const { a, owner, admin } = yield* World
        const sql = yield* SqlClient.SqlClient
        const doomed = yield* create(owner)
        const kept = yield* create(owner)
        // shared: delivered to both; only: to the doomed one alone; unrelated: no delivery at all.
        const shared = yield* insertEvent(a.schoolId, 1)
        const only = yield* insertEvent(a.schoolId, 2)
        const unrelated = yield* insertEvent(a.schoolId, 3)
        const first = yield* insertDelivery(a.schoolId, doomed.id, shared, { status: "failed", attempts: 4, responseCode: 500, body: "{}" })
        yield* insertDelivery(a.schoolId, doomed.id, shared, { resendOf: first, body: "{}" })
        yield* insertDelivery(a.schoolId, doomed.id, only, { status: "skipped" })
        const keptDelivery = yield* insertDelivery(a.schoolId, kept.id, shared, { status: "delivered", attempts: 1, responseCode: 200 })
        yield* sql`
          INSERT INTO webhook_attempts (school_id, delivery_id, attempt, at, response_code, error, duration_ms)
          VALUES (${a.schoolId}, ${first}::int8, 1, now(), 500, NULL, 10),
                 (${a.schoolId}, ${keptDelivery}::int8, 1, now(), 200, NULL, 10)`
        // A test event not fanned out yet, addressed to the doomed subscription, and one to the other.
        const { event_id: testEvent } = BackOffice.dataOf(Schema.Struct({ event_id: Schema.Int }), yield* owner.post(`/webhooks/${doomed.id}/test`), 202)
        const { event_id: keptTest } = BackOffice.dataOf(Schema.Struct({ event_id: Schema.Int }), yield* owner.post(`/webhooks/${kept.id}/test`), 202)
        yield* sql`
          INSERT INTO notifications (school_id, employee_id, kind, message, subscription_id)
          VALUES (${a.schoolId}, ${a.ids.owner}, 'subscription_problematic', 'Webhook failing', ${doomed.id}),
                 (${a.schoolId}, ${a.ids.administrator}, 'subscription_problematic', 'Webhook failing', ${kept.id})`

        const reply = yield* owner.delete(`/webhooks/${doomed.id}`)
        assert.deepStrictEqual(BackOffice.dataOf(Schema.Struct({ id: Schema.Int }), reply), { id: doomed.id })

        const count = <E>(query: Effect.Effect<ReadonlyArray<{ readonly n: number }>, E>) => Effect.map(query, (rows) => rows[0]?.n)
        assert.strictEqual(yield* count(sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_subscriptions WHERE school_id = ${a.schoolId} AND id = ${doomed.id}`), 0)
        assert.strictEqual(yield* count(sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_deliveries WHERE school_id = ${a.schoolId} AND subscription_id = ${doomed.id}`), 0)
        assert.strictEqual(yield* count(sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_attempts WHERE school_id = ${a.schoolId} AND delivery_id = ${first}`), 0)
        const events = yield* sql<{ id: number }>`
          SELECT id::float8 AS id FROM outbox_events
          WHERE school_id = ${a.schoolId} AND id IN (${shared}, ${only}, ${unrelated}, ${testEvent}, ${keptTest}) ORDER BY id`
        assert.deepStrictEqual(events.map((row) => row.id), [shared, unrelated, keptTest])
        // The other subscription is untouched: its delivery of the shared event, its attempt, its notification.
        const detail = BackOffice.dataOf(Detail, yield* admin.get(`/webhooks/${kept.id}/deliveries/${keptDelivery}`))
        assert.deepStrictEqual([detail.status, detail.attempts_detail.length], ["delivered", 1])
        const notifications = yield* sql<{ employee_id: number; subscription_id: number | null; message: string }>`
          SELECT employee_id, subscription_id, message FROM notifications
          WHERE school_id = ${a.schoolId} AND kind = 'subscription_problematic' AND message = 'Webhook failing'
          ORDER BY employee_id`
        assert.deepStrictEqual(notifications, [
          { employee_id: a.ids.owner, subscription_id: null, message: "Webhook failing" },
          { employee_id: a.ids.administrator, subscription_id: kept.id, message: "Webhook failing" }
        ].sort((x, y) => x.employee_id - y.employee_id))
        // The owner still sees the notification, without a link.
        const inbox = Schema.decodeUnknownSync(Schema.Struct({
          data: Schema.Array(Schema.Struct({ message: Schema.String, subscription_id: Schema.NullOr(Schema.Int) }))
        }))((yield* owner.get("/notifications?per_page=100")).json)
        assert.isTrue(inbox.data.some((n) => n.message === "Webhook failing" && n.subscription_id === null))
      }))

    it.effect("later calls on it are 404; the administrator may delete; manager and teacher get 403 and nothing goes", () =>
      Effect.gen(function*() {
        const { a, owner, admin, manager, teacher } = yield* World
        const created = yield* create(owner)
        const delivery = yield* insertDelivery(a.schoolId, created.id, yield* insertEvent(a.schoolId), { status: "failed", attempts: 4 })
        for (const as of [manager, teacher]) {
          BackOffice.expectError(yield* as.delete(`/webhooks/${created.id}`), 403, "FORBIDDEN")
          BackOffice.expectError(yield* as.delete("/webhooks/abc"), 403, "FORBIDDEN")
        }
        assert.strictEqual(BackOffice.dataOf(Subscription, yield* owner.get(`/webhooks/${created.id}`)).id, created.id)
        BackOffice.dataOf(Schema.Struct({ id: Schema.Int }), yield* admin.delete(`/webhooks/${created.id}`))
        const gone = [
          yield* owner.get(`/webhooks/${created.id}`),
          yield* owner.get(`/webhooks/${created.id}/deliveries`),
          yield* owner.get(`/webhooks/${created.id}/deliveries/${delivery}`),
          yield* owner.post(`/webhooks/${created.id}/test`),
          yield* owner.post(`/webhooks/${created.id}/deliveries/${delivery}/resend`),
          yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z" }),
          yield* owner.patch(`/webhooks/${created.id}`, { events: ["lead.created"] }),
          yield* owner.post(`/webhooks/${created.id}/disable`),
          yield* owner.post(`/webhooks/${created.id}/enable`),
          yield* owner.delete(`/webhooks/${created.id}`)
        ]
        for (const reply of gone) {
          const error = BackOffice.expectError(reply, 404, "NOT_FOUND")
          assert.include(error.message, String(created.id))
        }
        const list = Schema.decodeUnknownSync(Page)((yield* owner.get("/webhooks?per_page=100")).json, strict)
        assert.isFalse(list.data.some((s) => s.id === created.id))
      }))

    it.effect("404 for another school's subscription and a missing id; 422 for a bad id; nothing of the other school goes", () =>
      Effect.gen(function*() {
        const { b, owner, otherOwner } = yield* World
        const theirs = yield* create(otherOwner)
        yield* insertDelivery(b.schoolId, theirs.id, yield* insertEvent(b.schoolId), { status: "failed", attempts: 4 })
        const before = yield* countRows("webhook_deliveries", b.schoolId)
        BackOffice.expectError(yield* owner.delete(`/webhooks/${theirs.id}`), 404, "NOT_FOUND")
        BackOffice.expectError(yield* owner.delete("/webhooks/2147483000"), 404, "NOT_FOUND")
        for (const bad of ["abc", "0", "-1", "2147483648"]) {
          const error = BackOffice.expectError(yield* owner.delete(`/webhooks/${bad}`), 422, "VALIDATION_FAILED")
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["id"], bad)
        }
        assert.strictEqual(BackOffice.dataOf(Subscription, yield* otherOwner.get(`/webhooks/${theirs.id}`)).id, theirs.id)
        assert.strictEqual(yield* countRows("webhook_deliveries", b.schoolId), before)
      }))

    it.effect("two deletions at once: one 200, the other 404", () =>
      Effect.gen(function*() {
        const { a, owner, admin } = yield* World
        const created = yield* create(owner)
        for (let i = 0; i < 20; i++) {
          yield* insertDelivery(a.schoolId, created.id, yield* insertEvent(a.schoolId, i), { status: "failed", attempts: 4 })
        }
        const replies = yield* Effect.all([owner.delete(`/webhooks/${created.id}`), admin.delete(`/webhooks/${created.id}`)], {
          concurrency: "unbounded"
        })
        assert.deepStrictEqual(replies.map((reply) => reply.status).sort(), [200, 404])
      }))
  })

  describe("the journal: next_attempt_at, webhook_id, skipped entries", () => {
    it.effect("next_attempt_at while pending, null otherwise; webhook_id is the delivery's public id; skipped: no attempt", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const sql = yield* SqlClient.SqlClient
        const created = yield* create(owner)
        const event = yield* insertEvent(a.schoolId)
        const skipped = yield* insertDelivery(a.schoolId, created.id, event, { status: "skipped", finishedAt: "2026-01-05T00:00:00Z" })
        const failed = yield* insertDelivery(a.schoolId, created.id, event, { status: "failed", attempts: 4, responseCode: 500, resendOf: skipped })
        const pending = yield* insertDelivery(a.schoolId, created.id, event, { resendOf: failed })
        yield* sql`
          UPDATE webhook_deliveries SET next_attempt_at = '2030-01-02T03:04:05.123456Z'
          WHERE school_id = ${a.schoolId} AND id = ${pending}`
        const journal = BackOffice.dataOf(Schema.Array(JournalEntry), yield* owner.get(`/webhooks/${created.id}/deliveries`))
        assert.deepStrictEqual(journal.map((d) => [d.id, d.status, d.next_attempt_at]), [
          [pending, "pending", "2030-01-02T03:04:05.123456Z"],
          [failed, "failed", null],
          [skipped, "skipped", null]
        ])
        const stored = yield* sql<{ id: number; public_id: string }>`
          SELECT id::float8 AS id, public_id FROM webhook_deliveries
          WHERE school_id = ${a.schoolId} AND subscription_id = ${created.id} ORDER BY id DESC`
        assert.deepStrictEqual(journal.map((d) => d.webhook_id), stored.map((row) => row.public_id))
        assert.strictEqual(new Set(journal.map((d) => d.webhook_id)).size, 3, "each delivery has its own")
        const entry = journal[2]
        assert.deepStrictEqual(entry && { ...entry, created_at: "", webhook_id: "" }, {
          id: skipped,
          event: "student.created",
          status: "skipped",
          response_code: null,
          attempts: 0,
          created_at: "",
          last_attempt_at: null,
          next_attempt_at: null,
          webhook_id: ""
        })
        const detail = BackOffice.dataOf(Detail, yield* owner.get(`/webhooks/${created.id}/deliveries/${skipped}`))
        assert.deepStrictEqual([detail.status, detail.body, detail.attempts_detail, detail.webhook_id], ["skipped", null, [], entry?.webhook_id])
        const one = BackOffice.dataOf(Detail, yield* owner.get(`/webhooks/${created.id}/deliveries/${pending}`))
        assert.deepStrictEqual([one.next_attempt_at, one.webhook_id], ["2030-01-02T03:04:05.123456Z", journal[0]?.webhook_id])
      }))
  })

  describe("skipped_events and POST /webhooks/{id}/recover with which", () => {
    it.effect("skipped_events: this subscription's skipped deliveries that no delivery repeats yet, on get, list, patch, disable, enable", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const created = yield* create(owner)
        const sibling = yield* create(owner)
        const skipped: Array<number> = []
        for (let i = 0; i < 3; i++) {
          skipped.push(yield* insertDelivery(a.schoolId, created.id, yield* insertEvent(a.schoolId, i), { status: "skipped" }))
        }
        // Failed deliveries and another subscription's skipped ones do not count; a repeated skipped one no longer does.
        yield* insertDelivery(a.schoolId, created.id, yield* insertEvent(a.schoolId), { status: "failed", attempts: 4 })
        yield* insertDelivery(a.schoolId, sibling.id, yield* insertEvent(a.schoolId), { status: "skipped" })
        const [s1 = 0] = skipped
        const event1 = (yield* SqlClient.SqlClient)<{ event_id: number }>`
          SELECT event_id::float8 AS event_id FROM webhook_deliveries WHERE school_id = ${a.schoolId} AND id = ${s1}`
        yield* insertDelivery(a.schoolId, created.id, Number((yield* event1)[0]?.event_id), { status: "failed", attempts: 4, resendOf: s1 })
        const replies = [
          yield* owner.get(`/webhooks/${created.id}`),
          yield* owner.patch(`/webhooks/${created.id}`, { events: ["student.created", "lead.created"] }),
          yield* owner.post(`/webhooks/${created.id}/disable`),
          yield* owner.post(`/webhooks/${created.id}/enable`)
        ]
        for (const reply of replies) assert.strictEqual(BackOffice.dataOf(Subscription, reply).skipped_events, 2)
        const list = Schema.decodeUnknownSync(Page)((yield* owner.get("/webhooks?per_page=100")).json, strict)
        assert.deepStrictEqual(
          [list.data.find((s) => s.id === created.id)?.skipped_events, list.data.find((s) => s.id === sibling.id)?.skipped_events],
          [2, 1]
        )
        // Recovering them brings the count to 0. The first one's earlier recovery failed, so it is queued again too.
        const recovered = yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2020-01-01T00:00:00Z", which: "skipped" })
        assert.deepStrictEqual(BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), recovered, 202), { queued: 3 })
        assert.strictEqual(BackOffice.dataOf(Subscription, yield* owner.get(`/webhooks/${created.id}`)).skipped_events, 0)
      }))

    it.effect("which: skipped queues one new delivery per event skipped at or after since (finished_at), body NULL; failed ones are left to which: failed", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const sql = yield* SqlClient.SqlClient
        const created = yield* create(owner)
        const e: Array<number> = []
        for (let i = 0; i < 6; i++) e.push(yield* insertEvent(a.schoolId, i + 1))
        const [e1 = 0, e2 = 0, e3 = 0, e4 = 0, e5 = 0, e6 = 0] = e
        const skip = (event: number, finishedAt: string) => insertDelivery(a.schoolId, created.id, event, { status: "skipped", finishedAt })
        yield* skip(e1, "2026-03-01T11:59:59.999999Z") // before since
        const d2 = yield* skip(e2, "2026-03-01T12:00:00Z") // exactly since
        const d3 = yield* skip(e3, "2026-03-02T00:00:00Z")
        const d4 = yield* skip(e4, "2026-03-02T00:00:00Z")
        // e4 was recovered and delivered since: nothing to do.
        yield* insertDelivery(a.schoolId, created.id, e4, { status: "delivered", attempts: 1, resendOf: d4 })
        const d5 = yield* skip(e5, "2026-03-03T00:00:00Z")
        // e5 is pending already: nothing to do.
        yield* insertDelivery(a.schoolId, created.id, e5, { resendOf: d5 })
        const f6 = yield* insertDelivery(a.schoolId, created.id, e6, { status: "failed", attempts: 4, finishedAt: "2026-03-04T00:00:00Z", body: "b6" })

        const reply = yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-03-01T15:00:00+03:00", which: "skipped" })
        assert.deepStrictEqual(BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), reply, 202), { queued: 2 })
        const queued = yield* sql<{ event_id: number; resend_of: number; body: string | null }>`
          SELECT event_id::float8 AS event_id, resend_of::float8 AS resend_of, body
          FROM webhook_deliveries
          WHERE school_id = ${a.schoolId} AND subscription_id = ${created.id} AND status = 'pending'
            AND attempts = 0 AND resend_of IN (${d2}, ${d3}, ${f6})
          ORDER BY event_id`
        assert.deepStrictEqual(queued, [
          { event_id: e2, resend_of: d2, body: null },
          { event_id: e3, resend_of: d3, body: null }
        ])
        assert.deepStrictEqual(
          BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-03-01T12:00:00Z", which: "skipped" }), 202),
          { queued: 0 }
        )
        // which: failed (explicit or by default) takes the failure, not the skipped ones.
        assert.deepStrictEqual(
          BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z", which: "failed" }), 202),
          { queued: 1 }
        )
        assert.deepStrictEqual(
          BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z" }), 202),
          { queued: 0 }
        )
        const repeated = yield* sql<{ body: string | null }>`
          SELECT body FROM webhook_deliveries WHERE school_id = ${a.schoolId} AND resend_of = ${f6}`
        assert.deepStrictEqual(repeated, [{ body: "b6" }])
        // e1 (skipped before the first since) is queued by a wider one.
        assert.deepStrictEqual(
          BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z", which: "skipped" }), 202),
          { queued: 1 }
        )
      }))

    it.effect("422 fields.which for anything but failed or skipped; nothing queued", () =>
      Effect.gen(function*() {
        const { a, owner } = yield* World
        const created = yield* create(owner)
        yield* insertDelivery(a.schoolId, created.id, yield* insertEvent(a.schoolId), { status: "skipped", finishedAt: "2026-02-01T00:00:00Z" })
        const before = yield* countRows("webhook_deliveries", a.schoolId)
        for (const which of ["pending", "delivered", "SKIPPED", "", 5, null, ["skipped"]]) {
          const error = BackOffice.expectError(
            yield* owner.post(`/webhooks/${created.id}/recover`, { since: "2026-01-01T00:00:00Z", which }),
            422,
            "VALIDATION_FAILED"
          )
          assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["which"], JSON.stringify(which))
          assert.include(String(error.fields?.["which"]), "failed or skipped")
        }
        const both = BackOffice.expectError(yield* owner.post(`/webhooks/${created.id}/recover`, { since: "soon", which: "all" }), 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(Object.keys(both.fields ?? {}).sort(), ["since", "which"])
        assert.strictEqual(yield* countRows("webhook_deliveries", a.schoolId), before)
      }))
  })

})

const configuredKey = new Uint8Array(Buffer.alloc(32, 7))

const InsecureEnv = World.layer.pipe(
  Layer.provideMerge(
    TestServer.layer({
      settings: {
        ...ROOMY,
        WEBHOOK_ALLOW_INSECURE_URLS: "true",
        WEBHOOK_SECRET_KEY: Buffer.from(configuredKey).toString("base64")
      }
    })
  ),
  Layer.provideMerge(TestDatabase.layer)
)

layer(InsecureEnv, { excludeTestServices: true })("webhook subscriptions, insecure URLs allowed, WEBHOOK_SECRET_KEY set", (it) => {
  it.effect("http and loopback/private receivers are accepted; unusable addresses and other schemes are not", () =>
    Effect.gen(function*() {
      const { owner } = yield* World
      for (const url of ["http://127.0.0.1:9/hook", "http://localhost:8080/in", "https://10.0.0.5/in", "http://[::1]:3000/"]) {
        assert.strictEqual((yield* create(owner, { url, events: ["student.created"] })).url, new URL(url).href)
      }
      for (const url of ["http://0.0.0.0/", "http://224.0.0.1/", "http://[::]/", "ftp://127.0.0.1/", "http://u:p@127.0.0.1/"]) {
        const error = BackOffice.expectError(yield* owner.post("/webhooks", { url, events: ["student.created"] }), 422, "VALIDATION_FAILED")
        assert.deepStrictEqual(Object.keys(error.fields ?? {}), ["url"], url)
      }
    }))

  it.effect("the secret is stored under WEBHOOK_SECRET_KEY (version 1), and only that key decrypts it", () =>
    Effect.gen(function*() {
      const { a, owner } = yield* World
      const sql = yield* SqlClient.SqlClient
      const created = yield* create(owner, { url: "http://127.0.0.1:9/hook", events: ["lead.created"] })
      const rows = yield* sql<{ secret_ciphertext: Uint8Array }>`
        SELECT secret_ciphertext FROM webhook_subscriptions WHERE school_id = ${a.schoolId} AND id = ${created.id}`
      const stored = rows[0]?.secret_ciphertext ?? new Uint8Array()
      assert.strictEqual(stored[0], WebhookSecret.CONFIGURED_VERSION)
      const ring = WebhookSecret.keyRing(Option.some(configuredKey))
      assert.deepStrictEqual(WebhookSecret.decrypt(ring, stored), Result.succeed(created.secret))
      assert.isTrue(Result.isFailure(WebhookSecret.decrypt(WebhookSecret.keyRing(Option.none()), stored)))
    }))

  it.effect("without WEBHOOK_SECRET_KEY the API warns once at start that the development key is used; with it, nothing", () =>
    Effect.gen(function*() {
      const settings = (env: Record<string, string>) =>
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env))
      const [config, warned] = yield* Logs.collect(
        Effect.andThen(Layer.build(DevelopmentKeyWarning), webhookSettings).pipe(Effect.scoped, settings({}))
      )
      assert.strictEqual(warned.length, 1)
      assert.strictEqual(warned[0]?.level, "Warn")
      assert.include(warned[0]?.message ?? "", "development key")
      assert.include(warned[0]?.message ?? "", "WEBHOOK_SECRET_KEY")
      assert.strictEqual(config.secretKey.version, WebhookSecret.DEVELOPMENT_VERSION)
      const [, quiet] = yield* Logs.collect(
        Layer.build(DevelopmentKeyWarning).pipe(
          Effect.scoped,
          settings({ WEBHOOK_SECRET_KEY: Buffer.from(configuredKey).toString("base64") })
        )
      )
      assert.deepStrictEqual(quiet, [])
    }))

  it.effect("the real API process: the development-key warning once at start without WEBHOOK_SECRET_KEY, none with it", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const start = (env: Readonly<Record<string, string>>) =>
        Effect.gen(function*() {
          const port = yield* Effect.orDie(freePort)
          const settings = { DATABASE_URL: database.url, PORT: String(port), HOST: "127.0.0.1", LOG_FORMAT: "json", ...env }
          return yield* runUntil(entryPoints.api, settings, "listening", "SIGTERM", () => Effect.void)
        })
      const unset = yield* start({})
      assert.isTrue(unset.becameReady, unset.stderr)
      const warnings = lines(unset.stdout + unset.stderr).filter((line) => line.includes("development key"))
      assert.strictEqual(warnings.length, 1, unset.stderr)
      assert.include(warnings[0] ?? "", "WEBHOOK_SECRET_KEY")
      const set = yield* start({ WEBHOOK_SECRET_KEY: Buffer.from(configuredKey).toString("base64") })
      assert.isTrue(set.becameReady, set.stderr)
      assert.notInclude(set.stdout + set.stderr, "development key")
    }))

  it.effect("a malformed WEBHOOK_SECRET_KEY stops the API at start: one line naming it, without its value", () =>
    Effect.gen(function*() {
      for (const value of ["c2hvcnQ=", "not-base64-at-all-but-long-enough-to-look-like-it", Buffer.alloc(32, 1).toString("hex")]) {
        const result = yield* run(entryPoints.api, [], { WEBHOOK_SECRET_KEY: value, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" })
        assert.notStrictEqual(result.code, 0)
        assert.strictEqual(result.stdout, "")
        assert.deepStrictEqual(lines(result.stderr).length, 1, result.stderr)
        assert.match(result.stderr, /^invalid setting WEBHOOK_SECRET_KEY: expected the base64 of 32 bytes/u)
        assert.notInclude(result.stderr, value)
      }
    }))
})
