/**
 * API keys as the public API authenticates them (spec 5.1): the prefix finds
 * the key through the global routing table, the school's plan comes along
 * for the rate limit, in one round trip.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

export interface KeyRecord {
  readonly id: number
  readonly school_id: number
  readonly scope: "read" | "write"
  readonly secret_hash: Uint8Array
  readonly revoked: boolean
  readonly expired: boolean
  readonly plan: string | null
}

export class ApiKeys extends Context.Service<ApiKeys, {
  findByPrefix(prefix: string): Effect.Effect<Option.Option<KeyRecord>>
}>()("school/persistence/ApiKeys") {
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return ApiKeys.of({
        findByPrefix: (prefix) =>
          sql<KeyRecord>`
            SELECT k.id, k.school_id, k.scope, k.secret_hash,
                   k.revoked_at IS NOT NULL AS revoked,
                   coalesce(k.expires_at <= now(), false) AS expired,
                   s.plan
            FROM api_key_prefixes p
            JOIN api_keys k ON k.school_id = p.school_id AND k.prefix = p.prefix
            JOIN schools s ON s.id = k.school_id
            WHERE p.prefix = ${prefix}`.pipe(
            Effect.map((rows) => Option.fromNullishOr(rows[0])),
            Effect.orDie
          )
      })
    })
  )
}
