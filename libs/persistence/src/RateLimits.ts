/**
 * The rate-limit store (spec 8, docs/decisions.md "Authentication and
 * scopes", "Rate limits"): ONE statement looks the key up by its prefix,
 * joins the school's plan (read on every request, so a plan change applies
 * to the next one), and, only if the presented secret's hash matches and the
 * key is neither revoked nor expired, decides the request on the key's
 * shared state and records it when accepted (`rate_limit_take`, migration
 * 0200). The row is decoded here, at the edge. A request that does not
 * authenticate writes nothing; a rejected one writes nothing either (a 429
 * consumes no budget, and a flood of them is not a flood of writes).
 *
 * Every API process decides on the same rows: a rejection is decided on one
 * consistent read without a lock; an acceptance takes the key's row lock and
 * decides again on what committed before it, so two processes never take the
 * same slot. On a key's first request and its first acceptance after a plan
 * change the ring is re-laid (O(budget), inside the same call).
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { Plans } from "@school/domain"
import { KeyRecord } from "./ApiKeys.ts"

export interface Limit {
  /** The window, `RATE_LIMIT_WINDOW` (default 60 s). */
  readonly window: Duration.Duration
  /** The request's time in µs since the epoch; omitted: the database's clock (the one every process shares). */
  readonly at?: number
  /** The budget per plan and for no or an unknown plan; omitted: `Plans.budgetPerMinute`. Tests use small ones. */
  readonly budgets?: Budgets
}

export interface Budgets {
  readonly byPlan: Readonly<Record<string, number>>
  readonly fallback: number
}

export type Outcome =
  /** Counted and accepted. */
  | { readonly _tag: "Accepted" }
  /** Counted and rejected: `wait` µs until a request would be accepted. */
  | { readonly _tag: "Rejected"; readonly wait: number }
  /** The secret, or the key's state, does not authenticate: nothing counted, nothing written. */
  | { readonly _tag: "NotCounted" }

/** The key as the statement reads it: the key record, its budget and how long until it expires. */
const AdmittedKey = Schema.Struct({
  ...KeyRecord.fields,
  budget: Schema.Int,
  /** µs until the key expires, when it has an expiry. */
  expires_in: Schema.NullOr(Schema.Number)
})

export interface Admission {
  readonly key: typeof AdmittedKey.Type
  readonly outcome: Outcome
}

const Row = Schema.Struct({
  ...AdmittedKey.fields,
  /** µs to wait, 0 when accepted and recorded; null when not counted. */
  wait: Schema.NullOr(Schema.Number)
})
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(Row))

/** `Plans.budgetPerMinute` as the statement's parameters: the budget of every named plan, and the default. */
export const planBudgets: Budgets = {
  byPlan: Object.fromEntries(Plans.Plan.literals.map((plan) => [plan, Plans.budgetPerMinute(plan)])),
  fallback: Plans.budgetPerMinute(null)
}
const planBudgetsJson = JSON.stringify(planBudgets.byPlan)

export class RateLimits extends Context.Service<RateLimits, {
  /**
   * Authenticates the key with this prefix and secret hash and, when it
   * authenticates, counts the request against its budget; None when no key
   * has this prefix. One round trip.
   */
  admit(prefix: string, secretHash: Uint8Array, limit: Limit): Effect.Effect<Option.Option<Admission>>
}>()("school/persistence/RateLimits") {
  static readonly layer = Layer.effect(
    RateLimits,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const admit = Effect.fnUntraced(function*(prefix: string, secretHash: Uint8Array, limit: Limit) {
        const windowMicros = Math.round(Duration.toMillis(limit.window) * 1000)
        const budgets = limit.budgets ?? planBudgets
        const budgetsJson = limit.budgets === undefined ? planBudgetsJson : JSON.stringify(budgets.byPlan)
        const rows = yield* sql`
          WITH key AS (
            SELECT k.id, k.school_id, k.scope, k.secret_hash,
                   k.revoked_at IS NOT NULL AS revoked,
                   coalesce(k.expires_at <= now(), false) AS expired,
                   (extract(epoch FROM k.expires_at - now()) * 1000000)::float8 AS expires_in,
                   s.plan,
                   coalesce((${budgetsJson}::jsonb ->> s.plan)::int4, ${budgets.fallback}::int4) AS budget
            FROM api_key_prefixes p
            JOIN api_keys k ON k.school_id = p.school_id AND k.prefix = p.prefix
            JOIN schools s ON s.id = k.school_id
            WHERE p.prefix = ${prefix}
          )
          SELECT key.*,
                 CASE WHEN key.secret_hash = ${secretHash} AND NOT key.revoked AND NOT key.expired
                      THEN rate_limit_take(key.school_id, key.id, key.budget, ${limit.at ?? null}::int8,
                                           ${windowMicros}::int8)::float8
                 END AS wait
          FROM key`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
        const row = rows[0]
        if (row === undefined) return Option.none<Admission>()
        const { wait, ...key } = row
        const outcome: Outcome = wait === null
          ? { _tag: "NotCounted" }
          : wait === 0
          ? { _tag: "Accepted" }
          : { _tag: "Rejected", wait }
        return Option.some<Admission>({ key, outcome })
      })

      return RateLimits.of({ admit })
    })
  )
}
