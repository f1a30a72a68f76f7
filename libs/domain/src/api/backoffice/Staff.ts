/**
 * The back office's staff and API keys (docs/back-office.md; spec 5.2):
 * `POST/GET /employees`, `POST/GET /api-keys`, `DELETE /api-keys/{id}`. The
 * contract: paths, bodies, success shapes, errors. Every call is for full
 * access (owner, administrator): each endpoint's `RequiredAccess`, checked by
 * `RoleCheck` before anything of the request is decoded, so a refused role
 * gets 403 FORBIDDEN whatever it sent. Endpoints are added before `.middleware(...)`, which applies to
 * those added before it.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import { Scope } from "../../ApiKey.ts"
import * as Errors from "../../BackOfficeErrors.ts"
import { ApiKeyId, DecimalIntFromString } from "../../Ids.ts"
import { EmployeeId } from "../../Leads.ts"
import { FULL_ACCESS, Role } from "../../Sessions.ts"
import { isStorable, NAME_MAX, Text } from "../../Text.ts"
import { IsoInstant, Timestamp } from "../../Timestamps.ts"
import {
  BackOfficeValidation,
  bodyRefusals,
  ok,
  okCreated,
  okList,
  pageQuery,
  RequiredAccess,
  RoleCheck,
  SessionAuthentication
} from "../BackOfficeMiddleware.ts"

// ---------------------------------------------------------------------------
// Employees
// ---------------------------------------------------------------------------

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

const RequiredName = Text(NAME_MAX).check(Schema.isMinLength(1, { message: "Expected a non-empty name" }))

export const CreateEmployeeRequest = Schema.Struct({
  name: RequiredName,
  email: EmployeeEmail,
  password: Password,
  role: CreatableRole
})
export type CreateEmployeeRequest = typeof CreateEmployeeRequest.Type

/** A member of staff as the back office shows them: never the password or its hash. */
export const StaffMember = Schema.Struct({
  id: EmployeeId,
  name: Schema.String,
  email: Schema.String.annotate({ description: "The login e-mail, trimmed and lower-cased" }),
  role: Role,
  created_at: Timestamp
})
export type StaffMember = typeof StaffMember.Type

// ---------------------------------------------------------------------------
// API keys
// ---------------------------------------------------------------------------

export const ApiKeyIdFromPath = DecimalIntFromString(ApiKeyId)

export const CreateApiKeyRequest = Schema.Struct({
  name: RequiredName,
  scope: Scope.annotate({ message: "Expected read or write" }),
  expires_at: Schema.optionalKey(Schema.NullOr(IsoInstant)).annotate({
    description: "ISO 8601 with an offset, in the future; omitted or null: the key never expires"
  })
})
export type CreateApiKeyRequest = typeof CreateApiKeyRequest.Type

/** A key as listed: never its secret nor the secret's hash. */
export const ApiKeyView = Schema.Struct({
  id: ApiKeyId,
  name: Schema.String,
  scope: Scope,
  prefix: Schema.String.annotate({ description: "The 8 characters after svc_ that identify the key" }),
  created_at: Timestamp,
  expires_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp)
})
export type ApiKeyView = typeof ApiKeyView.Type

/** A key as issued: `key` is the whole `svc_<prefix>_<secret>`, shown this once. */
export const IssuedApiKey = Schema.Struct({
  id: ApiKeyId,
  name: Schema.String,
  scope: Scope,
  prefix: Schema.String,
  key: Schema.String.annotate({ description: "svc_<prefix>_<secret>: shown only in this answer, never again" }),
  created_at: Timestamp,
  expires_at: Schema.NullOr(Timestamp)
})
export type IssuedApiKey = typeof IssuedApiKey.Type

// ---------------------------------------------------------------------------
// Endpoints
// ---------------------------------------------------------------------------

export class EmployeesGroup extends HttpApiGroup.make("employees")
  .add(
    HttpApiEndpoint.post("create", "/employees", {
      payload: CreateEmployeeRequest,
      success: okCreated(StaffMember),
      error: [Errors.ValidationFailed.envelope, Errors.Conflict.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "Add a member of staff (administrator, manager or teacher); the e-mail is their login, unique across the service"
    ),
    HttpApiEndpoint.get("list", "/employees", {
      query: pageQuery,
      success: okList(StaffMember)
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(OpenApi.Summary, "The school's staff, by ascending id")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}

export class ApiKeysGroup extends HttpApiGroup.make("apiKeys")
  .add(
    HttpApiEndpoint.post("create", "/api-keys", {
      payload: CreateApiKeyRequest,
      success: okCreated(IssuedApiKey),
      error: [Errors.ValidationFailed.envelope, Errors.TariffTooLow.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "Issue a key for the public API (Extended plan or above); the whole key is shown only here"
    ),
    HttpApiEndpoint.get("list", "/api-keys", {
      query: pageQuery,
      success: okList(ApiKeyView)
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(OpenApi.Summary, "The school's keys, by ascending id (never their secrets)"),
    HttpApiEndpoint.delete("revoke", "/api-keys/:id", {
      params: { id: ApiKeyIdFromPath },
      success: ok(ApiKeyView),
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "Revoke a key: it answers revoked_key on the public API from then on (a second revocation keeps the first time)"
    )
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
