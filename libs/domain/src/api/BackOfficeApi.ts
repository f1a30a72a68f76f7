/**
 * The back-office contract, `/api/crm/v1` (docs/back-office.md): the school's
 * own staff, a separate authorization domain from the public API. Endpoints,
 * their bodies and every error each can return, in the back office's envelope
 * (`{ success: false, code, message, fields? }`, BackOfficeErrors.ts); its
 * middleware tags. The server (apps/api) implements it; OpenAPI is generated
 * from it at `/api/crm/v1/openapi.json`.
 */
import * as Context from "effect/Context"
import { flow } from "effect/Function"
import * as Schema from "effect/Schema"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Errors from "../BackOfficeErrors.ts"
import { adjustDocument } from "./openapi/Document.ts"
import { documentListFields, documentUnexpectedErrors, documentUnreachableStatus } from "./openapi/Errors.ts"
import { documentExamples } from "./openapi/Examples.ts"
import { documentRequestId } from "./openapi/Headers.ts"
import { documentContact, LICENSE } from "./openapi/Info.ts"
import { BACK_OFFICE_LIMITS, documentLimits } from "./openapi/Limits.ts"
import { nameComponents } from "./openapi/Names.ts"
import { documentParameters } from "./openapi/Parameters.ts"
import { documentSessionSecurity } from "./openapi/Security.ts"
import { SERVERS } from "./openapi/Servers.ts"
import { ApiKeysGroup, EmployeesGroup } from "./backoffice/Staff.ts"
import { InboxGroup, LeadsGroup } from "./backoffice/LeadSection.ts"
import { ReferenceGroup, StudentsGroup } from "./backoffice/School.ts"
import { WebhooksGroup } from "./backoffice/Webhooks.ts"
import { ANY_EMPLOYEE, COOKIE_NAME, SAFE_METHODS } from "../Sessions.ts"
import { ChangePasswordRequest, CurrentSession, EMAIL_MAX, PASSWORD_MAX, SignedIn } from "../Staff.ts"
import { BackOfficeValidation, bodyRefusals, ok, RequiredAccess, RoleCheck, SessionAuthentication } from "./BackOfficeMiddleware.ts"

export const BACK_OFFICE_PATH = "/api/crm/v1"

/** `POST /sessions`: any e-mail and password sign-in could match (the rules of a new one are Staff.ts's). */
export const LoginRequest = Schema.Struct({
  email: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(EMAIL_MAX)),
  password: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(PASSWORD_MAX))
}).annotate({ examples: [{ email: "maria@school.example", password: "correct horse battery" }] })

export const LoginResponse = ok(SignedIn)
export const CurrentSessionResponse = ok(CurrentSession)
export const LogoutResponse = ok(Schema.Struct({}).annotate({ examples: [{}] }))

/** Signing in: no session needed. */
export class LoginGroup extends HttpApiGroup.make("login")
    .annotate(OpenApi.Description, "Signing in: the session cookie and token (docs/back-office.md \"Signing in\").").add(
  HttpApiEndpoint.post("create", "/sessions", {
    payload: LoginRequest,
    success: LoginResponse.pipe(HttpApiSchema.status(201)),
    // 503: sign-in looks the e-mail up like every other call (docs/decisions.md "Requests and responses").
    error: [Errors.Unauthenticated.envelope, Errors.TooManyAttempts.envelope, Errors.ServiceUnavailable.envelope, ...bodyRefusals]
  }).annotate(OpenApi.Summary, "Sign in: sets the crm_session cookie and returns the token")
      .annotate(OpenApi.Description, "Signs a member of staff in with their e-mail and password: sets the `crm_session` cookie and returns the token, for `Authorization: Session <token>`. A wrong e-mail and a wrong password are the same 401. After 5 failures in a row for one e-mail from one address (or 30 across e-mails), attempts from that address wait: 429 `TOO_MANY_ATTEMPTS` with `Retry-After` (docs/back-office.md \"Signing in\"). An employee has at most 20 live sessions: signing in once more ends the oldest.")
).middleware(BackOfficeValidation) {}

/**
 * The caller's own session. Neither call takes a parameter or a body, so
 * nothing of the request is decoded and no 422 can come of it: the group has
 * no `BackOfficeValidation`.
 */
