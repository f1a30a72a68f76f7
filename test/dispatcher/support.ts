/**
 * What the dispatcher's tests share: a school with full-access and other
 * staff, subscriptions with real secrets (encrypted as the back office
 * stores them), outbox events written as a business write writes them, the
 * deliveries' rows, and an in-process dispatcher (the real Layer over this
 * file's database) with short delays and time-outs.
 */
import type { PgClient } from "@effect/sql-pg"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import { ConfigProvider, Effect, Layer, Option, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { Dispatcher } from "../../apps/dispatcher/src/Dispatcher.ts"
import * as Fixtures from "../support/Fixtures.ts"

const one = <A>(rows: ReadonlyArray<A>): A => {
  const row = rows[0]
  if (row === undefined) throw new Error("expected one row")
  return row
}

/** A school with an owner, an administrator, a manager and a teacher: their ids by role. */
export const school = Effect.fnUntraced(function*(name: string) {
  const sql = yield* SqlClient.SqlClient
  const { schoolId } = yield* Fixtures.school("pro", name)
  const staff: Record<string, number> = {}
  for (const role of ["owner", "administrator", "manager", "teacher"]) {
    staff[role] = one(yield* sql<{ id: number }>`
      INSERT INTO employees (school_id, name, email, password_hash, role)
      VALUES (${schoolId}, ${role}, ${`${role}@${name.replaceAll(" ", "-")}.test`}, 'x', ${role}) RETURNING id`).id
  }
  return { schoolId, staff }
}, Effect.orDie)

export interface Subscription {
  readonly id: number
  readonly secret: string
}

/** A subscription of `schoolId` to `url` for `events`, with a fresh secret. */
export const subscription = Effect.fnUntraced(function*(
  schoolId: number,
  url: string,
  events: ReadonlyArray<string> = ["lead.created", "student.created", "payment.received"]
) {
  const sql = yield* SqlClient.SqlClient
  const secret = WebhookSecret.generateSecret()
  const ciphertext = WebhookSecret.encrypt(WebhookSecret.currentKey(Option.none()), secret)
  const { id } = one(yield* sql<{ id: number }>`
    INSERT INTO webhook_subscriptions (school_id, url, events, secret_ciphertext)
    VALUES (${schoolId}, ${url}, ARRAY(SELECT json_array_elements_text(${JSON.stringify(events)}::json)), ${ciphertext})
    RETURNING id`)
  return { id, secret } satisfies Subscription
}, Effect.orDie)

/** `count` `lead.created` events of the school in ONE statement (one NOTIFY); their ids. */
export const leads = Effect.fnUntraced(function*(schoolId: number, count: number, name = "Lead") {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string }>`
    INSERT INTO outbox_events (school_id, event, payload)
    SELECT ${schoolId}, 'lead.created',
           json_build_object('lead_id', g, 'name', ${name} || ' ' || g, 'phone', '+79000000000', 'source', 'api')
    FROM generate_series(1, ${count}) g
    RETURNING id::text AS id`
  return rows.map((row) => Number(row.id))
}, Effect.orDie)

export interface DeliveryRow {
  readonly id: number
  /** The opaque id receivers see. */
  readonly public_id: string
  readonly subscription_id: number
  readonly event_id: number
  readonly status: string
  readonly attempts: number
  readonly body: string | null
  readonly resend_of: number | null
}

export const deliveries = Effect.fnUntraced(function*(schoolId: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<DeliveryRow>`
    SELECT id::float8 AS id, public_id, subscription_id, event_id::float8 AS event_id, status, attempts, body,
           resend_of::float8 AS resend_of
    FROM webhook_deliveries WHERE school_id = ${schoolId} ORDER BY id`
}, Effect.orDie)

/**
 * `count` resends of a school's delivery, as the back office writes them (libs/persistence/src/Webhooks.ts:
 * the same event, subscription and stored body, `resend_of` it, each its own `resend_key`): pending, or delivered
 * `deliveredDaysAgo` days ago.
 */
