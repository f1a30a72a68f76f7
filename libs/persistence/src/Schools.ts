/**
 * Owns the life of a school as the operator sees it (docs/operations.md
 * "Operator CLI"): creating one with its owner and main funnel, changing its
 * plan, and issuing API keys: `issueApiKeyOnPlan` applies the plan rule of
 * docs/back-office.md "API keys" (`Plans.canIssueKeys`) for the back office and `keys create`;
 * `issueApiKey` issues to any school (the demo seed, test fixtures); and
 * revoking a key for `keys revoke` (`revokeApiKey`). Each
 * write is one statement (data-modifying CTEs), so a school is never half
 * created. Rows are decoded here; SQL and decode errors are
 * defects, so callers see only domain errors (libs/domain/src/DomainErrors.ts:
 * `EmailTaken`, `SchoolNotFound`, `PlanTooLow`, `ApiKeyNotFound`). Passwords
 * come hashed (libs/runtime/src/Passwords.ts).
 */
import { formatApiKey, generateApiKey, hashSecret, Scope } from "@school/domain/ApiKey"
import { ApiKeyNotFound, EmailTaken, PlanTooLow, SchoolNotFound } from "@school/domain/DomainErrors"
import * as Ids from "@school/domain/Ids"
import { canIssueKeys, Plan } from "@school/domain/Plans"
import { Timestamp } from "@school/domain/Timestamps"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { randomBytes } from "node:crypto"

/** The main funnel every school starts with (docs/operations.md "schools create"). */
export const MAIN_FUNNEL_NAME = "Main funnel"
export const MAIN_FUNNEL_STATUSES: ReadonlyArray<{ readonly name: string; readonly priority: number }> = [
  { name: "Incoming", priority: 10 },
  { name: "In progress", priority: 20 },
  { name: "Won", priority: 30 },
  { name: "Lost", priority: 40 }
]

export interface NewSchool {
  readonly name: string
  /** `null`: no plan. */
  readonly plan: Plan | null
  readonly owner: {
    readonly name: string
    readonly email: string
    /** Already hashed (libs/runtime/src/Passwords.ts `hashPassword`). */
    readonly passwordHash: string
  }
}

const CreatedSchool = Schema.Struct({
  school_id: Ids.SchoolId,
  owner_id: Schema.Int,
  main_funnel_id: Schema.Int
})
export type CreatedSchool = typeof CreatedSchool.Type

/** Login e-mails are compared trimmed and lower-cased. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase()

/** A new school as the statement writes it: the owner's e-mail normalized, the password hashed. */
const SchoolInsert = Schema.Struct({
  name: Schema.String,
  plan: Schema.NullOr(Plan),
  owner: Schema.Struct({ name: Schema.String, email: Schema.String, passwordHash: Schema.String })
})

// One row: the school, its owner and its funnel were inserted together.
const insertSchool = SqlSchema.findOne({
  Request: SchoolInsert,
  Result: CreatedSchool,
  execute: ({ name, owner, plan }) =>
    SqlClient.SqlClient.use((sql) => {
      const statuses = sql.join(", ", false)(
        MAIN_FUNNEL_STATUSES.map((status) => sql`(${status.name}::text, ${status.priority}::int)`)
      )
      return sql`
        WITH school AS (
          INSERT INTO schools (name, plan) VALUES (${name}, ${plan}) RETURNING id
        ), owner AS (
          INSERT INTO employees (school_id, name, email, password_hash, role)
          SELECT id, ${owner.name}, ${owner.email}, ${owner.passwordHash}, 'owner' FROM school
          RETURNING school_id, id
        ), login AS (
          INSERT INTO login_emails (email, school_id, employee_id) SELECT ${owner.email}, school_id, id FROM owner
        ), funnel AS (
          INSERT INTO funnels (school_id, name, is_main) SELECT id, ${MAIN_FUNNEL_NAME}, true FROM school
          RETURNING school_id, id
        ), statuses AS (
          INSERT INTO pipeline_statuses (school_id, funnel_id, name, priority)
          SELECT funnel.school_id, funnel.id, s.name, s.priority
          FROM funnel, (VALUES ${statuses}) AS s (name, priority)
        )
        SELECT school.id AS school_id, owner.id AS owner_id, funnel.id AS main_funnel_id
        FROM school, owner, funnel
      `.pipe(
        Effect.catchReason("SqlError", "UniqueViolation", (reason, error) =>
          reason.constraint === "login_emails_pkey" ? Effect.fail(new EmailTaken({ email: owner.email })) : Effect.die(error)),
        Effect.catchTag("SqlError", Effect.die)
      )
    })
})

