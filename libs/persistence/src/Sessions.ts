/**
 * The back office's staff sessions and failed logins (docs/decisions.md
 * "Back-office sessions"): who a login e-mail is, the failures counted per
 * (e-mail, client address) and per address, their purge, and sessions stored by the hash of their token, found through the
 * global routing table `session_tokens`. A disabled employee
 * (docs/back-office.md "Staff") has no live session: the lookup of every
 * call checks it, so a session that slipped in beside the disabling is dead
 * too. The caller's own password change (docs/back-office.md "Signing in").
 * Rows are decoded here; SQL and decode failures are defects.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { Ids } from "@school/domain"
import { WrongPassword } from "@school/domain/DomainErrors"
import * as LoginThrottle from "@school/domain/LoginThrottle"
import { Employee } from "@school/domain/Staff"
import { Timestamp } from "@school/domain/Timestamps"
import { normalizeEmail } from "./Schools.ts"
import { named } from "./Spans.ts"

/** An employee as sign-in reads them: who, the stored password hash, and whether they are disabled. */
export const LoginRecord = Schema.Struct({
  school_id: Ids.SchoolId,
  employee: Employee,
  password_hash: Schema.String,
  disabled: Schema.Boolean
})
export type LoginRecord = typeof LoginRecord.Type

/** A live session (neither revoked nor expired). */
export const SessionRecord = Schema.Struct({
  school_id: Ids.SchoolId,
  id: Schema.Int,
  employee: Employee,
  expires_at: Timestamp
})
export type SessionRecord = typeof SessionRecord.Type

/**
 * What the sign-in throttle knows of an (e-mail, address) pair and of the
 * address (docs/decisions.md "Back-office sessions"; the rule is
 * `@school/domain/LoginThrottle`), with the database's clock (milliseconds).
 */
export const ThrottleRecord = Schema.Struct({
  failures: Schema.NullOr(Schema.Int),
  last_failed_at_ms: Schema.NullOr(Schema.Number),
  address_ms: Schema.Number,
  now_ms: Schema.Number
})
export type ThrottleRecord = typeof ThrottleRecord.Type

/** Live sessions per employee, at most: the oldest ends when one more is created. */
export const MAX_LIVE_SESSIONS = 20

/** Rows each statement of the purge deletes, at most. */
export const PURGE_BATCH = 500

/** A new session as the statement writes it: whose, its token's hash, and its time to live in seconds. */
const SessionInsert = Schema.Struct({
  school_id: Ids.SchoolId,
  employee_id: Schema.Number,
  token_hash: Schema.Uint8Array,
  ttl_seconds: Schema.Number
})

