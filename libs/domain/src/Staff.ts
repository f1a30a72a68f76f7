/**
 * A school's staff (docs/back-office.md "Staff", "Signing in"): the employee
 * a session belongs to, a member of staff as the back office lists them
 * (never the password or its hash), what `POST /employees` accepts (the
 * login e-mail's shape, the password's length, the roles it may give) and
 * what signing in answers. The back-office contract
 * (libs/domain/src/api/backoffice/Staff.ts, api/BackOfficeApi.ts) and the
 * repositories (libs/persistence Employees.ts, Sessions.ts) both import
 * them from here; the operator CLI applies the same password rule.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { EmployeeId } from "./Leads.ts"
import { Role } from "./Sessions.ts"
import { isStorable, NonEmptyName, Text } from "./Text.ts"
import { Timestamp } from "./Timestamps.ts"

/** The employee a session belongs to. */
export const Employee = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  email: Schema.String,
  role: Role
})
export type Employee = typeof Employee.Type

/** RFC 5321's limit on an address; sign-in accepts the same length. */
export const EMAIL_MAX = 320
/** At least this many characters (code points) in a staff password (docs/back-office.md "Staff"). */
export const PASSWORD_MIN = 10
/** Sign-in accepts passwords up to this length, so no longer one can be set. */
export const PASSWORD_MAX = 1024

const EMAIL_SHAPE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/u

/** A login e-mail as sent: trimmed, `local@domain.tld`, at most EMAIL_MAX characters (stored lower-cased). */
export const EmployeeEmail = Text(EMAIL_MAX).check(
  Schema.isPattern(EMAIL_SHAPE, { message: "Expected an e-mail address such as anna@school.example" })
)

/** A password: PASSWORD_MIN to PASSWORD_MAX characters, as typed (not trimmed), well-formed text. */
export const Password = Schema.String.annotate({ message: "Expected a string" }).check(
  Schema.makeFilter((password: string) =>
    [...password].length >= PASSWORD_MIN ? undefined : `Expected at least ${PASSWORD_MIN} characters`
  ),
  Schema.isMaxLength(PASSWORD_MAX, { message: `Expected at most ${PASSWORD_MAX} characters` }),
  Schema.makeFilter(isStorable, { message: "Expected text without NUL characters or unpaired surrogates" })
)

/** The roles `POST /employees` may give: every role but `owner` (a school has the one it was created with). */
export const CREATABLE_ROLES = ["administrator", "manager", "teacher"] as const
export const CreatableRoleName = Schema.Literals(CREATABLE_ROLES)
export type CreatableRoleName = typeof CreatableRoleName.Type

const isCreatable = (role: string): role is CreatableRoleName =>
  CREATABLE_ROLES.some((creatable) => creatable === role)

/** `role` in a request: a creatable role, with a message of its own for `owner`. */
export const CreatableRole = Schema.String.annotate({ message: "Expected a role" }).pipe(
  Schema.decodeTo(
    CreatableRoleName,
    SchemaTransformation.transformEffect({
      decode: (role: string) =>
        isCreatable(role)
          ? Effect.succeed(role)
          : Effect.fail(
            new SchemaIssue.InvalidValue(
              {
                message: role === "owner"
                  ? `An owner cannot be created here; expected one of ${CREATABLE_ROLES.join(", ")}`
                  : `Expected one of ${CREATABLE_ROLES.join(", ")}`
              },
              role
            )
          ),
      encode: (role: CreatableRoleName) => Effect.succeed(role)
    })
  )
)

/** `POST /employees`: a new member of staff. */
export const CreateEmployeeRequest = Schema.Struct({
  name: NonEmptyName,
  email: EmployeeEmail,
  password: Password,
  role: CreatableRole
}).annotate({
  examples: [{ name: "Maria Petrova", email: "maria@school.example", password: "correct horse battery", role: "manager" }]
})
export type CreateEmployeeRequest = typeof CreateEmployeeRequest.Type

/** A member of staff as the back office shows them: never the password or its hash. */
export const StaffMember = Schema.Struct({
  id: EmployeeId,
  name: Schema.String,
  email: Schema.String.annotate({ description: "The login e-mail, trimmed and lower-cased" }),
  role: Role,
  created_at: Timestamp
}).annotate({
  examples: [{
    id: EmployeeId.make(8),
    name: "Maria Petrova",
    email: "maria@school.example",
    role: "manager",
    created_at: "2026-11-22T09:15:03.123456Z"
  }]
})
export type StaffMember = typeof StaffMember.Type

/** What signing in answers: the session's token (also set as the cookie), its expiry and who signed in. */
export const SignedIn = Schema.Struct({ token: Schema.String, expires_at: Timestamp, employee: Employee }).annotate({
  examples: [{
    token: "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA",
    expires_at: "2026-11-23T09:15:03.123456Z",
    employee: { id: 8, name: "Maria Petrova", email: "maria@school.example", role: "manager" }
  }]
})
export type SignedIn = typeof SignedIn.Type

/** The caller's own session: who, and when it expires. */
export const CurrentSession = Schema.Struct({ employee: Employee, expires_at: Timestamp }).annotate({
  examples: [{
    employee: { id: 8, name: "Maria Petrova", email: "maria@school.example", role: "manager" },
    expires_at: "2026-11-23T09:15:03.123456Z"
  }]
})
export type CurrentSession = typeof CurrentSession.Type