/**
 * A school, its owner (with the password hash given, login e-mail routed), and its
 * main funnel with Incoming 10, In progress 20, Won 30, Lost 40.
 */
export const createSchool = Effect.fn("Schools.createSchool")(
  function*(input: NewSchool): Effect.fn.Return<CreatedSchool, EmailTaken, SqlClient.SqlClient> {
    const owner = { ...input.owner, email: normalizeEmail(input.owner.email) }
    return yield* insertSchool({ ...input, owner }).pipe(
      Effect.catchTag(["SchemaError", "NoSuchElementError"], Effect.die)
    )
  }
)

const anySchoolRow = SqlSchema.findOne({
  Request: Schema.Void,
  Result: Schema.Struct({ any: Schema.Boolean }),
  execute: () => SqlClient.SqlClient.use((sql) => sql`SELECT EXISTS (SELECT 1 FROM schools) AS any`)
})

/** Whether the database holds any school yet (`npm start` seeds the demo school into an empty one). */
export const anySchool: Effect.Effect<boolean, never, SqlClient.SqlClient> = anySchoolRow().pipe(
  Effect.map((row) => row.any),
  Effect.orDie,
  Effect.withSpan("Schools.anySchool")
)

/** Sets (or, with `null`, clears) a school's plan. */
export const setPlan = Effect.fn("Schools.setPlan")(
  function*(schoolId: Ids.SchoolId, plan: Plan | null): Effect.fn.Return<void, SchoolNotFound, SqlClient.SqlClient> {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`UPDATE schools SET plan = ${plan} WHERE id = ${schoolId} RETURNING id`.pipe(Effect.orDie)
    if (rows.length === 0) return yield* new SchoolNotFound({ schoolId })
  }
)

export interface NewApiKey {
  readonly name: string
  readonly scope: Scope
  /** ISO 8601; none: never expires. */
  readonly expiresAt?: string | null | undefined
}

/** The key's row as stored (no secret). */
const IssuedKeyRow = Schema.Struct({
  id: Ids.ApiKeyId,
  name: Schema.String,
  scope: Scope,
  prefix: Schema.String,
  created_at: Timestamp,
  expires_at: Schema.NullOr(Timestamp)
})
type IssuedKeyRow = typeof IssuedKeyRow.Type

/** The key as issued: `key` is the whole `svc_…` string, shown this once and never stored. */
export interface IssuedApiKey extends IssuedKeyRow {
  readonly key: string
}

/** The key's row as the statement writes it. */
const KeyInsert = Schema.Struct({
  school_id: Ids.SchoolId,
  name: Schema.String,
  prefix: Schema.String,
  secret_hash: Schema.Uint8Array,
  scope: Scope,
  expires_at: Schema.NullOr(Schema.String)
})

// One row: the key was inserted (or the statement failed).
const insertKeyRow = SqlSchema.findOne({
  Request: KeyInsert,
  Result: IssuedKeyRow,
  execute: (key) =>
    SqlClient.SqlClient.use((sql) =>
      sql`
        WITH key AS (
          INSERT INTO api_keys (school_id, name, prefix, secret_hash, scope, expires_at)
          VALUES (${key.school_id}, ${key.name}, ${key.prefix}, ${key.secret_hash}, ${key.scope},
                  ${key.expires_at}::timestamptz)
          RETURNING id, school_id, name, scope, prefix, created_at, expires_at
        ), route AS (
          INSERT INTO api_key_prefixes (prefix, school_id) SELECT prefix, school_id FROM key
        )
        SELECT id, name, scope, prefix, api_ts(created_at) AS created_at, api_ts(expires_at) AS expires_at FROM key
      `
    )
})

const insertKey = (schoolId: Ids.SchoolId, input: NewApiKey) =>
  Effect.gen(function*() {
    const drawn = generateApiKey((n) => randomBytes(n))
    // SHA-256 of the secret part is all the database ever holds of a key
    // (docs/decisions.md "Authentication and scopes").
    const row = yield* insertKeyRow({
      school_id: schoolId,
      name: input.name,
      prefix: drawn.prefix,
      secret_hash: hashSecret(drawn.secret),
      scope: input.scope,
      expires_at: input.expiresAt ?? null
    }).pipe(Effect.catchTag(["SchemaError", "NoSuchElementError"], Effect.die))
    return { ...row, key: formatApiKey(drawn) } satisfies IssuedApiKey
  })

