/**
 * API keys as the public API authenticates them (spec 5.1): the prefix finds
 * the key through the global routing table, the school's plan comes along
 * for the rate limit, in one round trip.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKey, Ids, Plans } from "@school/domain"

/** A key as authentication reads it: whose, what it may do, its secret's hash and its state. */
export const KeyRecord = Schema.Struct({
  id: Ids.ApiKeyId,
  school_id: Ids.SchoolId,
  scope: ApiKey.Scope,
  secret_hash: Schema.Uint8Array,
  revoked: Schema.Boolean,
  expired: Schema.Boolean,
  plan: Schema.NullOr(Plans.Plan)
})
export type KeyRecord = typeof KeyRecord.Type

const decodeKeys = Schema.decodeUnknownEffect(Schema.Array(KeyRecord))

export class ApiKeys extends Context.Service<ApiKeys, {
  findByPrefix(prefix: string): Effect.Effect<Option.Option<KeyRecord>>
}>()("school/persistence/ApiKeys") {
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return ApiKeys.of({
        findByPrefix: (prefix) =>
          sql`
            SELECT k.id, k.school_id, k.scope, k.secret_hash,
                   k.revoked_at IS NOT NULL AS revoked,
                   coalesce(k.expires_at <= now(), false) AS expired,
                   s.plan
            FROM api_key_prefixes p
            JOIN api_keys k ON k.school_id = p.school_id AND k.prefix = p.prefix
            JOIN schools s ON s.id = k.school_id
            WHERE p.prefix = ${prefix}`.pipe(
            Effect.flatMap(decodeKeys),
            Effect.map((keys) => Option.fromNullishOr(keys[0])),
            Effect.orDie
          )
      })
    })
  )
}
