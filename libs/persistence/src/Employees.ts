/**
 * A school's staff as the back office adds and lists them (docs/back-office.md
 * "Staff"): a new employee and their login e-mail in one
 * statement, the e-mail routed through the global table `login_emails`, so
 * it is unique across the whole service (compared trimmed and lower-cased,
 * `normalizeEmail`); two concurrent creations with one e-mail end with one
 * employee and one `EmailTaken` (libs/domain/src/DomainErrors.ts). The
 * password comes hashed (libs/runtime/src/Passwords.ts) and is never read
 * back here. Offboarding (docs/back-office.md "Staff"): a new role, disabling
 * or enabling, and ending an employee's sessions, each in one transaction
 * that locks the employee's row, checks `mayChangeEmployee` against it, and
 * ends the sessions in the same commit as the change. Every call takes the
 * caller's SchoolId. Rows are decoded here; SQL and decode failures are defects.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { Ids } from "@school/domain"
import { Role } from "@school/domain/Sessions"
import {
  CreatableRoleName,
  EmployeeAccount,
  mayChangeEmployee,
  NewStaffMember,
  StaffMember,
  type StaffSeat
} from "@school/domain/Staff"
import { type PageRequest, toWindow } from "@school/domain/Pagination"
import {
  EmailTaken,
  EmployeeChangeForbidden,
  EmployeeChangeRefused,
  EmployeeNotFound
} from "@school/domain/DomainErrors"
import { type PageResult, pageReader } from "./Paging.ts"
import { named } from "./Spans.ts"
import { normalizeEmail } from "./Schools.ts"

export interface NewEmployee {
  readonly name: string
  readonly email: string
  /** Already hashed (libs/runtime/src/Passwords.ts `hashPassword`). */
  readonly passwordHash: string
  readonly role: CreatableRoleName
}

/** What `Employees.update` changes; a field left out stays as it is. */
export interface EmployeeChange {
  readonly role?: CreatableRoleName
  readonly disabled?: boolean
}

/** The employee a change is aimed at, locked for the transaction. */
const Target = Schema.Struct({ id: Schema.Int, role: Role })

/** The employee's row as the statement writes it: the e-mail normalized, the password hashed. */
const EmployeeInsert = Schema.Struct({
  school_id: Ids.SchoolId,
  name: Schema.String,
  email: Schema.String,
  password_hash: Schema.String,
  role: CreatableRoleName
})

/** The unique constraints a taken e-mail violates: the service-wide routing table's, or the school's own. */
const EMAIL_CONSTRAINTS = new Set(["login_emails_pkey", "employees_school_id_email_key"])

