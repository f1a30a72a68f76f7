/**
 * Owns the schema's history: every migration, in order, and the one effect
 * that applies the pending ones. Reruns are no-ops. The migrator applies only
 * the ids above the highest one a database has applied, so a new migration
 * takes the next free id (`docs/schema.sql` shows what they build together).
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Core from "./migrations/0001_core.ts"
import * as Writes from "./migrations/0100_writes.ts"
import * as RateLimits from "./migrations/0200_rate_limits.ts"
import * as RowCounts from "./migrations/0300_row_counts.ts"
import * as IdempotencyOwner from "./migrations/0400_idempotency_owner.ts"
import * as Sessions from "./migrations/0500_sessions.ts"
import * as BackOffice from "./migrations/0510_back_office.ts"
import * as FirstAttended from "./migrations/0540_attendance_first_attended.ts"
import * as Dispatcher from "./migrations/0600_dispatcher.ts"
import * as FairDelivery from "./migrations/0700_fair_delivery.ts"
import * as OutboxTraceparent from "./migrations/0800_outbox_traceparent.ts"
import * as EmployeeDisabled from "./migrations/0900_employee_disabled.ts"
import * as LoginThrottle from "./migrations/1000_login_throttle.ts"
import * as WebhookListeners from "./migrations/1100_webhook_listeners.ts"
import * as DeliveryWrites from "./migrations/1200_delivery_writes.ts"
import * as DeliveryEventKey from "./migrations/1300_delivery_event_key.ts"
import * as RateLimitPlans from "./migrations/1400_rate_limit_plans.ts"
import * as UpdatedDayCounts from "./migrations/1500_updated_day_counts.ts"

/** A migration that runs its statements one by one. */
export const fromStatements = (statements: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const statement of statements) {
      yield* sql.unsafe(statement)
    }
  })

/** Every migration, keyed `<id>_<name>` as the migrator reads them. */
export const migrations = {
  "0001_core": fromStatements(Core.statements),
  "0100_writes": fromStatements(Writes.statements),
  "0200_rate_limits": fromStatements(RateLimits.statements),
  "0300_row_counts": fromStatements(RowCounts.statements),
  "0400_idempotency_owner": fromStatements(IdempotencyOwner.statements),
  "0500_sessions": fromStatements(Sessions.statements),
  "0510_back_office": fromStatements(BackOffice.statements),
  "0540_attendance_first_attended": fromStatements(FirstAttended.statements),
  "0600_dispatcher": fromStatements(Dispatcher.statements),
  "0700_fair_delivery": fromStatements(FairDelivery.statements),
  "0800_outbox_traceparent": fromStatements(OutboxTraceparent.statements),
  "0900_employee_disabled": fromStatements(EmployeeDisabled.statements),
  "1000_login_throttle": fromStatements(LoginThrottle.statements),
  "1100_webhook_listeners": fromStatements(WebhookListeners.statements),
  "1200_delivery_writes": fromStatements(DeliveryWrites.statements),
  "1300_delivery_event_key": fromStatements(DeliveryEventKey.statements),
  "1400_rate_limit_plans": fromStatements(RateLimitPlans.statements),
  "1500_updated_day_counts": fromStatements(UpdatedDayCounts.statements)
}

/** Applies every pending migration; returns the ones it applied. */
export const runMigrations = Migrator.make({})({
  loader: Migrator.fromRecord(migrations)
})

/** The highest migration id a database has applied, as one row (none applied: null). */
const LatestRow = Schema.Struct({ latest: Schema.NullOr(Schema.Number) })
const decodeLatest = Schema.decodeUnknownEffect(LatestRow)

/** PostgreSQL's undefined_table: the migrator's table does not exist, so nothing was applied. */
const isUndefinedTable = (error: SqlError): boolean => {
  const cause = error.reason.cause
  return Predicate.hasProperty(cause, "code") && cause.code === "42P01"
}

/**
 * The migrations this code expects that the database lacks, in order (none:
 * up to date): exactly what `npm run migrate` would apply. The migrator
 * records each applied migration as a row (`migration_id`, `name`) of
 * `effect_sql_migrations` and applies only the ids above the highest one
 * recorded (a database without that table has applied none), so those are
 * the missing ones. One round trip; the readiness of both processes asks it
 * (docs/operations.md "Process endpoints").
 */
export const missingMigrations: Effect.Effect<ReadonlyArray<string>, SqlError, SqlClient.SqlClient> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT max(migration_id) AS latest FROM effect_sql_migrations`.pipe(
      Effect.catchIf(isUndefinedTable, () => Effect.succeed([{ latest: null }]))
    )
    const { latest } = yield* Effect.orDie(decodeLatest(rows[0]))
    return Object.keys(migrations).filter((key) => Number(key.slice(0, key.indexOf("_"))) > (latest ?? 0))
  }
)
