/**
 * The back office's lead section (docs/back-office.md; spec part 3): leads,
 * their funnels and status moves with the funnel automation; and each
 * employee's inbox: notifications and tasks. Endpoints are added before
 * `.middleware(...)`.
 */
import { HttpApiGroup } from "effect/http-api"
import { BackOfficeValidation, SessionAuthentication } from "../BackOfficeMiddleware.ts"

export class LeadsGroup extends HttpApiGroup.make("leads")
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}

export class InboxGroup extends HttpApiGroup.make("inbox")
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