export class Sessions extends Context.Service<Sessions, {
  /** The employee whose login e-mail this is (compared trimmed and lower-cased). */
  findLogin(email: string): Effect.Effect<Option.Option<LoginRecord>>
  /** The failures of this (e-mail, client address) and the state of the address. */
  throttle(email: string, address: string): Effect.Effect<ThrottleRecord>
  /**
   * A wrong password from this address: one more failure for the pair (a
   * fresh count when its last one is older than `forgetAfterMs`), and the
   * address's state moved one `intervalMs` later (from now at the earliest).
   */
  recordFailure(email: string, address: string, intervalMs: number, forgetAfterMs: number): Effect.Effect<void>
  /** A refused attempt (429) from this address: its state moves one `intervalMs` later. */
  recordRefusal(address: string, intervalMs: number): Effect.Effect<void>
  /** A right password from this address forgets the pair's failures. */
  clearFailures(email: string, address: string): Effect.Effect<void>
  /**
   * One batch of each: pair failures older than `forgetAfterMs`, idle
   * addresses, expired or revoked sessions. How many rows it deleted; the
   * caller runs it again while a batch was full.
   */
  purge(forgetAfterMs: number): Effect.Effect<number>
  /**
   * A new session of `ttl` for the employee, stored by its token's hash; none
   * when they are disabled. Their oldest live sessions end with it, so at
   * most MAX_LIVE_SESSIONS stay live.
   */
  create(
    schoolId: Ids.SchoolId,
    employeeId: number,
    tokenHash: Uint8Array,
    ttl: Duration.Duration
  ): Effect.Effect<Option.Option<{ readonly id: number; readonly expires_at: string }>>
  /** The live session whose token has this hash. */
  findLive(tokenHash: Uint8Array): Effect.Effect<Option.Option<SessionRecord>>
  /** Ends a session at once. */
  revoke(schoolId: Ids.SchoolId, sessionId: number): Effect.Effect<void>
  /** The employee's stored password hash (checked by the caller, libs/runtime/src/Passwords.ts). */
  passwordHash(schoolId: Ids.SchoolId, employeeId: number): Effect.Effect<Option.Option<string>>
  /**
   * Stores the employee's new password hash if the stored one is still
   * `seenHash` (the one the current password was checked against), and ends
   * every other live session of theirs in the same statement; `WrongPassword`
   * when it changed meanwhile. How many sessions it ended.
   */
  changePassword(
    schoolId: Ids.SchoolId,
    employeeId: number,
    keepSessionId: number,
    seenHash: string,
    newHash: string
  ): Effect.Effect<number, WrongPassword>
}>()("school/persistence/Sessions") {
  static readonly layer = Layer.effect(
    Sessions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const employeeJson = sql`json_build_object('id', e.id, 'name', e.name, 'email', e.email, 'role', e.role)`
      // The e-mail already normalized.
      const findLogin = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: LoginRecord,
        execute: (email) =>
          sql`
            SELECT e.school_id, ${employeeJson} AS employee, e.password_hash, e.disabled
            FROM login_emails l
            JOIN employees e ON e.school_id = l.school_id AND e.id = l.employee_id
            WHERE l.email = ${email}`
      })
      const ms = (column: string) => sql`(extract(epoch FROM ${sql.literal(column)}) * 1000)::float8`
      // The e-mail already normalized.
      const findThrottle = SqlSchema.findOne({
        Request: Schema.Struct({ email: Schema.String, address: Schema.String }),
        Result: ThrottleRecord,
        execute: (key) =>
          sql`
            SELECT f.failures, ${ms("f.last_failed_at")} AS last_failed_at_ms,
                   coalesce(${ms("a.next_failure_at")}, 0) AS address_ms,
                   ${ms("clock_timestamp()")} AS now_ms
            FROM (SELECT 1) one
            LEFT JOIN login_failures f ON f.email = ${key.email} AND f.address = ${key.address}
            LEFT JOIN login_addresses a ON a.address = ${key.address}`
      })
      const refuse = (address: string, intervalMs: number) =>
        sql`
          INSERT INTO login_addresses (address, next_failure_at)
          VALUES (${address}, clock_timestamp() + make_interval(secs => ${intervalMs / 1000}))
          ON CONFLICT (address) DO UPDATE
          SET next_failure_at = greatest(login_addresses.next_failure_at, clock_timestamp())
                                + make_interval(secs => ${intervalMs / 1000})`
      // One row: the session was inserted (or the statement failed).
      const insertSession = SqlSchema.findOneOption({
        Request: SessionInsert,
        Result: Schema.Struct({ id: Schema.Int, expires_at: Timestamp }),
        execute: (session) =>
          sql`
            WITH session AS (
              INSERT INTO sessions (school_id, employee_id, token_hash, expires_at)
              SELECT school_id, id, ${session.token_hash}, now() + make_interval(secs => ${session.ttl_seconds})
              FROM employees WHERE school_id = ${session.school_id} AND id = ${session.employee_id} AND NOT disabled
              RETURNING school_id, id, token_hash, expires_at
            ), route AS (
              INSERT INTO session_tokens (token_hash, school_id) SELECT token_hash, school_id FROM session
            ), capped AS (
              UPDATE sessions SET revoked_at = now()
              WHERE school_id = ${session.school_id} AND id IN (
                SELECT id FROM sessions
                WHERE school_id = ${session.school_id} AND employee_id = ${session.employee_id}
                  AND revoked_at IS NULL AND expires_at > now() AND EXISTS (SELECT 1 FROM session)
                ORDER BY created_at DESC, id DESC
                OFFSET ${MAX_LIVE_SESSIONS - 1}
              )
            )
            SELECT id, api_ts(expires_at) AS expires_at FROM session`
      })
      const findLive = SqlSchema.findOneOption({
        Request: Schema.Uint8Array,
        Result: SessionRecord,
        execute: (tokenHash) =>
          sql`
            SELECT s.school_id, s.id, ${employeeJson} AS employee, api_ts(s.expires_at) AS expires_at
            FROM session_tokens t
            JOIN sessions s ON s.school_id = t.school_id AND s.token_hash = t.token_hash
            JOIN employees e ON e.school_id = s.school_id AND e.id = s.employee_id
            WHERE t.token_hash = ${tokenHash} AND s.revoked_at IS NULL AND s.expires_at > now() AND NOT e.disabled`
      })
      const findPasswordHash = SqlSchema.findOneOption({
        Request: Schema.Struct({ school_id: Ids.SchoolId, id: Schema.Int }),
        Result: Schema.Struct({ password_hash: Schema.String }),
        execute: (key) => sql`SELECT password_hash FROM employees WHERE school_id = ${key.school_id} AND id = ${key.id}`
      })
      // One row when the hash was still the one seen: the sessions it ended.
      const storePassword = SqlSchema.findOneOption({
        Request: Schema.Struct({
          school_id: Ids.SchoolId,
          id: Schema.Int,
          keep: Schema.Int,
          seen: Schema.String,
          hash: Schema.String
        }),
        Result: Schema.Struct({ ended: Schema.Int }),
        execute: (change) =>
          sql`
            WITH employee AS (
              UPDATE employees SET password_hash = ${change.hash}
              WHERE school_id = ${change.school_id} AND id = ${change.id} AND password_hash = ${change.seen}
              RETURNING school_id, id
            ), ended AS (
              UPDATE sessions s SET revoked_at = now() FROM employee e
              WHERE s.school_id = e.school_id AND s.employee_id = e.id AND s.id <> ${change.keep}
                AND s.revoked_at IS NULL AND s.expires_at > now()
              RETURNING 1
            )
            SELECT (SELECT count(*)::int FROM ended) AS ended FROM employee`
      })
      return Sessions.of({
        findLogin: named("Sessions.findLogin", (email) => findLogin(normalizeEmail(email)).pipe(Effect.orDie)),
        throttle: named("Sessions.throttle", (email, address) =>
          findThrottle({ email: normalizeEmail(email), address }).pipe(Effect.orDie)),
        recordFailure: named("Sessions.recordFailure", (email, address, intervalMs, forgetAfterMs) =>
          sql.withTransaction(Effect.andThen(
            sql`
              INSERT INTO login_failures (email, address, failures, last_failed_at)
              VALUES (${normalizeEmail(email)}, ${address}, 1, clock_timestamp())
              ON CONFLICT (email, address) DO UPDATE
              SET failures = CASE
                    WHEN login_failures.last_failed_at < clock_timestamp() - make_interval(secs => ${forgetAfterMs / 1000})
                    THEN 1 ELSE login_failures.failures + 1 END,
                  last_failed_at = clock_timestamp()`,
            refuse(address, intervalMs)
          )).pipe(Effect.asVoid, Effect.orDie)),
        recordRefusal: named("Sessions.recordRefusal", (address, intervalMs) =>
          refuse(address, intervalMs).pipe(Effect.asVoid, Effect.orDie)),
        clearFailures: named("Sessions.clearFailures", (email, address) =>
          sql`DELETE FROM login_failures WHERE email = ${normalizeEmail(email)} AND address = ${address}`.pipe(
            Effect.asVoid,
            Effect.orDie
          )),
        purge: named("Sessions.purge", (forgetAfterMs) =>
          sql<{ n: number }>`
            WITH failures AS (
              DELETE FROM login_failures WHERE (email, address) IN (
                SELECT email, address FROM login_failures
                WHERE last_failed_at < now() - make_interval(secs => ${forgetAfterMs / 1000})
                LIMIT ${PURGE_BATCH})
              RETURNING 1
            ), addresses AS (
              DELETE FROM login_addresses WHERE address IN (
                SELECT address FROM login_addresses WHERE next_failure_at < now() LIMIT ${PURGE_BATCH})
              RETURNING 1
            ), ended AS (
              DELETE FROM sessions WHERE (school_id, id) IN (
                (SELECT school_id, id FROM sessions WHERE expires_at <= now() LIMIT ${PURGE_BATCH})
                UNION ALL
                (SELECT school_id, id FROM sessions WHERE revoked_at IS NOT NULL LIMIT ${PURGE_BATCH}))
              RETURNING 1
            )
            SELECT (SELECT count(*) FROM failures)::int + (SELECT count(*) FROM addresses)::int
                   + (SELECT count(*) FROM ended)::int AS n`.pipe(
            Effect.map((rows) => rows[0]?.n ?? 0),
            Effect.orDie
          )),
        create: named("Sessions.create", (schoolId, employeeId, tokenHash, ttl) =>
          insertSession({
            school_id: schoolId,
            employee_id: employeeId,
            token_hash: tokenHash,
            ttl_seconds: Duration.toMillis(ttl) / 1000
          }).pipe(Effect.orDie)),
        findLive: named("Sessions.findLive", (tokenHash) => findLive(tokenHash).pipe(Effect.orDie)),
        revoke: named("Sessions.revoke", (schoolId, sessionId) =>
          sql`UPDATE sessions SET revoked_at = now() WHERE school_id = ${schoolId} AND id = ${sessionId} AND revoked_at IS NULL`
            .pipe(Effect.asVoid, Effect.orDie)),
        passwordHash: named("Sessions.passwordHash", (schoolId, employeeId) =>
          findPasswordHash({ school_id: schoolId, id: employeeId }).pipe(
            Effect.map(Option.map((row) => row.password_hash)),
            Effect.orDie
          )),
        changePassword: Effect.fn("Sessions.changePassword")(function*(schoolId, employeeId, keepSessionId, seenHash, newHash) {
          const stored = yield* storePassword({
            school_id: schoolId,
            id: employeeId,
            keep: keepSessionId,
            seen: seenHash,
            hash: newHash
          }).pipe(Effect.orDie)
          if (Option.isNone(stored)) return yield* new WrongPassword({ employeeId })
          return stored.value.ended
        })
      })
    })
  )
}

