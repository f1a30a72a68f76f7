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
  .add(
    HttpApiEndpoint.post("create", "/employees", {
      payload: CreateEmployeeRequest,
      success: okCreated(NewStaffMember),
      error: [Errors.ValidationFailed.envelope, Errors.Conflict.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "Add a member of staff (administrator, manager or teacher); the e-mail is their login, unique across the service"
    ),
    HttpApiEndpoint.get("list", "/employees", {
      query: pageQuery,
      success: okList(StaffMember)
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(OpenApi.Summary, "The school's staff, by ascending id"),
    HttpApiEndpoint.patch("update", "/employees/:id", {
      params: { id: EmployeeIdFromPath },
      payload: UpdateEmployeeRequest,
      success: ok(EmployeeAccount),
      error: [Errors.ValidationFailed.envelope, Errors.Forbidden.envelope, Errors.NotFound.envelope, ...bodyRefusals]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "Change a member of staff's role, or disable (ending their sessions at once) or enable them; nobody changes the owner"
    ),
    HttpApiEndpoint.delete("endSessions", "/employees/:id/sessions", {
      params: { id: EmployeeIdFromPath },
      success: ok(EndedSessions),
      error: [Errors.Forbidden.envelope, Errors.NotFound.envelope]
    }).annotate(RequiredAccess, FULL_ACCESS).annotate(
      OpenApi.Summary,
      "End every session of a member of staff at once (who may: as for PATCH /employees/{id})"
    )
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
