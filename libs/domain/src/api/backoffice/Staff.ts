/**
 * The back office's staff and API keys (docs/back-office.md; spec 5.2):
 * `POST/GET /employees`, `POST/GET /api-keys`, `DELETE /api-keys/{id}`.
 * Endpoints are added before `.middleware(...)`, which applies to those
 * added before it.
 */
import { HttpApiGroup } from "effect/http-api"
import { BackOfficeValidation, SessionAuthentication } from "../BackOfficeMiddleware.ts"

export class EmployeesGroup extends HttpApiGroup.make("employees")
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}

export class ApiKeysGroup extends HttpApiGroup.make("apiKeys")
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
