/**
 * The back office's webhook subscriptions (docs/back-office.md; spec 5.3,
 * 6.1): create, list, read, change, disable/enable, test, the journal, one
 * delivery, resend, recover. Endpoints are added before `.middleware(...)`.
 */
import { HttpApiGroup } from "effect/http-api"
import { BackOfficeValidation, SessionAuthentication } from "../BackOfficeMiddleware.ts"

export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .middleware(BackOfficeValidation)
  .middleware(SessionAuthentication)
{}
