/**
 * Owns the life of a school as the operator sees it (CONTRACT "Operator
 * CLI"): creating one with its owner and main funnel, changing its plan, and
 * issuing API keys. Each is one statement (data-modifying CTEs), so a school
 * is never half created. SQL errors are defects here; callers see only the
 * errors below.
 */
import { formatApiKey, generateApiKey, hashSecret } from "@school/domain/ApiKey"
import type { Plan } from "@school/domain/Plans"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { hashPassword } from "./Passwords.ts"

export class EmailTaken extends Schema.TaggedError<EmailTaken>()("EmailTaken", {
  email: Schema.String
}) {
  override get message(): string {
    return `the login e-mail ${this.email} is already taken`
  }
}

export class SchoolNotFound extends Schema.TaggedError<SchoolNotFound>()("SchoolNotFound", {
  schoolId: Schema.Number
}) {
  override get message(): string {
    return `no school with id ${this.schoolId}`
  }
}

/** The main funnel every school starts with (CONTRACT "schools create"). */
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
    readonly password: string
  }
}

export interface CreatedSchool {
  readonly school_id: number
  readonly owner_id: number
  readonly main_funnel_id: number
}

/** Login e-mails are compared trimmed and lower-cased. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase()

/**
 * A school, its owner (password scrypt-hashed, login e-mail routed), and its
 * main funnel with Incoming 10, In progress 20, Won 30, Lost 40.
 */
export const createSchool = Effect.fn("Schools.createSchool")(
  function*(input: NewSchool): Effect.fn.Return<CreatedSchool, EmailTaken, SqlClient.SqlClient> {
    const sql = yield* SqlClient.SqlClient
    const email = normalizeEmail(input.owner.email)
    const passwordHash = yield* hashPassword(input.owner.password)
    const statuses = sql.join(", ", false)(
      MAIN_FUNNEL_STATUSES.map((status) => sql`(${status.name}::text, ${status.priority}::int)`)
    )
    const rows = yield* sql<CreatedSchool>`
      WITH school AS (
        INSERT INTO schools (name, plan) VALUES (${input.name}, ${input.plan}) RETURNING id
      ), owner AS (
        INSERT INTO employees (school_id, name, email, password_hash, role)
        SELECT id, ${input.owner.name}, ${email}, ${passwordHash}, 'owner' FROM school
        RETURNING school_id, id
      ), login AS (
        INSERT INTO login_emails (email, school_id, employee_id) SELECT ${email}, school_id, id FROM owner
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
        reason.constraint === "login_emails_pkey" ? Effect.fail(new EmailTaken({ email })) : Effect.die(error)),
      Effect.catchTag("SqlError", Effect.die)
    )
    const created = rows[0]
    if (created === undefined) return yield* Effect.die(new Error("createSchool returned no row"))
    return created
  }
)

/** Sets (or, with `null`, clears) a school's plan. */
export const setPlan = Effect.fn("Schools.setPlan")(
  function*(schoolId: number, plan: Plan | null): Effect.fn.Return<void, SchoolNotFound, SqlClient.SqlClient> {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`UPDATE schools SET plan = ${plan} WHERE id = ${schoolId} RETURNING id`.pipe(Effect.orDie)
    if (rows.length === 0) return yield* new SchoolNotFound({ schoolId })
  }
)

export type ApiKeyScope = "read" | "write"

export interface NewApiKey {
  readonly name: string
  readonly scope: ApiKeyScope
  /** ISO 8601; none: never expires. */
  readonly expiresAt?: string | null | undefined
}

/** The key as issued: `key` is the whole `svc_…` string, shown this once and never stored. */
export interface IssuedApiKey {
  readonly id: number
  readonly name: string
  readonly scope: ApiKeyScope
  readonly prefix: string
  readonly key: string
  readonly created_at: string
  readonly expires_at: string | null
}

const insertKey = (schoolId: number, input: NewApiKey) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const drawn = generateApiKey((n) => randomBytes(n))
    // SHA-256 of the secret part is all the database ever holds of a key (DECISIONS "Authentication").
    const rows = yield* sql<Omit<IssuedApiKey, "key">>`
      WITH key AS (
        INSERT INTO api_keys (school_id, name, prefix, secret_hash, scope, expires_at)
        VALUES (${schoolId}, ${input.name}, ${drawn.prefix}, ${hashSecret(drawn.secret)}, ${input.scope},
                ${input.expiresAt ?? null}::timestamptz)
        RETURNING id, school_id, name, scope, prefix, created_at, expires_at
      ), route AS (
        INSERT INTO api_key_prefixes (prefix, school_id) SELECT prefix, school_id FROM key
      )
      SELECT id, name, scope, prefix, api_ts(created_at) AS created_at, api_ts(expires_at) AS expires_at FROM key
    `
    const row = rows[0]
    if (row === undefined) return yield* Effect.die(new Error("issueApiKey returned no row"))
    return { ...row, key: formatApiKey(drawn) } satisfies IssuedApiKey
  })

/**
 * Issues a key for the school. A prefix already taken anywhere (1 in 36^8)
 * draws again. The plan rule (Extended or above) is the caller's: the
 * operator and the demo seed may issue to any school.
 */
export const issueApiKey = Effect.fn("Schools.issueApiKey")(
  function*(
    schoolId: number,
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
