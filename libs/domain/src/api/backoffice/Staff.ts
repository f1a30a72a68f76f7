/**
 * The back office's staff and API keys (docs/back-office.md "Staff", "API keys"):
 * `POST/GET /employees`, `PATCH /employees/{id}`, `DELETE /employees/{id}/sessions`,
 * `POST/GET /api-keys`, `DELETE /api-keys/{id}`. The
 * contract: paths, errors and roles; the bodies and what they answer are
 * models of libs/domain/src/Staff.ts and ApiKey.ts. Every call is for full
 * access (owner, administrator): each endpoint's `RequiredAccess`, checked by
 * `RoleCheck` before anything of the request is decoded, so a refused role
 * gets 403 FORBIDDEN whatever it sent. Endpoints are added before `.middleware(...)`, which applies to
 * those added before it.
 */
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import { ApiKeyView, CreateApiKeyRequest, IssuedApiKey } from "../../ApiKey.ts"
import * as Errors from "../../BackOfficeErrors.ts"
import { ApiKeyId, DecimalIntFromString } from "../../Ids.ts"
import { EmployeeId } from "../../Leads.ts"
import { FULL_ACCESS } from "../../Sessions.ts"
import {
  CreateEmployeeRequest,
  EmployeeAccount,
  EndedSessions,
  NewStaffMember,
  StaffMember,
  UpdateEmployeeRequest
} from "../../Staff.ts"
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

/** `{id}` of `/employees/{id}`. */
export const EmployeeIdFromPath = DecimalIntFromString(EmployeeId)

/** `{id}` of `/api-keys/{id}`. */
export const ApiKeyIdFromPath = DecimalIntFromString(ApiKeyId)

// ---------------------------------------------------------------------------
// Endpoints
// ---------------------------------------------------------------------------

export class EmployeesGroup extends HttpApiGroup.make("employees")
    .annotate(OpenApi.Description, "Staff and offboarding (docs/back-office.md \"Staff\").")
  .add(
    HttpApiEndpoint.post("create", "/employees", {
      payload: CreateEmployeeRequest,
      success: okCreated(NewStaffMember),
      error: [Errors.ValidationFailed.envelope, Errors.Conflict.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "Add a member of staff (administrator, manager or teacher); the e-mail is their login, unique across the service"
    )
      .annotate(OpenApi.Description, "Owner or administrator only (403 `FORBIDDEN` otherwise). Adds an administrator, manager or teacher; `owner` cannot be created this way. The password is at least 10 characters; an e-mail already in use is 409 `CONFLICT`."),
    HttpApiEndpoint.get("list", "/employees", {
      query: pageQuery,
      success: okList(StaffMember)
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(OpenApi.Summary, "The school's staff, by ascending id")
      .annotate(OpenApi.Description, "Owner or administrator only. The school's staff by ascending id, paged, each with `disabled`."),
    HttpApiEndpoint.patch("update", "/employees/:id", {
      params: { id: EmployeeIdFromPath },
      payload: UpdateEmployeeRequest,
      success: ok(EmployeeAccount),
      error: [Errors.ValidationFailed.envelope, Errors.Forbidden.envelope, Errors.NotFound.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "Change a member of staff's role, or disable (ending their sessions at once) or enable them; nobody changes the owner"
    )
      .annotate(OpenApi.Description, "Owner or administrator only. `{ role?, disabled? }`: any role but `owner` (422 `VALIDATION_FAILED`). The owner may change anyone but themselves, an administrator managers and teachers, nobody the owner: anything else is 403 `FORBIDDEN`; an id that is not the school's employee is 404 `NOT_FOUND`. Disabling ends every session of the employee at once; a new role applies from their next call."),
    HttpApiEndpoint.delete("endSessions", "/employees/:id/sessions", {
      params: { id: EmployeeIdFromPath },
      success: ok(EndedSessions),
      error: [Errors.Forbidden.envelope, Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "End every session of a member of staff at once (who may: as for PATCH /employees/{id})"
    )
      .annotate(OpenApi.Description, "Ends every session of the employee without disabling them (they may sign in again), under the rules of `PATCH /employees/{id}` (403 `FORBIDDEN`, 404 `NOT_FOUND`), and says how many it ended.")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}

export class ApiKeysGroup extends HttpApiGroup.make("apiKeys")
    .annotate(OpenApi.Description, "Keys for the public API (docs/back-office.md \"API keys\").")
  .add(
    HttpApiEndpoint.post("create", "/api-keys", {
      payload: CreateApiKeyRequest,
      success: okCreated(IssuedApiKey),
      error: [Errors.ValidationFailed.envelope, Errors.TariffTooLow.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "Issue a key for the public API (Extended plan or above); the whole key is shown only here"
    )
      .annotate(OpenApi.Description, "Owner or administrator only. Issues a public API key with `scope` `read` or `write` and an optional `expires_at`; the whole key is in this answer only (only a hash of its secret is kept). A school below the Extended plan gets 403 `TARIFF_TOO_LOW`."),
    HttpApiEndpoint.get("list", "/api-keys", {
      query: pageQuery,
      success: okList(ApiKeyView)
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(OpenApi.Summary, "The school's keys, by ascending id (never their secrets)")
      .annotate(OpenApi.Description, "Owner or administrator only. The school's API keys by ascending id, paged, with their prefix, scope, expiry and revocation time; never a secret."),
    HttpApiEndpoint.delete("revoke", "/api-keys/:id", {
      params: { id: ApiKeyIdFromPath },
      success: ok(ApiKeyView),
      error: [Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "Revoke a key: it answers revoked_key on the public API from then on (a second revocation keeps the first time)"
    )
      .annotate(OpenApi.Description, "Owner or administrator only. Revokes the key at once, on every API process: its next public request is 401 `revoked_key`. A key that is not the school's is 404 `NOT_FOUND`.")
  )
  .middleware(RoleCheck)
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
