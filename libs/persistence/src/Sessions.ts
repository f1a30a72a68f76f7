/**
 * The back office's staff sessions and failed logins (docs/decisions.md
 * "Back-office sessions"): who a login e-mail is, the failures counted per
 * e-mail, and sessions stored by the hash of their token, found through the
 * global routing table `session_tokens`. Rows are decoded here; SQL and
 * decode failures are defects.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { Ids } from "@school/domain"
import { Employee } from "@school/domain/Staff"
import { Timestamp } from "@school/domain/Timestamps"
import { normalizeEmail } from "./Schools.ts"
import { named } from "./Spans.ts"

/** An employee as sign-in reads them: who, and the stored password hash. */
export const LoginRecord = Schema.Struct({
  school_id: Ids.SchoolId,
  employee: Employee,
  password_hash: Schema.String
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

/** Failed logins in a row for one e-mail, with the times the throttle rule needs (milliseconds). */
export const FailureRecord = Schema.Struct({
  failures: Schema.Int,
  last_failed_at_ms: Schema.Number,
  now_ms: Schema.Number
})
export type FailureRecord = typeof FailureRecord.Type

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
  /** The failed logins in a row for this e-mail; none when there are none. */
  failures(email: string): Effect.Effect<Option.Option<FailureRecord>>
  /**
   * Counts an attempt as a failure before its password is checked, if the
   * count is still `seen` (compare-and-set): of concurrent attempts that read
   * the same count, one wins and the others read again, so a burst cannot
   * slip more guesses past the throttle than one at a time would. False: the
   * count moved; read it again.
   */
  claimAttempt(email: string, seen: number): Effect.Effect<boolean>
  clearFailures(email: string): Effect.Effect<void>
  /** A new session of `ttl` for the employee, stored by its token's hash. */
  create(
    schoolId: Ids.SchoolId,
    employeeId: number,
    tokenHash: Uint8Array,
    ttl: Duration.Duration
  ): Effect.Effect<{ readonly id: number; readonly expires_at: string }>
  /** The live session whose token has this hash. */
  findLive(tokenHash: Uint8Array): Effect.Effect<Option.Option<SessionRecord>>
  /** Ends a session at once. */
  revoke(schoolId: Ids.SchoolId, sessionId: number): Effect.Effect<void>
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
            SELECT e.school_id, ${employeeJson} AS employee, e.password_hash
            FROM login_emails l
            JOIN employees e ON e.school_id = l.school_id AND e.id = l.employee_id
            WHERE l.email = ${email}`
      })
      // The e-mail already normalized.
      const findFailures = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: FailureRecord,
        execute: (email) =>
          sql`
            SELECT failures,
                   (extract(epoch FROM last_failed_at) * 1000)::float8 AS last_failed_at_ms,
                   (extract(epoch FROM now()) * 1000)::float8 AS now_ms
            FROM login_failures WHERE email = ${email}`
      })
      // One row: the session was inserted (or the statement failed).
      const insertSession = SqlSchema.findOne({
        Request: SessionInsert,
        Result: Schema.Struct({ id: Schema.Int, expires_at: Timestamp }),
        execute: (session) =>
          sql`
            WITH session AS (
              INSERT INTO sessions (school_id, employee_id, token_hash, expires_at)
              VALUES (${session.school_id}, ${session.employee_id}, ${session.token_hash},
                      now() + make_interval(secs => ${session.ttl_seconds}))
              RETURNING school_id, id, token_hash, expires_at
            ), route AS (
              INSERT INTO session_tokens (token_hash, school_id) SELECT token_hash, school_id FROM session
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
            WHERE t.token_hash = ${tokenHash} AND s.revoked_at IS NULL AND s.expires_at > now()`
      })
      return Sessions.of({
        findLogin: named("Sessions.findLogin", (email) => findLogin(normalizeEmail(email)).pipe(Effect.orDie)),
        failures: named("Sessions.failures", (email) => findFailures(normalizeEmail(email)).pipe(Effect.orDie)),
        claimAttempt: named("Sessions.claimAttempt", (email, seen) =>
          sql`
            INSERT INTO login_failures (email, failures, last_failed_at)
            VALUES (${normalizeEmail(email)}, 1, clock_timestamp())
            ON CONFLICT (email) DO UPDATE
            SET failures = login_failures.failures + 1, last_failed_at = clock_timestamp()
            WHERE login_failures.failures = ${seen}
            RETURNING 1 AS claimed`.pipe(
            Effect.map((rows) => rows.length === 1),
            Effect.orDie
          )),
        clearFailures: named("Sessions.clearFailures", (email) =>
          sql`DELETE FROM login_failures WHERE email = ${normalizeEmail(email)}`.pipe(Effect.asVoid, Effect.orDie)),
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
            .pipe(Effect.asVoid, Effect.orDie))
      })
    })
  )
}
