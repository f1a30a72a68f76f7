/**
 * The rate-limit store (docs/integrators.md "Limits", docs/decisions.md "Authentication and
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
 *
 * `admitAll` is the same statement for many requests at once (the API
 * batches the requests that reach it in the same tick, docs/decisions.md
 * "Batched authentication"): the requests as arrays (`unnest … WITH
 * ORDINALITY`), one key lookup for all, and `rate_limit_take` called once per
 * authenticating request in the order (school, key, arrival). PostgreSQL
 * evaluates a volatile function of the select list after the `ORDER BY`
 * sort (its SELECT reference, "SELECT List"), each call sees the writes of
 * the calls before it (a volatile function takes a new snapshot per
 * statement inside it), so two requests of one key in a batch take two
 * slots exactly as two statements would; and since every batch takes its
 * keys' row locks in the same (school, key) order, two processes' batches
 * cannot deadlock. The batch is one statement, so one transaction: a
 * failure fails every request of it and counts none of them.
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
// Both statements' rows are decoded by hand, not through `SqlSchema`: on this
// per-request read its encoding of the request costs about 0.3 µs more, for
// parameters that need no encoding.
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(Row))

const BatchRow = Schema.Struct({
  ...Row.fields,
  /** The request's position in the batch, from 1. */
  ord: Schema.Int
})
const decodeBatchRows = Schema.decodeUnknownEffect(Schema.Array(BatchRow))

/** One request of a batch: the presented prefix and secret hash, and its time (µs) when not the database's. */
export interface AdmitRequest {
  readonly prefix: string
  readonly secretHash: Uint8Array
  readonly at?: number | undefined
}

/** The batch's settings: the window and budgets every request of it shares. */
export type BatchLimit = Omit<Limit, "at">

const outcomeOf = (wait: number | null): Outcome =>
  wait === null ? { _tag: "NotCounted" } : wait === 0 ? { _tag: "Accepted" } : { _tag: "Rejected", wait }

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
  /**
   * `admit` for many requests in ONE statement, in order: the answer at
   * index i is request i's. Requests of one key are counted in their order
   * in the array, as if sent one after the other.
   */
  admitAll(
    requests: ReadonlyArray<AdmitRequest>,
    limit: BatchLimit
  ): Effect.Effect<ReadonlyArray<Option.Option<Admission>>>
}>()("school/persistence/RateLimits") {
  static readonly layer = Layer.effect(
    RateLimits,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const admit = Effect.fn("RateLimits.admit")(function*(prefix: string, secretHash: Uint8Array, limit: Limit) {
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
        return Option.some<Admission>({ key, outcome: outcomeOf(wait) })
      })

      const admitAll = Effect.fn("RateLimits.admitAll")(function*(requests: ReadonlyArray<AdmitRequest>, limit: BatchLimit) {
        if (requests.length === 0) return []
        const windowMicros = Math.round(Duration.toMillis(limit.window) * 1000)
        const budgets = limit.budgets ?? planBudgets
        const budgetsJson = limit.budgets === undefined ? planBudgetsJson : JSON.stringify(budgets.byPlan)
        const prefixes = requests.map((request) => request.prefix)
        const hashes = requests.map((request) => Buffer.from(request.secretHash).toString("hex"))
        // -1: the database's clock (the driver cannot type an array of nulls).
        const ats = requests.map((request) => request.at ?? -1)
        // The select list's CASE (with the volatile rate_limit_take) is
        // evaluated after the sort, row by row in this order.
        const rows = yield* sql`
          WITH req AS (
            SELECT r.prefix, decode(r.hash, 'hex') AS hash, nullif(r.at, -1) AS at, r.ord::int4 AS ord
            FROM unnest(${prefixes}::text[], ${hashes}::text[], ${ats}::int8[]) WITH ORDINALITY AS r(prefix, hash, at, ord)
          ), key AS (
            SELECT req.ord, req.at, req.hash = k.secret_hash AS matches,
                   k.id, k.school_id, k.scope, k.secret_hash,
                   k.revoked_at IS NOT NULL AS revoked,
                   coalesce(k.expires_at <= now(), false) AS expired,
                   (extract(epoch FROM k.expires_at - now()) * 1000000)::float8 AS expires_in,
                   s.plan,
                   coalesce((${budgetsJson}::jsonb ->> s.plan)::int4, ${budgets.fallback}::int4) AS budget
            FROM req
            JOIN api_key_prefixes p ON p.prefix = req.prefix
            JOIN api_keys k ON k.school_id = p.school_id AND k.prefix = p.prefix
            JOIN schools s ON s.id = k.school_id
          )
          SELECT key.ord, key.id, key.school_id, key.scope, key.secret_hash, key.revoked, key.expired,
                 key.expires_in, key.plan, key.budget,
                 CASE WHEN key.matches AND NOT key.revoked AND NOT key.expired
                      THEN rate_limit_take(key.school_id, key.id, key.budget, key.at, ${windowMicros}::int8)::float8
                 END AS wait
          FROM key
          ORDER BY key.school_id, key.id, key.ord`.pipe(Effect.flatMap(decodeBatchRows), Effect.orDie)
        const answers: Array<Option.Option<Admission>> = requests.map(() => Option.none())
        for (const { ord, wait, ...key } of rows) {
          answers[ord - 1] = Option.some({ key, outcome: outcomeOf(wait) })
        }
        return answers
      })

      return RateLimits.of({ admit, admitAll })
    })
  )
}