/**
 * Issues a key for the school. A prefix already taken anywhere (1 in 36^8)
 * draws again. The plan rule (Extended or above) is the caller's: the
 * operator and the demo seed may issue to any school.
 */
export const issueApiKey = Effect.fn("Schools.issueApiKey")(
  function*(
    schoolId: Ids.SchoolId,
    input: NewApiKey
  ): Effect.fn.Return<IssuedApiKey, SchoolNotFound, SqlClient.SqlClient> {
    return yield* insertKey(schoolId, input).pipe(
      Effect.retry({
        times: 3,
        while: (error) => error.reason._tag === "UniqueViolation"
      }),
      Effect.catchReason("SqlError", "ConstraintError", () => Effect.fail(new SchoolNotFound({ schoolId }))),
      Effect.catchTag("SqlError", Effect.die)
    )
  }
)

const readPlan = SqlSchema.findOneOption({
  Request: Ids.SchoolId,
  Result: Schema.Struct({ plan: Schema.NullOr(Schema.String) }),
  execute: (schoolId) => SqlClient.SqlClient.use((sql) => sql`SELECT plan FROM schools WHERE id = ${schoolId} FOR SHARE`)
})

/**
 * Issues a key when the school's plan allows it (docs/back-office.md "API keys", `canIssueKeys`:
 * Extended or Pro; no plan is below Extended). The plan is read under a
 * share lock on the school's row in the key's own transaction, so a
 * concurrent plan change waits for the key, or the key for the change; the
 * transaction is retried whole on the rare prefix collision.
 */
export const issueApiKeyOnPlan = Effect.fn("Schools.issueApiKeyOnPlan")(
  function*(
    schoolId: Ids.SchoolId,
    input: NewApiKey
  ): Effect.fn.Return<IssuedApiKey, SchoolNotFound | PlanTooLow, SqlClient.SqlClient> {
    const sql = yield* SqlClient.SqlClient
    const issue = Effect.gen(function*() {
      const school = yield* readPlan(schoolId).pipe(Effect.catchTag("SchemaError", Effect.die))
      if (Option.isNone(school)) return yield* new SchoolNotFound({ schoolId })
      const { plan } = school.value
      if (!canIssueKeys(plan)) return yield* new PlanTooLow({ schoolId, plan })
      return yield* insertKey(schoolId, input)
    })
    return yield* sql.withTransaction(issue).pipe(
      Effect.retry({
        times: 3,
        while: (error) => error._tag === "SqlError" && error.reason._tag === "UniqueViolation"
      }),
      Effect.catchTag("SqlError", Effect.die)
    )
  }
)

const RevokedKey = Schema.Struct({
  id: Ids.ApiKeyId,
  prefix: Schema.String,
  revoked_at: Timestamp
})
export type RevokedKey = typeof RevokedKey.Type

// One row: the SELECT has no FROM.
const revokeKey = SqlSchema.findOne({
  Request: Schema.Struct({ school_id: Ids.SchoolId, id: Ids.ApiKeyId }),
  Result: Schema.Struct({ school_found: Schema.Boolean, key: Schema.NullOr(RevokedKey) }),
  execute: ({ id, school_id }) =>
    SqlClient.SqlClient.use((sql) =>
      sql`
        WITH revoked AS (
          UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
          WHERE school_id = ${school_id} AND id = ${id}
          RETURNING id, prefix, api_ts(revoked_at) AS revoked_at
        )
        SELECT EXISTS (SELECT 1 FROM schools WHERE id = ${school_id}) AS school_found,
               (SELECT to_jsonb(revoked) FROM revoked) AS key
      `
    )
})

/**
 * Revokes a school's key for the operator (docs/operations.md "keys revoke"),
 * as the back office's DELETE /api-keys/{id} does: `revoked_at` is set once
 * (a second revocation keeps the first time) and the trigger of migration
 * 0200 tells every API process's rate limiter. An unknown school and an
 * unknown key are told apart, for the operator's one line.
 */
export const revokeApiKey = Effect.fn("Schools.revokeApiKey")(
  function*(
    schoolId: Ids.SchoolId,
    keyId: Ids.ApiKeyId
  ): Effect.fn.Return<RevokedKey, SchoolNotFound | ApiKeyNotFound, SqlClient.SqlClient> {
    const result = yield* Effect.orDie(revokeKey({ school_id: schoolId, id: keyId }))
    if (!result.school_found) return yield* new SchoolNotFound({ schoolId })
    if (result.key === null) return yield* new ApiKeyNotFound({ schoolId, keyId })
    return result.key
  }
)
