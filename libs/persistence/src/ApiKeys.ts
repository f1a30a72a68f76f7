/**
 * API keys as the public API authenticates them (docs/integrators.md
 * "Authentication"): the prefix finds
 * the key through the global routing table, the school's plan comes along
 * for the rate limit, in one round trip. And as the back office lists and
 * revokes them (docs/back-office.md "API keys"): never the secret nor its
 * hash; every such call takes the caller's SchoolId, so another school's key
 * is not found, like a missing one. Revoking sets `revoked_at` once (a
 * second revocation keeps the first time); the trigger of migration 0200
 * then tells every API process's rate limiter (NOTIFY
 * `rate_limit_invalidate`), so the key answers `revoked_key` at once.
 * Issuing is Schools.ts's (`issueApiKey`, `issueApiKeyOnPlan`).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { ApiKey, Ids, Plans } from "@school/domain"
import { ApiKeyView } from "@school/domain/ApiKey"
import { type PageRequest, toWindow } from "@school/domain/Pagination"
import { type PageResult, pageReader } from "./Paging.ts"
import { named } from "./Spans.ts"

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

/** A key of a school, as the back office names it. */
const SchoolKey = Schema.Struct({ school_id: Ids.SchoolId, id: Ids.ApiKeyId })

export class ApiKeys extends Context.Service<ApiKeys, {
  findByPrefix(prefix: string): Effect.Effect<Option.Option<KeyRecord>>
  /** The school's keys by ascending id, as the back office shows them. */
  list(schoolId: Ids.SchoolId, page: PageRequest): Effect.Effect<PageResult<ApiKeyView>>
  /** Revokes the school's key (the first revocation's time stays); None: no such key in this school. */
  revoke(schoolId: Ids.SchoolId, id: Ids.ApiKeyId): Effect.Effect<Option.Option<ApiKeyView>>
}>()("school/persistence/ApiKeys") {
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const readPage = pageReader(sql, ApiKeyView)
      const columns = sql`id, name, scope, prefix, api_ts(created_at) AS created_at,
        api_ts(expires_at) AS expires_at, api_ts(revoked_at) AS revoked_at`
      const findKey = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: KeyRecord,
        execute: (prefix) =>
          sql`
            SELECT k.id, k.school_id, k.scope, k.secret_hash,
                   k.revoked_at IS NOT NULL AS revoked,
                   coalesce(k.expires_at <= now(), false) AS expired,
                   s.plan
            FROM api_key_prefixes p
            JOIN api_keys k ON k.school_id = p.school_id AND k.prefix = p.prefix
            JOIN schools s ON s.id = k.school_id
            WHERE p.prefix = ${prefix}`
      })
      const revokeKey = SqlSchema.findOneOption({
        Request: SchoolKey,
        Result: ApiKeyView,
        execute: ({ id, school_id }) =>
          sql`
            UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
            WHERE school_id = ${school_id} AND id = ${id}
            RETURNING ${columns}`
      })
      return ApiKeys.of({
        findByPrefix: named("ApiKeys.findByPrefix", (prefix) => findKey(prefix).pipe(Effect.orDie)),
        list: named("ApiKeys.list", (schoolId, page) => {
          const { limit, offset } = toWindow(page)
          return readPage(
            sql`SELECT count(*)::int AS total FROM api_keys WHERE school_id = ${schoolId}`,
            sql`SELECT ${columns} FROM api_keys WHERE school_id = ${schoolId} ORDER BY id LIMIT ${limit} OFFSET ${offset}`
          )
        }),
        revoke: named("ApiKeys.revoke", (schoolId, id) => revokeKey({ school_id: schoolId, id }).pipe(Effect.orDie))
      })
    })
  )
}
