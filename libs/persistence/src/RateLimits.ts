/**
 * The rate-limit store (spec 8, DECISIONS "Authentication", "Rate limits"):
 * ONE statement looks the key up by its prefix, joins the school's plan (read
 * on every request, so a plan change applies to the next one), and, only if
 * the presented secret's hash matches and the key is neither revoked nor
 * expired, decides the request on the key's shared state and records it when
 * accepted. A request that does not authenticate writes nothing; a rejected
 * one writes nothing either (a 429 consumes no budget, and a flood of them is
 * not a flood of writes).
 *
 * The decision is an atomic compare-and-set: `UPDATE … WHERE
 * rate_limit_wait(…) = 0`. PostgreSQL re-evaluates that condition on the
 * newest row version when another process updated the row meanwhile, so two
 * processes never both take the last slot. When the snapshot said "accept"
 * but the row had moved on (or two first requests of a key raced to create
 * its row), the statement reports a lost race and runs again.
 */
import { Context, Duration, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Plans } from "@school/domain"
import type { KeyRecord } from "./ApiKeys.ts"

/** The channel the invalidation triggers of migration 0200 notify, with the school id as payload. */
export const INVALIDATE_CHANNEL = "rate_limit_invalidate"

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

export interface Admission {
  readonly key: KeyRecord & {
    readonly budget: number
    /** µs until the key expires, when it has an expiry. */
    readonly expires_in: number | null
  }
  readonly outcome: Outcome
}

interface Row {
  readonly id: number
  readonly school_id: number
  readonly scope: "read" | "write"
  readonly secret_hash: Uint8Array
  readonly revoked: boolean
  readonly expired: boolean
  readonly plan: string | null
  readonly budget: number
  readonly expires_in: number | null
  readonly counted: boolean
  readonly accepted: boolean
  readonly wait: number | null
}

/** A lost race means another process accepted a request of this key meanwhile; this many in a row is implausible. */
const MAX_ATTEMPTS = 8

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
   * has this prefix. One round trip (more only after a lost race).
   */
  admit(prefix: string, secretHash: Uint8Array, limit: Limit): Effect.Effect<Option.Option<Admission>>
}>()("school/persistence/RateLimits") {
  static readonly layer = Layer.effect(
    RateLimits,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const attempt = (
        prefix: string,
        secretHash: Uint8Array,
        windowMicros: number,
        at: number | null,
        budgetsJson: string,
        fallback: number
      ) =>
        sql<Row>`
          WITH key AS (
            SELECT k.id, k.school_id, k.scope, k.secret_hash,
                   k.revoked_at IS NOT NULL AS revoked,
                   coalesce(k.expires_at <= now(), false) AS expired,
                   (extract(epoch FROM k.expires_at - now()) * 1000000)::float8 AS expires_in,
                   s.plan,
                   coalesce((${budgetsJson}::jsonb ->> s.plan)::int4, ${fallback}::int4) AS budget
            FROM api_key_prefixes p
            JOIN api_keys k ON k.school_id = p.school_id AND k.prefix = p.prefix
            JOIN schools s ON s.id = k.school_id
            WHERE p.prefix = ${prefix}
          ),
          caller AS MATERIALIZED (
            SELECT school_id, id, budget,
                   coalesce(${at}::int8, (extract(epoch FROM clock_timestamp()) * 1000000)::int8) AS at_us
            FROM key
            WHERE secret_hash = ${secretHash} AND NOT revoked AND NOT expired
          ),
          seen AS (
            SELECT r.ring, r.head
            FROM rate_limits r JOIN caller c ON r.school_id = c.school_id AND r.key_id = c.id
          ),
          taken AS (
            UPDATE rate_limits r
            SET ring = rate_limit_ring(r.ring, r.head, c.at_us, c.budget),
                head = rate_limit_head(r.ring, r.head, c.budget)
            FROM caller c
            WHERE r.school_id = c.school_id AND r.key_id = c.id
              AND rate_limit_wait(r.ring, r.head, c.at_us, c.budget, ${windowMicros}::int8) = 0
            RETURNING 1
          ),
          created AS (
            INSERT INTO rate_limits (school_id, key_id, ring, head)
            SELECT c.school_id, c.id, rate_limit_ring('{}', 0, c.at_us, c.budget), rate_limit_head('{}', 0, c.budget)
            FROM caller c
            WHERE NOT EXISTS (SELECT FROM seen)
            ON CONFLICT DO NOTHING
            RETURNING 1
          )
          SELECT key.id, key.school_id, key.scope, key.secret_hash, key.revoked, key.expired, key.plan, key.budget,
                 key.expires_in,
                 EXISTS (SELECT FROM caller) AS counted,
                 EXISTS (SELECT FROM taken) OR EXISTS (SELECT FROM created) AS accepted,
                 (SELECT rate_limit_wait(seen.ring, seen.head, caller.at_us, caller.budget, ${windowMicros}::int8)::float8
                  FROM seen, caller) AS wait
          FROM key`.pipe(Effect.orDie)

      const admit = Effect.fnUntraced(function*(prefix: string, secretHash: Uint8Array, limit: Limit) {
        const windowMicros = Math.round(Duration.toMillis(limit.window) * 1000)
        const budgetsJson = limit.budgets === undefined ? planBudgetsJson : JSON.stringify(limit.budgets.byPlan)
        const fallback = (limit.budgets ?? planBudgets).fallback
        for (let attempts = 1;; attempts++) {
          const row = (yield* attempt(prefix, secretHash, windowMicros, limit.at ?? null, budgetsJson, fallback))[0]
          if (row === undefined) return Option.none<Admission>()
          const { counted, accepted, wait, ...key } = row
          const outcome: Outcome | undefined = !counted
            ? { _tag: "NotCounted" }
            : accepted
            ? { _tag: "Accepted" }
            : wait !== null && wait > 0
            ? { _tag: "Rejected", wait }
            : attempts >= MAX_ATTEMPTS
            // Give up answering exactly: a one-second wait errs on the safe side.
            ? { _tag: "Rejected", wait: 1_000_000 }
            : undefined
          if (outcome !== undefined) return Option.some<Admission>({ key, outcome })
        }
      })

      return RateLimits.of({ admit })
    })
  )
}
