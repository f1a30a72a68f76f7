/**
 * The back office's webhook limits over a real socket against a real
 * database (docs/back-office.md "Webhook limits"; docs/operations.md
 * "Settings"):
 * - WEBHOOK_MAX_SUBSCRIPTIONS: at its default (20) the 21st `POST /webhooks`
 *   is 409 CONFLICT naming the limit and writes nothing; a deletion makes
 *   room; another school is not held back; concurrent creations at the
 *   limit never pass it (each round sent as real concurrent requests);
 * - WEBHOOK_ACTIONS_PER_MINUTE: at its default (10) the 11th `test` within a
 *   minute is 429 TOO_MANY_ATTEMPTS with Retry-After and a message that says
 *   the limit and the wait; `resend` and `recover` draw on the same budget,
 *   refused calls (404, 409, 429) do not; each subscription has its own; a
 *   call after Retry-After seconds is accepted and one a second or more
 *   before is not (the stored times moved back in SQL rather than waiting a
 *   minute); concurrent calls never pass the limit;
 * - both settings as the processes read them (defaults, values, malformed
 *   ones) and as the server uses them (a server with low values).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  HostResolver,
  type Resolve,
  WEBHOOK_ACTIONS_PER_MINUTE,
  WEBHOOK_MAX_SUBSCRIPTIONS,
  webhookSettings
} from "@school/api/http/backoffice/Webhooks"
import { DEFAULT_ACTIONS_PER_MINUTE, DEFAULT_MAX_SUBSCRIPTIONS } from "@school/domain/WebhookLimits"
import { InvalidSetting } from "@school/runtime/SettingKinds"
import * as BackOffice from "../support/BackOffice.ts"
import type { RawReply } from "../support/Clients.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const HOOK = "https://hooks.example.test/in"
const resolve: Resolve = (host) =>
  host === "hooks.example.test" ? Effect.succeed(["93.184.215.14"]) : Effect.fail(`${host} does not resolve`)

const Created = BackOffice.CreatedWebhook
const Deleted = Schema.Struct({ id: Schema.Int })
const Queued = Schema.Struct({ event_id: Schema.Int })

/** A school with its owner and administrator signed in. */
const school = Effect.gen(function*() {
  const staff = yield* BackOffice.staffSchool()
  return {
    staff,
    owner: yield* BackOffice.crm(staff.emails.owner),
    admin: yield* BackOffice.crm(staff.emails.administrator)
  }
}).pipe(Effect.orDie)

const subscribe = (as: BackOffice.Crm) => as.post("/webhooks", { url: HOOK, events: ["student.created"] })

/** Creates a subscription as `as` (201 asserted): its id. */
const create = Effect.fnUntraced(function*(as: BackOffice.Crm) {
  return BackOffice.dataOf(Created, yield* subscribe(as), 201).id
}, Effect.orDie)

const countSubscriptions = (schoolId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE school_id = ${schoolId}`
    return rows[0]?.n ?? 0
  }).pipe(Effect.orDie)

const countEvents = (schoolId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox_events WHERE school_id = ${schoolId}`
    return rows[0]?.n ?? 0
  }).pipe(Effect.orDie)

/** A failed delivery of a new (fanned-out) event to the subscription, as the dispatcher leaves it: its id. */
const failedDelivery = (schoolId: number, subscriptionId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: number }>`
      WITH e AS (
        INSERT INTO outbox_events (school_id, event, payload, fanned_out_at)
        VALUES (${schoolId}, 'student.created', json_build_object('student_id', 1, 'student_name', 'Ann', 'filial_id', 0), now())
        RETURNING school_id, id
      )
      INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, body, status, attempts, finished_at)
      SELECT school_id, ${subscriptionId}, id, 'student.created', '{}', 'failed', 4, now() FROM e
      RETURNING id::float8 AS id`
    return rows[0]?.id ?? 0
  }).pipe(Effect.orDie)

