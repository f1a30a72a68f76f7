/**
 * A school's staff as the back office adds and lists them (docs/back-office.md
 * "Employees"; spec 5.2): a new employee and their login e-mail in one
 * statement, the e-mail routed through the global table `login_emails`, so
 * it is unique across the whole service (compared trimmed and lower-cased,
 * `normalizeEmail`); two concurrent creations with one e-mail end with one
 * employee and one `EmailTaken`. The password is stored scrypt-hashed
 * (Passwords.ts) and never read back here. Every call takes the caller's
 * SchoolId. Rows are decoded here; SQL and decode failures are defects.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import type { Ids } from "@school/domain"
import { type CreatableRoleName, StaffMember } from "@school/domain/api/backoffice/Staff"
import { type PageRequest, toWindow } from "@school/domain/Pagination"
import { type PageResult, pageReader } from "./Paging.ts"
import { hashPassword } from "./Passwords.ts"
import { EmailTaken, normalizeEmail } from "./Schools.ts"

export interface NewEmployee {
  readonly name: string
  readonly email: string
  readonly password: string
  readonly role: CreatableRoleName
}

const decodeMember = Schema.decodeUnknownEffect(StaffMember)

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
      return Employees.of({
        create: Effect.fnUntraced(function*(schoolId, employee) {
          const email = normalizeEmail(employee.email)
          const passwordHash = yield* hashPassword(employee.password)
          const rows = yield* sql`
            WITH employee AS (
              INSERT INTO employees (school_id, name, email, password_hash, role)
              VALUES (${schoolId}, ${employee.name}, ${email}, ${passwordHash}, ${employee.role})
              RETURNING school_id, id, name, email, role, created_at
            ), login AS (
              INSERT INTO login_emails (email, school_id, employee_id) SELECT email, school_id, id FROM employee
            )
            SELECT id, name, email, role, api_ts(created_at) AS created_at FROM employee
          `.pipe(
            Effect.catchReason("SqlError", "UniqueViolation", (reason, error) =>
              reason.constraint !== undefined && EMAIL_CONSTRAINTS.has(reason.constraint)
                ? Effect.fail(new EmailTaken({ email }))
                : Effect.die(error)),
            Effect.catchTag("SqlError", Effect.die)
          )
          // One row: the employee was inserted (or the statement failed).
          return yield* Effect.orDie(decodeMember(rows[0]))
        }),
        list: (schoolId, page) => {
          const { limit, offset } = toWindow(page)
          return readPage(
            sql`SELECT count(*)::int AS total FROM employees WHERE school_id = ${schoolId}`,
            sql`SELECT id, name, email, role, api_ts(created_at) AS created_at
                FROM employees WHERE school_id = ${schoolId} ORDER BY id LIMIT ${limit} OFFSET ${offset}`
          )
        }
      })
    })
  )
}
