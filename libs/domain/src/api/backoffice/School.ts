/**
 * The back office's school records (docs/back-office.md): reference data
 * (filials, subjects, programs, levels), groups and lessons; students,
 * enrollments, attendance and payments, the actions that raise events
 * (spec 6.3). Endpoints are added before `.middleware(...)`.
 */
import { HttpApiGroup } from "effect/http-api"
import { BackOfficeValidation, SessionAuthentication } from "../BackOfficeMiddleware.ts"

export class ReferenceGroup extends HttpApiGroup.make("reference")
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}

export class StudentsGroup extends HttpApiGroup.make("students")
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
