/**
 * A school's staff as the back office adds and lists them (docs/back-office.md
 * "Staff"): a new employee and their login e-mail in one
 * statement, the e-mail routed through the global table `login_emails`, so
 * it is unique across the whole service (compared trimmed and lower-cased,
 * `normalizeEmail`); two concurrent creations with one e-mail end with one
 * employee and one `EmailTaken` (libs/domain/src/DomainErrors.ts). The
 * password comes hashed (libs/runtime/src/Passwords.ts) and is never read
 * back here. Every call takes the caller's
 * SchoolId. Rows are decoded here; SQL and decode failures are defects.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { Ids } from "@school/domain"
import { CreatableRoleName, StaffMember } from "@school/domain/Staff"
import { type PageRequest, toWindow } from "@school/domain/Pagination"
import { EmailTaken } from "@school/domain/DomainErrors"
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
  create(schoolId: Ids.SchoolId, employee: NewEmployee): Effect.Effect<StaffMember, EmailTaken>
  /** The school's staff by ascending id. */
  list(schoolId: Ids.SchoolId, page: PageRequest): Effect.Effect<PageResult<StaffMember>>
}>()("school/persistence/Employees") {
  static readonly layer = Layer.effect(
    Employees,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const readPage = pageReader(sql, StaffMember)
      // One row: the employee was inserted (or the statement failed).
      const insert = SqlSchema.findOne({
        Request: EmployeeInsert,
        Result: StaffMember,
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
            sql`SELECT id, name, email, role, api_ts(created_at) AS created_at
                FROM employees WHERE school_id = ${schoolId} ORDER BY id LIMIT ${limit} OFFSET ${offset}`
          )
        })
      })
    })
  )
}