/** Moves the subscription's stored action times `seconds` into the past, as if that long had gone by. */
const age = (schoolId: number, subscriptionId: number, seconds: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
      UPDATE webhook_subscriptions
      SET action_times = ARRAY(SELECT t - ${seconds}::float8 * interval '1 second' FROM unnest(action_times) t)
      WHERE school_id = ${schoolId} AND id = ${subscriptionId}`
  }).pipe(Effect.orDie)

/** A 429 TOO_MANY_ATTEMPTS: its Retry-After (whole seconds, at least 1, at most a minute), also said in the message with the limit. */
const throttled = (reply: RawReply, limit: number): number => {
  const error = BackOffice.expectError(reply, 429, "TOO_MANY_ATTEMPTS")
  const header = reply.headers.get("retry-after") ?? ""
  assert.match(header, /^[1-9][0-9]*$/u)
  const seconds = Number(header)
  assert.isAtMost(seconds, 60)
  assert.include(error.message, `at most ${limit} `)
  assert.include(error.message, `Retry after ${seconds} second${seconds === 1 ? "" : "s"}`)
  assert.isUndefined(error.fields)
  return seconds
}

const Env = TestServer.layer().pipe(Layer.provide(Layer.succeed(HostResolver, resolve)), Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true })("webhook limits at their defaults", (it) => {
  describe("WEBHOOK_MAX_SUBSCRIPTIONS", () => {
    it.effect("the default is 20: the 21st is 409 CONFLICT naming the limit, nothing written; a deletion makes room; other schools are not held back", () =>
      Effect.gen(function*() {
        assert.strictEqual(DEFAULT_MAX_SUBSCRIPTIONS, 20)
        const { admin, owner, staff } = yield* school
        const ids: Array<number> = []
        for (let i = 0; i < 20; i++) ids.push(yield* create(i % 2 === 0 ? owner : admin))
        for (const as of [owner, admin]) {
          const error = BackOffice.expectError(yield* subscribe(as), 409, "CONFLICT")
          assert.include(error.message, "20 webhook subscriptions")
          assert.include(error.message, "delete one before adding another")
          assert.isUndefined(error.fields)
        }
        assert.strictEqual(yield* countSubscriptions(staff.schoolId), 20)
        // A bad body is still 422 first: the limit is checked on a valid request.
        BackOffice.expectError(yield* owner.post("/webhooks", { url: HOOK, events: [] }), 422, "VALIDATION_FAILED")
        // Disabled ones count too.
        yield* owner.post(`/webhooks/${ids[0]}/disable`)
        BackOffice.expectError(yield* subscribe(owner), 409, "CONFLICT")
        BackOffice.dataOf(Deleted, yield* owner.delete(`/webhooks/${ids[0]}`))
        yield* create(owner)
        BackOffice.expectError(yield* subscribe(owner), 409, "CONFLICT")
        const other = yield* school
        yield* create(other.owner)
      }))

    it.effect("concurrent creations at the limit: exactly one of them gets the last place, every round", () =>
      Effect.gen(function*() {
        const { owner, admin, staff } = yield* school
        for (let i = 0; i < 19; i++) yield* create(owner)
        for (let round = 0; round < 3; round++) {
          const replies = yield* Effect.all(
            Array.from({ length: 8 }, (_, i) => subscribe(i % 2 === 0 ? owner : admin)),
            { concurrency: "unbounded" }
          )
          const statuses = replies.map((reply) => reply.status)
          assert.deepStrictEqual(statuses.filter((status) => status === 201).length, 1, JSON.stringify(statuses))
          for (const reply of replies.filter((reply) => reply.status !== 201)) BackOffice.expectError(reply, 409, "CONFLICT")
          assert.strictEqual(yield* countSubscriptions(staff.schoolId), 20)
          // Make room for the next round.
          const created = replies.find((reply) => reply.status === 201)
          BackOffice.dataOf(Deleted, yield* owner.delete(`/webhooks/${created === undefined ? 0 : BackOffice.dataOf(Created, created, 201).id}`))
        }
        // From none at all: 30 at once, 20 created.
        const empty = yield* school
        const replies = yield* Effect.all(
          Array.from({ length: 30 }, (_, i) => subscribe(i % 2 === 0 ? empty.owner : empty.admin)),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(replies.filter((reply) => reply.status === 201).length, 20)
        assert.strictEqual(replies.filter((reply) => reply.status === 409).length, 10)
        assert.strictEqual(yield* countSubscriptions(empty.staff.schoolId), 20)
      }), { timeout: 60_000 })
  })

  describe("WEBHOOK_ACTIONS_PER_MINUTE", () => {
    it.effect("the default is 10: the 11th test call within a minute is 429 with Retry-After; nothing is queued", () =>
      Effect.gen(function*() {
        assert.strictEqual(DEFAULT_ACTIONS_PER_MINUTE, 10)
        const { owner, admin, staff } = yield* school
        const id = yield* create(owner)
        for (let i = 0; i < 10; i++) BackOffice.dataOf(Queued, yield* (i % 2 === 0 ? owner : admin).post(`/webhooks/${id}/test`), 202)
        const before = yield* countEvents(staff.schoolId)
        const seconds = throttled(yield* owner.post(`/webhooks/${id}/test`), 10)
        // Ten calls just now: the first leaves the minute in about a minute.
        assert.isAtLeast(seconds, 50)
        throttled(yield* admin.post(`/webhooks/${id}/test`), 10)
        assert.strictEqual(yield* countEvents(staff.schoolId), before)
        // Another subscription of the school has its own budget.
        BackOffice.dataOf(Queued, yield* owner.post(`/webhooks/${yield* create(owner)}/test`), 202)
      }))

    it.effect("resend and recover draw on the same budget; a 404, a 409 and a 429 do not count", () =>
      Effect.gen(function*() {
        const { owner, staff } = yield* school
        const id = yield* create(owner)
        const delivery = yield* failedDelivery(staff.schoolId, id)
        // Refused calls first: none of them counts.
        yield* owner.post(`/webhooks/${id}/disable`)
        for (let i = 0; i < 12; i++) {
          BackOffice.expectError(yield* owner.post(`/webhooks/${id}/test`), 409, "CONFLICT")
          BackOffice.expectError(yield* owner.post(`/webhooks/${id}/recover`, { since: "2026-01-01T00:00:00Z" }), 409, "CONFLICT")
        }
        yield* owner.post(`/webhooks/${id}/enable`)
        for (let i = 0; i < 12; i++) {
          BackOffice.expectError(yield* owner.post(`/webhooks/${id}/deliveries/2147483000/resend`), 404, "NOT_FOUND")
        }
        // 4 tests, 3 resends, 3 recoveries: the budget of 10.
        for (let i = 0; i < 4; i++) BackOffice.dataOf(Queued, yield* owner.post(`/webhooks/${id}/test`), 202)
        for (let i = 0; i < 3; i++) {
          BackOffice.dataOf(Schema.Struct({ delivery_id: Schema.Int }), yield* owner.post(`/webhooks/${id}/deliveries/${delivery}/resend`), 202)
        }
        for (const which of ["failed", "skipped", undefined]) {
          const body = which === undefined ? { since: "2026-01-01T00:00:00Z" } : { since: "2026-01-01T00:00:00Z", which }
          BackOffice.dataOf(Schema.Struct({ queued: Schema.Int }), yield* owner.post(`/webhooks/${id}/recover`, body), 202)
        }
        throttled(yield* owner.post(`/webhooks/${id}/test`), 10)
        throttled(yield* owner.post(`/webhooks/${id}/deliveries/${delivery}/resend`), 10)
        throttled(yield* owner.post(`/webhooks/${id}/recover`, { since: "2026-01-01T00:00:00Z", which: "skipped" }), 10)
        // Disabled beats the limit: 409, as for any call on a disabled subscription.
        yield* owner.post(`/webhooks/${id}/disable`)
        BackOffice.expectError(yield* owner.post(`/webhooks/${id}/test`), 409, "CONFLICT")
      }))

    it.effect("a call after Retry-After seconds is accepted; one sent a second or more before is not", () =>
      Effect.gen(function*() {
        const { owner, staff } = yield* school
        const id = yield* create(owner)
        for (let i = 0; i < 10; i++) BackOffice.dataOf(Queued, yield* owner.post(`/webhooks/${id}/test`), 202)
        const seconds = throttled(yield* owner.post(`/webhooks/${id}/test`), 10)
        // Two seconds short of Retry-After: still refused, with about two seconds left.
        yield* age(staff.schoolId, id, seconds - 2)
        const left = throttled(yield* owner.post(`/webhooks/${id}/test`), 10)
        assert.include([1, 2], left)
        // The rest of the wait: accepted.
        yield* age(staff.schoolId, id, 2)
        BackOffice.dataOf(Queued, yield* owner.post(`/webhooks/${id}/test`), 202)
        // A whole minute later every call has left the window: ten more.
        yield* age(staff.schoolId, id, 60)
        for (let i = 0; i < 10; i++) BackOffice.dataOf(Queued, yield* owner.post(`/webhooks/${id}/test`), 202)
        throttled(yield* owner.post(`/webhooks/${id}/test`), 10)
        // The stored times never outgrow the limit.
        const sql = yield* SqlClient.SqlClient
        const stored = yield* sql<{ n: number }>`
          SELECT cardinality(action_times) AS n FROM webhook_subscriptions WHERE school_id = ${staff.schoolId} AND id = ${id}`
        assert.strictEqual(stored[0]?.n, 10)
      }))

    it.effect("concurrent calls never pass the limit: 10 of 16 accepted", () =>
      Effect.gen(function*() {
        const { owner, admin, staff } = yield* school
        const id = yield* create(owner)
        const delivery = yield* failedDelivery(staff.schoolId, id)
        const calls = Array.from({ length: 16 }, (_, i) => {
          const as = i % 2 === 0 ? owner : admin
          return i % 3 === 0
            ? as.post(`/webhooks/${id}/deliveries/${delivery}/resend`)
            : i % 3 === 1
            ? as.post(`/webhooks/${id}/test`)
            : as.post(`/webhooks/${id}/recover`, { since: "2026-01-01T00:00:00Z" })
        })
        const replies = yield* Effect.all(calls, { concurrency: "unbounded" })
        assert.strictEqual(replies.filter((reply) => reply.status === 202).length, 10, JSON.stringify(replies.map((r) => r.status)))
        for (const reply of replies.filter((reply) => reply.status !== 202)) throttled(reply, 10)
      }))
  })
})

const LOW = { WEBHOOK_MAX_SUBSCRIPTIONS: "2", WEBHOOK_ACTIONS_PER_MINUTE: "3" }

const LowEnv = TestServer.layer({
  settings: { WEBHOOK_SECRET_KEY: Buffer.alloc(32, 3).toString("base64"), ...LOW }
}).pipe(
  Layer.provide(Layer.succeed(HostResolver, resolve)),
  Layer.provideMerge(TestDatabase.layer)
)

layer(LowEnv, { excludeTestServices: true })("webhook limits set low", (it) => {
  it.effect("WEBHOOK_MAX_SUBSCRIPTIONS=2 and WEBHOOK_ACTIONS_PER_MINUTE=3: the server holds to them and its messages say them", () =>
    Effect.gen(function*() {
      const { owner } = yield* school
      const id = yield* create(owner)
      yield* create(owner)
      assert.include(BackOffice.expectError(yield* subscribe(owner), 409, "CONFLICT").message, "2 webhook subscriptions")
      for (let i = 0; i < 3; i++) BackOffice.dataOf(Queued, yield* owner.post(`/webhooks/${id}/test`), 202)
      throttled(yield* owner.post(`/webhooks/${id}/test`), 3)
    }))
})

const loadFrom = (env: Record<string, string>) =>
  Effect.all({ webhookMaxSubscriptions: WEBHOOK_MAX_SUBSCRIPTIONS, webhookActionsPerMinute: WEBHOOK_ACTIONS_PER_MINUTE }).pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
  )

/** What the handlers read at start, from `env` (a key given, so no development-key warning). */
const serverGets = (env: Record<string, string>) =>
  webhookSettings.pipe(
    Effect.provideService(
      ConfigProvider.ConfigProvider,
      ConfigProvider.fromEnv({ env: { WEBHOOK_SECRET_KEY: Buffer.alloc(32).toString("base64"), ...env } })
    )
  )

describe("the settings (docs/operations.md \"Settings\")", () => {
  it.effect("defaults 20 and 10; values 1..10000; what the server is given", () =>
    Effect.gen(function*() {
      const defaults = yield* loadFrom({})
      assert.deepStrictEqual([defaults.webhookMaxSubscriptions, defaults.webhookActionsPerMinute], [20, 10])
      const set = yield* loadFrom({ WEBHOOK_MAX_SUBSCRIPTIONS: "10000", WEBHOOK_ACTIONS_PER_MINUTE: " 1 " })
      assert.deepStrictEqual([set.webhookMaxSubscriptions, set.webhookActionsPerMinute], [10_000, 1])
      const settings = yield* serverGets({ WEBHOOK_MAX_SUBSCRIPTIONS: "10000", WEBHOOK_ACTIONS_PER_MINUTE: " 1 " })
      assert.deepStrictEqual([settings.maxSubscriptions, settings.actionsPerMinute], [10_000, 1])
      const unset = yield* serverGets({})
      assert.deepStrictEqual([unset.maxSubscriptions, unset.actionsPerMinute], [20, 10])
    }))

  it.effect.each([
    ["WEBHOOK_MAX_SUBSCRIPTIONS", "0"],
    ["WEBHOOK_MAX_SUBSCRIPTIONS", "10001"],
    ["WEBHOOK_MAX_SUBSCRIPTIONS", "twenty"],
    ["WEBHOOK_ACTIONS_PER_MINUTE", "-1"],
    ["WEBHOOK_ACTIONS_PER_MINUTE", "2.5"],
    ["WEBHOOK_ACTIONS_PER_MINUTE", "1e3"]
  ] as const)("a malformed %s (%s) names the setting", ([name, value]) =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(loadFrom({ [name]: value }))
      assert.instanceOf(error, InvalidSetting)
      assert.strictEqual(error.message, `invalid setting ${name}: expected an integer 1..10000, got ${JSON.stringify(value)}`)
    }))
})
