/**
 * The back-office web panel at `/crm` (docs/back-office.md "Web panel";
 * docs/decisions.md "Back-office web panel"): the static files of
 * `apps/api/src/panel/`, a fixed list read once when the server starts, each
 * at its own route. No path from a request ever reaches the file system, so
 * there is nothing to traverse: a name not in the list is the router's 404.
 *
 * Every panel response carries the panel's security headers: a
 * Content-Security-Policy that allows only this origin's own scripts, styles
 * and API calls (no inline script, no frame, no base or form target
 * elsewhere), `nosniff`, no referrer. The files are revalidated on every load
 * (`no-cache` with an ETag), so a new release is picked up at once without a
 * build step that would rename them.
 */
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"

export const PANEL_PATH = "/crm"

const HTML = "text/html; charset=utf-8"
const CSS = "text/css; charset=utf-8"
const JS = "text/javascript; charset=utf-8"
const SVG = "image/svg+xml"

/** Every file the panel serves: its route, its name under `apps/api/src/panel/`, its content type. */
export const PANEL_FILES: ReadonlyArray<readonly [path: HttpRouter.PathInput, file: string, contentType: string]> = [
  [PANEL_PATH, "index.html", HTML],
  [`${PANEL_PATH}/panel.css`, "panel.css", CSS],
  [`${PANEL_PATH}/icon.svg`, "icon.svg", SVG],
  [`${PANEL_PATH}/app.js`, "app.js", JS],
  [`${PANEL_PATH}/api.js`, "api.js", JS],
  [`${PANEL_PATH}/dom.js`, "dom.js", JS],
  [`${PANEL_PATH}/sign-in.js`, "sign-in.js", JS],
  [`${PANEL_PATH}/keys.js`, "keys.js", JS],
  [`${PANEL_PATH}/webhooks.js`, "webhooks.js", JS],
  [`${PANEL_PATH}/webhook.js`, "webhook.js", JS],
  [`${PANEL_PATH}/notifications.js`, "notifications.js", JS],
  [`${PANEL_PATH}/leads.js`, "leads.js", JS],
  [`${PANEL_PATH}/staff.js`, "staff.js", JS],
  [`${PANEL_PATH}/password.js`, "password.js", JS],
  [`${PANEL_PATH}/contract-lists.js`, "contract-lists.js", JS]
]

/** The panel's routes, for the 405 table and the access log's route templates. */
export const PANEL_ROUTES: ReadonlyArray<readonly ["GET", HttpRouter.PathInput]> = [
  ...PANEL_FILES.map(([path]) => ["GET", path] as const),
  ["GET", `${PANEL_PATH}/`]
]

/** The policy: this origin only, no inline script or style, never framed. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'"
].join("; ")

/** The headers of every panel response (and of no other route). */
export const PANEL_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=()"
}

/**
 * The panel's files, found through this package's export (apps/api/package.json "./panel/*")
 * rather than relative to this module: the production bundle (apps/cli/src/build.ts) runs from
 * apps/api/dist/, the sources from apps/api/src/http/, and both resolve the same directory.
 */
const panelDirectory = new URL("./", import.meta.resolve("@school/api/panel/index.html"))

/** One file's response: its bytes, ETag and headers; 304 when the browser already has this version. */
const serveFile = (file: string, contentType: string) => {
  const bytes = new Uint8Array(readFileSync(new URL(file, panelDirectory)))
  const etag = `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 22)}"`
  const headers = { ...PANEL_HEADERS, "cache-control": "no-cache", etag }
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    return request.headers["if-none-match"] === etag
      ? HttpServerResponse.empty({ status: 304, headers })
      : HttpServerResponse.uint8Array(bytes, { contentType, headers })
  })
}

/**
 * The panel's routes. The files are read when the layer is built: a file
 * missing from the list's directory stops the server at start, not a
 * browser later.
 */
export const PanelRoutes = HttpRouter.use(Effect.fnUntraced(function*(router) {
  for (const [path, file, contentType] of PANEL_FILES) yield* router.add("GET", path, serveFile(file, contentType))
  // `/crm/` is where people type it; the panel's own links use `/crm`.
  yield* router.add(
    "GET",
    `${PANEL_PATH}/`,
    HttpServerResponse.empty({ status: 308, headers: { ...PANEL_HEADERS, location: PANEL_PATH } })
  )
}))
