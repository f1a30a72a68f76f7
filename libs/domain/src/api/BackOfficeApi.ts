/**
 * The back-office contract, `/api/crm/v1` (docs/back-office.md): the school's
 * own staff, a separate authorization domain from the public API. Endpoints,
 * their bodies and every error each can return, in the back office's envelope
 * (`{ success: false, code, message, fields? }`, BackOfficeErrors.ts); its
 * middleware tags. The server (apps/api) implements it; OpenAPI is generated
 * from it at `/api/crm/v1/openapi.json`.
 */
import { Context, Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import * as Errors from "../BackOfficeErrors.ts"
import type { SchoolId } from "../Ids.ts"
import { Role } from "../Sessions.ts"
import { Timestamp } from "../Timestamps.ts"

export const BACK_OFFICE_PATH = "/api/crm/v1"

/** The employee a session belongs to. */
export const Employee = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  email: Schema.String,
  role: Role
})
export type Employee = typeof Employee.Type

/** The authenticated employee, provided to every handler behind `SessionAuthentication`. */
export class CurrentEmployee extends Context.Service<CurrentEmployee, {
  readonly schoolId: SchoolId
  readonly employee: Employee
  readonly sessionId: number
  readonly expiresAt: string
}>()("school/domain/api/CurrentEmployee") {}

/**
 * The session (docs/decisions.md "Back-office sessions"): the `crm_session`
 * cookie or `Authorization: Session <token>`; an API key never
 * authenticates here (401 UNAUTHENTICATED). A state-changing call
 * authenticated by the cookie must pass the cross-site request forgery check
 * (403 FORBIDDEN).
 */
export class SessionAuthentication extends HttpApiMiddleware.Service<SessionAuthentication, {
  provides: CurrentEmployee
}>()("school/domain/api/SessionAuthentication", {
  error: [Errors.Unauthenticated.envelope, Errors.Forbidden.envelope]
}) {}

/** Request decoding failures become 422 VALIDATION_FAILED with per-field messages. */
export class BackOfficeValidation extends HttpApiMiddleware.Service<BackOfficeValidation>()(
  "school/domain/api/BackOfficeValidation",
  { error: Errors.ValidationFailed.envelope }
) {}

export const LoginRequest = Schema.Struct({
  email: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(320)),
  password: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(1024))
})

const ok = <S extends Schema.Top>(data: S) => Schema.Struct({ success: Schema.Literal(true), data })

export const LoginResponse = ok(Schema.Struct({ token: Schema.String, expires_at: Timestamp, employee: Employee }))
export const CurrentSessionResponse = ok(Schema.Struct({ employee: Employee, expires_at: Timestamp }))
export const LogoutResponse = ok(Schema.Struct({}))

/** Signing in: no session needed. */
export class LoginGroup extends HttpApiGroup.make("login").add(
  HttpApiEndpoint.post("create", "/sessions", {
    payload: LoginRequest,
    success: LoginResponse.pipe(HttpApiSchema.status(201)),
    error: [Errors.Unauthenticated.envelope, Errors.TooManyAttempts.envelope]
  }).annotate(OpenApi.Summary, "Sign in: sets the crm_session cookie and returns the token")
).middleware(BackOfficeValidation) {}

/** The caller's own session. */
export class SessionsGroup extends HttpApiGroup.make("sessions").add(
  HttpApiEndpoint.get("current", "/sessions/current", { success: CurrentSessionResponse })
    .annotate(OpenApi.Summary, "The signed-in employee and when the session expires"),
  HttpApiEndpoint.delete("delete", "/sessions/current", { success: LogoutResponse })
    .annotate(OpenApi.Summary, "Sign out: the token stops working at once")
).middleware(BackOfficeValidation).middleware(SessionAuthentication) {}

export class BackOfficeApi extends HttpApi.make("crm-v1")
  .add(LoginGroup)
  .add(SessionsGroup)
  .prefix(BACK_OFFICE_PATH)
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotateMerge(OpenApi.annotations({
    title: "School Management Service: Back-office API",
    version: "1",
    description:
      "The school's own staff. Sign in with POST /sessions; then the crm_session cookie or " +
      "`Authorization: Session <token>`. Errors use the envelope `{ success: false, code, message, fields? }`."
  }))
{}