/** How often the API process purges the sign-in throttle's old rows and ended sessions. */
const PURGE_EVERY = Duration.minutes(10)

/** Batches of one purge run, at most (the next run goes on). */
const PURGE_BATCHES = 100

/**
 * The API process's purge job (docs/decisions.md "Back-office sessions"):
 * pair failures older than LoginThrottle.FORGET_AFTER_MS, idle addresses,
 * expired and revoked sessions, in batches of PURGE_BATCH; at start and then
 * every PURGE_EVERY. A failed run is logged and the next one tries again.
 */
export const purgeOnce = (sessions: Sessions["Service"]): Effect.Effect<number> =>
  Effect.gen(function*() {
    let total = 0
    for (let batch = 0; batch < PURGE_BATCHES; batch++) {
      const n = yield* sessions.purge(LoginThrottle.FORGET_AFTER_MS)
      total += n
      if (n < PURGE_BATCH) break
    }
    return total
  })

export const SessionPurge = Layer.effectDiscard(Effect.gen(function*() {
  const sessions = yield* Sessions
  const run = purgeOnce(sessions).pipe(
    Effect.tap((n) => n > 0 ? Effect.logInfo("purged sign-in failures and ended sessions", { count: n }) : Effect.void),
    Effect.catchCause((cause) => Effect.logWarning("session purge failed", cause))
  )
  yield* Effect.forkScoped(Effect.repeat(run, Schedule.spaced(PURGE_EVERY)))
})).pipe(Layer.provide(Sessions.layer))
