/**
 * The API reference pages (docs/decisions.md "API reference page"): Scalar
 * with its script inlined (`HttpApiScalar.layer`), so a page loads nothing
 * from anywhere else and works offline, and its OpenAPI document embedded,
 * generated from the same contract the server implements.
 *
 * Every answer of a reference page (and of no other route) carries its
 * security headers: a Content-Security-Policy whose `script-src` is the
 * SHA-256 of each of the page's inline scripts (the Scalar bundle and the
 * call that starts it), computed from the page as served, so nothing else
 * runs, not even an injected inline script; styles may be inline, as Scalar
 * writes its own at run time; everything else is this origin or nothing.
 * The page is the same until the process restarts: it is sent compressed
 * (brotli or gzip, compressed once), `no-cache` with an ETag per coding,
 * answered 304 when it matches, so a reload does not fetch it again
 * (apps/api/src/http/CompressedBody.ts). The OpenAPI documents are served
 * the same way, here too.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type { HttpApi, HttpApiGroup } from "effect/http-api"
import * as HttpApiScalar from "effect/http-api/HttpApiScalar"
import * as OpenApi from "effect/http-api/OpenApi"
import { createHash } from "node:crypto"
import * as CompressedBody from "./CompressedBody.ts"

/**
 * Scalar's settings: its default fonts come from fonts.scalar.com, so the
 * system's are used; its developer tools (shown on localhost: sharing the
 * document to Scalar's registry, SDKs from scalar.com) stay hidden.
 * `showDeveloperTools` is Scalar's, not in Effect's `ScalarConfig`; the
 * config is passed to Scalar as it is.
 */
const settings = { withDefaultFonts: false, showDeveloperTools: "never" } as const
export const SCALAR_CONFIG: HttpApiScalar.ScalarConfig = settings

/**
 * The security schemes a page selects for "Test Request", so it never says "No authentication
 * selected": the public API's key (`bearer`), the back office's `Authorization: Session <token>`
 * (`sessionToken`; a signed-in browser sends its cookie anyway). A page selects those its
 * document has.
 */
export const PREFERRED_SECURITY_SCHEMES: ReadonlyArray<string> = ["bearer", "sessionToken"]

/** Scalar's settings for the page of `api`: SCALAR_CONFIG with the preferred scheme its document has. */
export const scalarConfig = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
): HttpApiScalar.ScalarConfig => {
  const schemes = Object.keys(OpenApi.fromApi(api).components.securitySchemes)
  const preferred = PREFERRED_SECURITY_SCHEMES.find((scheme) => schemes.includes(scheme))
  return preferred === undefined ? SCALAR_CONFIG : { ...SCALAR_CONFIG, authentication: { preferredSecurityScheme: preferred } }
}

/**
 * The policy, given the page's inline scripts' hashes: this origin only
 * (`connect-src 'self'` lets "Test Request" call this API), those scripts
 * only, inline styles, never framed, no base or form target.
 */
export const contentSecurityPolicy = (scriptHashes: ReadonlyArray<string>): string =>
  [
    "default-src 'none'",
    `script-src ${scriptHashes.map((hash) => `'${hash}'`).join(" ")}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'"
  ].join("; ")

/**
 * The texts of a page's inline scripts, as a browser reads them: from a
 * `<script>` without attributes to the first `</script>` after it.
 */
export const inlineScripts = (html: string): ReadonlyArray<string> =>
  Array.from(html.matchAll(/<script>([\s\S]*?)<\/script>/gu), (match) => match[1] ?? "")

/** `sha256-<base64>` of a script's text (UTF-8), as CSP writes it. */
export const scriptHash = (script: string): string =>
  `sha256-${createHash("sha256").update(script, "utf8").digest("base64")}`

/** The security headers of one page's answers, from its HTML (the caching headers are CompressedBody's). */
export const pageHeaders = (html: string): Readonly<Record<string, string>> => ({
  "content-security-policy": contentSecurityPolicy(inlineScripts(html).map(scriptHash)),
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin"
})

/**
 * How the pages and the documents may be cached: kept, but revalidated on
 * every use (a 304 of a few hundred bytes when the ETag matches), so a
 * reader sees the contract of the version now running as soon as it is
 * deployed (docs/operations.md "Process endpoints").
 */
export const CACHE_CONTROL = "no-cache"

/**
 * What a page serves, from the page Scalar's layer built: its HTML as bytes,
 * with the page's security headers. Scalar's page is the same on every
 * request (its layer builds it once), so it is asked for once and then let
 * go: only the bytes stay (docs/decisions.md "API reference page": memory).
 */
const pageSource = (response: HttpServerResponse.HttpServerResponse): CompressedBody.Source => {
  const body = response.body
  if (body._tag !== "Uint8Array") throw new Error(`the reference page's body is ${body._tag}, not bytes or text`)
  const html = body.text ?? new TextDecoder().decode(body.body)
  return { bytes: Buffer.from(html, "utf8"), contentType: body.contentType, headers: pageHeaders(html) }
}

/**
 * Scalar's page for `api`, built when it is first asked for: `HttpApiScalar.layer`
 * loads Scalar's 3 MB bundle as it is built, which made a process that never
 * serves the page 16 MiB larger (docs/performance.md "Memory"). Its layer is
 * built here in a router of its own, asked once, and let go.
 */
const scalarPage = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  path: `/${string}`
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> =>
  Effect.scoped(
    Effect.flatMap(HttpRouter.toHttpEffect(HttpApiScalar.layer(api, { path, scalar: scalarConfig(api) })), (page) => page)
  ).pipe(Effect.orDie)

/** The reference page of `api` at `path`, Scalar inlined, with its security headers, compressed. */
export const ReferencePage = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  path: `/${string}`
): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  CompressedBody.route(path, Effect.map(scalarPage(api, path), pageSource), CACHE_CONTROL)

/**
 * The OpenAPI document of `api` at `path`, compressed: the bytes
 * `HttpApiBuilder.layer(api, { openapiPath })` would send (`OpenApi.fromApi`
 * as `HttpServerResponse.jsonUnsafe` encodes it, built on the first
 * request), which this route replaces.
 */
export const OpenApiDocument = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  path: `/${string}`
): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  CompressedBody.route(
    path,
    Effect.sync((): CompressedBody.Source => {
      const body = HttpServerResponse.jsonUnsafe(OpenApi.fromApi(api)).body
      if (body._tag !== "Uint8Array") throw new Error(`the OpenAPI document's body is ${body._tag}, not bytes`)
      return { bytes: body.body, contentType: body.contentType, headers: {} }
    }),
    CACHE_CONTROL
  )
