/**
 * How a caller authenticates, as the documents say it: the public API's
 * bearer key under the scheme name tools compare, and the back office's
 * session (cookie or header) on every operation that needs one.
 */
import type { HttpApiGroup } from "effect/http-api"
import type * as HttpApi from "effect/http-api/HttpApi"
import type { Adjustment } from "./Document.ts"
import { endpointsOf, operationOf } from "./Document.ts"

/**
 * An `http` security scheme's name in lower case (`bearer`, as the IANA
 * registry and OpenAPI's examples spell it). HttpApiSecurity.bearer writes
 * `Bearer`; the name is case-insensitive in HTTP, but tools compare it
 * exactly: the reference page showed the public API's key as Basic
 * authentication and wrote its curl examples with `Authorization: Basic`.
 */
export const lowerCaseHttpSchemes: Adjustment = (spec) => {
  for (const scheme of Object.values(spec.components.securitySchemes)) {
    if (scheme.type === "http") scheme.scheme = scheme.scheme.toLowerCase()
  }
  return spec
}

/** Where the back office reads its session: the cookie, or `Authorization: Session <token>`. */
export interface SessionOptions {
  readonly cookieName: string
  /** Picks the operations that need a session, by the middleware in front of them. */
  readonly needsSession: (middleware: ReadonlySet<unknown>) => boolean
}

/**
 * The back office's session (docs/decisions.md "Back-office sessions") as
 * the security of every operation that needs one, so a generator knows how
 * to authenticate: the `crm_session` cookie, or `Authorization: Session
 * <token>` (either). HttpApi documents security only for its own schemes,
 * and the session middleware reads both places itself. `needsSession` picks
 * the operations, read from the contract.
 */
export const documentSessionSecurity = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  session: SessionOptions
): Adjustment =>
(spec) => {
  spec.components.securitySchemes = {
    ...spec.components.securitySchemes,
    sessionCookie: {
      type: "apiKey",
      in: "cookie",
      name: session.cookieName,
      description: "Set by POST /sessions (sign-in)."
    },
    sessionToken: {
      type: "apiKey",
      in: "header",
      name: "Authorization",
      description: "`Session <token>`, the token POST /sessions (sign-in) returns."
    }
  }
  for (const { endpoint, middleware } of endpointsOf(api)) {
    if (!session.needsSession(middleware)) continue
    operationOf(spec, endpoint).security = [{ sessionCookie: [] }, { sessionToken: [] }]
  }
  return spec
}