export const resends = Effect.fnUntraced(function*(schoolId: number, delivery: DeliveryRow | undefined, count: number, deliveredDaysAgo?: number) {
  const sql = yield* SqlClient.SqlClient
  const days = deliveredDaysAgo ?? null
  yield* sql`
    INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, body, resend_of, resend_key, status, finished_at)
    SELECT d.school_id, d.subscription_id, d.event_id, d.event, d.body, d.id, nextval('webhook_deliveries_resend_key'),
           CASE WHEN ${days}::int IS NULL THEN 'pending' ELSE 'delivered' END, now() - make_interval(days => ${days}::int)
    FROM webhook_deliveries d, generate_series(1, ${count}::int)
    WHERE d.school_id = ${schoolId} AND d.id = ${delivery?.id ?? 0}::int8`
}, Effect.orDie)

export interface AttemptRow {
  readonly delivery_id: number
  readonly attempt: number
  readonly response_code: number | null
  readonly error: string | null
  readonly duration_ms: number
  readonly response_body: string | null
}

export const attempts = Effect.fnUntraced(function*(schoolId: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<AttemptRow>`
    SELECT delivery_id::float8 AS delivery_id, attempt, response_code, error, duration_ms, response_body
    FROM webhook_attempts WHERE school_id = ${schoolId} ORDER BY delivery_id, attempt`
}, Effect.orDie)

export const subscriptionStatus = Effect.fnUntraced(function*(schoolId: number, id: number) {
  const sql = yield* SqlClient.SqlClient
  return one(yield* sql<{ status: string }>`
    SELECT status FROM webhook_subscriptions WHERE school_id = ${schoolId} AND id = ${id}`).status
}, Effect.orDie)

export const setStatus = Effect.fnUntraced(function*(schoolId: number, id: number, status: string) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE webhook_subscriptions SET status = ${status} WHERE school_id = ${schoolId} AND id = ${id}`
}, Effect.orDie)

export const notifications = Effect.fnUntraced(function*(schoolId: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ employee_id: number; kind: string; subscription_id: number | null; message: string }>`
    SELECT employee_id, kind, subscription_id, message FROM notifications WHERE school_id = ${schoolId} ORDER BY id`
}, Effect.orDie)

/** Polls `check` every 20 ms until it holds (dies after `timeoutMs`). */
export const eventually = <A, E, R>(
  what: string,
  get: Effect.Effect<A, E, R>,
  check: (value: A) => boolean,
  timeoutMs = 15_000
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const started = Date.now()
    while (true) {
      const value = yield* get
      if (check(value)) return value
      if (Date.now() - started > timeoutMs) {
        return yield* Effect.die(new Error(`not within ${timeoutMs} ms: ${what}; last: ${JSON.stringify(value)}`))
      }
      yield* Effect.sleep("20 millis")
    }
  })

/**
 * The test defaults (docs/operations.md "Settings", as the environment would
 * give them): loopback receivers allowed, short delays and time-out.
 */
export const TEST_SETTINGS: Readonly<Record<string, string>> = {
  DISPATCHER_CONCURRENCY: "32",
  DISPATCHER_PER_SUBSCRIPTION: "4",
  WEBHOOK_TIMEOUT: "1000ms",
  WEBHOOK_RETRY_DELAYS: "100ms,200ms,300ms",
  WEBHOOK_ALLOW_INSECURE_URLS: "true"
}

/**
 * Runs the real dispatcher in this process over this file's database until
 * the scope closes, with the test defaults and `settings` over them; the
 * test process's own environment does not reach it.
 */
export const runDispatcher = (
  settings: Readonly<Record<string, string>> = {}
): Effect.Effect<void, never, Scope.Scope | SqlClient.SqlClient | PgClient.PgClient> =>
  Effect.gen(function*() {
    const database = yield* Effect.context<SqlClient.SqlClient | PgClient.PgClient>()
    yield* Layer.build(
      Dispatcher.layer.pipe(
        Layer.provide(DeliveryQueue.layer),
        Layer.provide(Layer.succeedContext(database)),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ ...TEST_SETTINGS, ...settings })))
      )
    ).pipe(Effect.orDie)
  })