export class Employees extends Context.Service<Employees, {
  /** Adds a member of staff; `EmailTaken` when the login e-mail is anyone's already. */
  create(schoolId: Ids.SchoolId, employee: NewEmployee): Effect.Effect<NewStaffMember, EmailTaken>
  /** The school's staff by ascending id. */
  list(schoolId: Ids.SchoolId, page: PageRequest): Effect.Effect<PageResult<StaffMember>>
  /**
   * Changes an employee's role or `disabled`, if `actor` may
   * (`mayChangeEmployee`); disabling ends every session of theirs in the same
   * transaction. A repeat of the same change succeeds again.
   */
  update(
    schoolId: Ids.SchoolId,
    actor: StaffSeat,
    employeeId: number,
    change: EmployeeChange
  ): Effect.Effect<EmployeeAccount, EmployeeChangeRefused>
  /** Ends every live session of an employee, if `actor` may change them; how many it ended. */
  endSessions(schoolId: Ids.SchoolId, actor: StaffSeat, employeeId: number): Effect.Effect<number, EmployeeChangeRefused>
}>()("school/persistence/Employees") {
  static readonly layer = Layer.effect(
    Employees,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const readPage = pageReader(sql, StaffMember)
      // One row: the employee was inserted (or the statement failed).
      const insert = SqlSchema.findOne({
        Request: EmployeeInsert,
        Result: NewStaffMember,
        execute: (row) =>
          sql`
            WITH employee AS (
              INSERT INTO employees (school_id, name, email, password_hash, role)
              VALUES (${row.school_id}, ${row.name}, ${row.email}, ${row.password_hash}, ${row.role})
              RETURNING school_id, id, name, email, role, created_at
            ), login AS (
              INSERT INTO login_emails (email, school_id, employee_id) SELECT email, school_id, id FROM employee
            )
            SELECT id, name, email, role, api_ts(created_at) AS created_at FROM employee
          `.pipe(
            Effect.catchReason("SqlError", "UniqueViolation", (reason, error) =>
              reason.constraint !== undefined && EMAIL_CONSTRAINTS.has(reason.constraint)
                ? Effect.fail(new EmailTaken({ email: row.email }))
                : Effect.die(error)),
            Effect.catchTag("SqlError", Effect.die)
          )
      })
      // The target, locked against a concurrent change (not against sign-in's key share).
      const lockTarget = SqlSchema.findOneOption({
        Request: Schema.Struct({ school_id: Ids.SchoolId, id: Schema.Int }),
        Result: Target,
        execute: (key) =>
          sql`SELECT id, role FROM employees WHERE school_id = ${key.school_id} AND id = ${key.id} FOR NO KEY UPDATE`
      })
      /** Inside a transaction: the target when `actor` may change them, else the refusal. */
      const checkTarget = Effect.fnUntraced(function*(schoolId: Ids.SchoolId, actor: StaffSeat, employeeId: number) {
        const target = yield* lockTarget({ school_id: schoolId, id: employeeId }).pipe(Effect.orDie)
        if (target._tag === "None") {
          return yield* new EmployeeChangeRefused({ reason: new EmployeeNotFound({ employeeId }) })
        }
        if (!mayChangeEmployee(actor, target.value)) {
          return yield* new EmployeeChangeRefused({
            reason: new EmployeeChangeForbidden({ employeeId, actorRole: actor.role, targetRole: target.value.role })
          })
        }
        return target.value
      })
      const change = SqlSchema.findOne({
        Request: Schema.Struct({
          school_id: Ids.SchoolId,
          id: Schema.Int,
          role: Schema.NullOr(CreatableRoleName),
          disabled: Schema.NullOr(Schema.Boolean)
        }),
        Result: EmployeeAccount,
        execute: (row) =>
          sql`
            WITH employee AS (
              UPDATE employees SET role = coalesce(${row.role}, role), disabled = coalesce(${row.disabled}, disabled)
              WHERE school_id = ${row.school_id} AND id = ${row.id}
              RETURNING school_id, id, name, email, role, disabled
            ), ended AS (
              UPDATE sessions s SET revoked_at = now() FROM employee e
              WHERE e.disabled AND s.school_id = e.school_id AND s.employee_id = e.id AND s.revoked_at IS NULL
            )
            SELECT id, name, email, role, disabled FROM employee`
      })
      const endAll = (schoolId: Ids.SchoolId, employeeId: number) =>
        sql<{ ended: number }>`
          WITH ended AS (
            UPDATE sessions SET revoked_at = now()
            WHERE school_id = ${schoolId} AND employee_id = ${employeeId} AND revoked_at IS NULL AND expires_at > now()
            RETURNING 1
          )
          SELECT count(*)::int AS ended FROM ended`.pipe(Effect.map((rows) => rows[0]?.ended ?? 0))
      return Employees.of({
        create: Effect.fn("Employees.create")(function*(schoolId, employee) {
          return yield* insert({
            school_id: schoolId,
            name: employee.name,
            email: normalizeEmail(employee.email),
            password_hash: employee.passwordHash,
            role: employee.role
          }).pipe(Effect.catchTag(["SchemaError", "NoSuchElementError"], Effect.die))
        }),
        list: named("Employees.list", (schoolId, page) => {
          const { limit, offset } = toWindow(page)
          return readPage(
            sql`SELECT count(*)::int AS total FROM employees WHERE school_id = ${schoolId}`,
            sql`SELECT id, name, email, role, api_ts(created_at) AS created_at, disabled
                FROM employees WHERE school_id = ${schoolId} ORDER BY id LIMIT ${limit} OFFSET ${offset}`
          )
        }),
        update: Effect.fn("Employees.update")(function*(schoolId, actor, employeeId, wanted) {
          return yield* Effect.gen(function*() {
            yield* checkTarget(schoolId, actor, employeeId)
            return yield* change({
              school_id: schoolId,
              id: employeeId,
              role: wanted.role ?? null,
              disabled: wanted.disabled ?? null
            }).pipe(Effect.catchTag(["SchemaError", "NoSuchElementError", "SqlError"], Effect.die))
          }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
        }),
        endSessions: Effect.fn("Employees.endSessions")(function*(schoolId, actor, employeeId) {
          return yield* Effect.gen(function*() {
            yield* checkTarget(schoolId, actor, employeeId)
            return yield* endAll(schoolId, employeeId).pipe(Effect.orDie)
          }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
        })
      })
    })
  )
}