export class SessionsGroup extends HttpApiGroup.make("sessions")
    .annotate(OpenApi.Description, "The caller's session: who is signed in, signing out (docs/back-office.md \"Signing in\", \"Signing out\").").add(
  HttpApiEndpoint.get("current", "/sessions/current", { success: CurrentSessionResponse })
    .annotate(RequiredAccess, ANY_EMPLOYEE)
    .annotate(OpenApi.Summary, "The signed-in employee and when the session expires")
      .annotate(OpenApi.Description, "The caller's employee record (id, name, e-mail, role) and when the session expires. Any signed-in employee may call it; an unknown, ended or expired session is 401 `UNAUTHENTICATED`."),
  HttpApiEndpoint.delete("delete", "/sessions/current", { success: LogoutResponse })
    .annotate(RequiredAccess, ANY_EMPLOYEE)
    .annotate(OpenApi.Summary, "Sign out: the token stops working at once")
      .annotate(OpenApi.Description, "Ends the caller's session: the token stops working at once, on every API process, and the cookie is cleared.")
).middleware(RoleCheck).middleware(SessionAuthentication) {}

export const PasswordChangedResponse = ok(Schema.Struct({}).annotate({ examples: [{}] }))

/**
 * The caller's own password (docs/back-office.md "Signing in"): any
 * employee; every other session of theirs ends at once. A group of its own
 * because its body is decoded (`BackOfficeValidation`), which the session
 * calls above have no use for.
 */
export class PasswordGroup extends HttpApiGroup.make("password")
    .annotate(OpenApi.Description, "Changing one's own password (docs/back-office.md \"Signing in\").").add(
  HttpApiEndpoint.post("change", "/sessions/current/password", {
    payload: ChangePasswordRequest,
    success: PasswordChangedResponse,
    // 429: a wrong current password counts like a failed sign-in (docs/back-office.md "Signing in").
    error: [Errors.ValidationFailed.envelope, Errors.TooManyAttempts.envelope, ...bodyRefusals]
  })
    .annotate(RequiredAccess, ANY_EMPLOYEE)
    .annotate(OpenApi.Summary, "Change your own password: every other session of yours ends at once, this one stays")
      .annotate(OpenApi.Description, "Changes the caller's own password (`current_password`, `new_password` of at least 10 characters). A wrong `current_password` is 422 `VALIDATION_FAILED` on that field and counts like a failed sign-in (429 `TOO_MANY_ATTEMPTS` applies to both). On success every other session of the caller ends at once; this one goes on.")
).middleware(RoleCheck).middleware(BackOfficeValidation).middleware(SessionAuthentication) {}

/** The contract's routes, read by the document's `documentParameters`. */
const routes = HttpApi.make("crm-v1")
  .add(LoginGroup)
  .add(SessionsGroup)
  .add(PasswordGroup)
  .add(EmployeesGroup)
  .add(ApiKeysGroup)
  .add(WebhooksGroup)
  .add(ReferenceGroup)
  .add(StudentsGroup)
  .add(LeadsGroup)
  .add(InboxGroup)
  .prefix(BACK_OFFICE_PATH)

/**
 * The operations that never answer 403 FORBIDDEN, though `SessionAuthentication`
 * and `RoleCheck` declare it on every endpoint: a read (a safe method) never
 * meets the cookie's forgery check, and an endpoint every role may call never
 * refuses a role (docs/decisions.md "Back-office sessions"; docs/back-office.md
 * "Roles").
 */
const neverForbidden = (endpoint: HttpApiEndpoint.Top): boolean =>
  SAFE_METHODS.includes(endpoint.method) &&
  ANY_EMPLOYEE.every((role) => Context.get(endpoint.annotations, RequiredAccess).includes(role))

export class BackOfficeApi extends routes
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotateMerge(OpenApi.annotations({
    title: "School Management Service: Back-office API",
    version: "1",
    description:
      "The school's own staff. Sign in with POST /sessions; then the crm_session cookie or " +
      "`Authorization: Session <token>`. Errors use the envelope `{ success: false, code, message, fields? }`.\n\n" +
      "The guide, with the roles, every rule and its examples: `docs/back-office.md` in the service's repository; " +
      "the rules' reasons: `docs/decisions.md`.",
    license: LICENSE,
    servers: SERVERS,
    // What the document says beyond what HttpApi derives, in the order applied (./openapi/).
    transform: adjustDocument(flow(
      documentContact({ name: "The operator of the service, who created the school and its owner" }),
      documentParameters(routes),
      documentSessionSecurity(routes, {
        cookieName: COOKIE_NAME,
        needsSession: (middleware) => middleware.has(SessionAuthentication)
      }),
      documentUnreachableStatus(routes, 403, neverForbidden),
      documentUnexpectedErrors({ internalError: Errors.InternalError, methodNotAllowed: Errors.MethodNotAllowed }),
      documentRequestId,
      documentExamples,
      flow(documentLimits(BACK_OFFICE_LIMITS), documentListFields(["BackOfficeValidationFailedEncoded"]), nameComponents)
    ))
  }))
{}
