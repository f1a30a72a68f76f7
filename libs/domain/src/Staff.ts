/**
 * A school's staff (docs/back-office.md "Staff", "Signing in"): the employee
 * a session belongs to, a member of staff as the back office lists them
 * (never the password or its hash), what `POST /employees` accepts (the
 * login e-mail's shape, the password's length, the roles it may give),
 * what signing in answers, and offboarding: what `PATCH /employees/{id}`,
 * `DELETE /employees/{id}/sessions` and `POST /sessions/current/password`
 * accept and answer, and who may change whom (`mayChangeEmployee`). The back-office contract
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

/** A role a request may give (a creatable one); `refusedOwner` is the message for `owner`. */
const givableRole = (refusedOwner: string) =>
  Schema.String.annotate({ message: "Expected a role" }).pipe(
    Schema.decodeTo(
      CreatableRoleName,
      SchemaTransformation.transformEffect({
        decode: (role: string) =>
          isCreatable(role)
            ? Effect.succeed(role)
            : Effect.fail(
              new SchemaIssue.InvalidValue(
                { message: role === "owner" ? refusedOwner : `Expected one of ${CREATABLE_ROLES.join(", ")}` },
                role
              )
            ),
        encode: (role: CreatableRoleName) => Effect.succeed(role)
      })
    )
  )

/** `role` in a request: a creatable role, with a message of its own for `owner`. */
export const CreatableRole = givableRole(`An owner cannot be created here; expected one of ${CREATABLE_ROLES.join(", ")}`)

/**
 * `role` of `PATCH /employees/{id}` (docs/back-office.md "Staff"): the same
 * roles; nobody is made owner (a school has the one it was created with).
 */
export const AssignableRole = givableRole(`No one can be made owner; expected one of ${CREATABLE_ROLES.join(", ")}`)

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

const memberFields = {
  id: EmployeeId,
  name: Schema.String,
  email: Schema.String.annotate({ description: "The login e-mail, trimmed and lower-cased" }),
  role: Role
}

const disabledField = Schema.Boolean.annotate({
  description: "A disabled employee has no session and cannot sign in until enabled again"
})

/** A new member of staff as `POST /employees` answers: never the password or its hash. */
export const NewStaffMember = Schema.Struct({ ...memberFields, created_at: Timestamp }).annotate({
  examples: [{
    id: EmployeeId.make(8),
    name: "Maria Petrova",
    email: "maria@school.example",
    role: "manager",
    created_at: "2026-11-22T09:15:03.123456Z"
  }]
})
export type NewStaffMember = typeof NewStaffMember.Type

/** A member of staff as `GET /employees` lists them: never the password or its hash. */
export const StaffMember = Schema.Struct({ ...memberFields, created_at: Timestamp, disabled: disabledField }).annotate({
  examples: [{
    id: EmployeeId.make(8),
    name: "Maria Petrova",
    email: "maria@school.example",
    role: "manager",
    created_at: "2026-11-22T09:15:03.123456Z",
    disabled: false
  }]
})
export type StaffMember = typeof StaffMember.Type

/** What `PATCH /employees/{id}` answers: the employee's role and whether they are disabled. */
export const EmployeeAccount = Schema.Struct({ ...memberFields, disabled: disabledField }).annotate({
  examples: [{ id: EmployeeId.make(8), name: "Maria Petrova", email: "maria@school.example", role: "teacher", disabled: true }]
})
export type EmployeeAccount = typeof EmployeeAccount.Type

/** `PATCH /employees/{id}`: a new role, disabling or enabling; a field left out stays as it is. */
export const UpdateEmployeeRequest = Schema.Struct({
  role: Schema.optionalKey(AssignableRole),
  disabled: Schema.optionalKey(Schema.Boolean.annotate({ message: "Expected true or false" }))
}).annotate({ examples: [{ disabled: true }, { role: "teacher" }] })
export type UpdateEmployeeRequest = typeof UpdateEmployeeRequest.Type

/** `DELETE /employees/{id}/sessions`: how many live sessions were ended. */
export const EndedSessions = Schema.Struct({ ended: Schema.Int }).annotate({ examples: [{ ended: 2 }] })
export type EndedSessions = typeof EndedSessions.Type

/** `POST /sessions/current/password`: the caller's password now and the new one (the length rule of Password). */
export const ChangePasswordRequest = Schema.Struct({
  current_password: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(PASSWORD_MAX)),
  new_password: Password
}).annotate({ examples: [{ current_password: "correct horse battery", new_password: "another long one" }] })
export type ChangePasswordRequest = typeof ChangePasswordRequest.Type

/** Who does a change, or whom it is done to. */
export interface StaffSeat {
  readonly id: number
  readonly role: Role
}

/**
 * docs/back-office.md "Staff": who may change (role, disabled) or end the
 * sessions of whom. Nobody changes the owner; the owner anyone but
 * themselves; an administrator only managers and teachers; managers and
 * teachers nobody (they never reach these calls: full access only).
 */
export const mayChangeEmployee = (actor: StaffSeat, target: StaffSeat): boolean => {
  if (target.role === "owner" || actor.id === target.id) return false
  switch (actor.role) {
    case "owner":
      return true
    case "administrator":
      return target.role === "manager" || target.role === "teacher"
    default:
      return false
  }
}

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
