/**
 * A body that never changes while the process runs (the API reference pages
 * and the OpenAPI documents, apps/api/src/http/Reference.ts), served
 * compressed and revalidated (docs/operations.md "Process endpoints"):
 *
 * - compressed once, when the route is first asked for, never per request:
 *   brotli and gzip beside the identity bytes, all three kept. The
 *   compression runs on libuv's thread pool (`zlib`'s asynchronous calls),
 *   not on the event loop, and concurrent first requests share one run;
 * - the coding is chosen by `Accept-Encoding`: brotli when it accepts `br`,
 *   else gzip, else the identity bytes (between `br` and `gzip` the higher
 *   q-value wins, brotli on a tie; `q=0` refuses a coding);
 * - each coding has its own strong ETag, the SHA-256 of the bytes it sends,
 *   so a cache never mistakes one coding's bytes for another's; every
 *   answer carries `Vary: Accept-Encoding` and the route's `Cache-Control`;
 * - `If-None-Match` naming the ETag of a coding the request accepts (or `*`)
 *   is answered 304 with that coding's headers and no body. HEAD is the
 *   router's GET without the body, with the same headers.
 */
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { createHash } from "node:crypto"
import { promisify } from "node:util"
import * as Zlib from "node:zlib"

/** A content coding this module serves, in the server's order of preference. */
export type Coding = "br" | "gzip" | "identity"

/** What a route serves: the identity bytes, their content type, the headers of every answer. */
export interface Source {
  readonly bytes: Uint8Array
  readonly contentType: string
  readonly headers: Readonly<Record<string, string>>
}

/** One coding of the body, with its two answers built once. */
interface Variant {
  readonly coding: Coding
  readonly etag: string
  readonly ok: HttpServerResponse.HttpServerResponse
  readonly notModified: HttpServerResponse.HttpServerResponse
}

/** A body in every coding, ready to answer. */
export interface CompressedBody {
  readonly variants: Readonly<Record<Coding, Variant>>
}

/**
 * Brotli's quality: 9 of 11. On the 3.3 MB public reference page 11 takes
 * about 7 s of CPU for 10% fewer bytes (702 KB against 775 KB); 9 takes
 * about 0.6 s, paid once by the first request.
 */
export const BROTLI_QUALITY = 9
/** gzip's level: the best; it takes about 0.1 s on the same page. */
export const GZIP_LEVEL = 9

const brotli = promisify(Zlib.brotliCompress)
const gzip = promisify(Zlib.gzip)

const encode = (coding: Coding, bytes: Uint8Array): Effect.Effect<Uint8Array> => {
  switch (coding) {
    case "identity":
      return Effect.succeed(bytes)
    case "br":
      return Effect.promise(() =>
        brotli(bytes, {
          params: {
            [Zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
            [Zlib.constants.BROTLI_PARAM_MODE]: Zlib.constants.BROTLI_MODE_TEXT,
            [Zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length
          }
        })
      )
    case "gzip":
      return Effect.promise(() => gzip(bytes, { level: GZIP_LEVEL }))
  }
}

/** A strong ETag of `bytes`: the first 22 characters of their SHA-256 in base64url, quoted. */
export const etagOf = (bytes: Uint8Array): string => `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 22)}"`

/** One coding of `source`, with its answers. */
const variant = (source: Source, cacheControl: string, coding: Coding): Effect.Effect<Variant> =>
  Effect.map(encode(coding, source.bytes), (bytes): Variant => {
    const etag = etagOf(bytes)
    // The 304 names the coding by its ETag; Content-Encoding describes a body, and it has none.
    const headers = { ...source.headers, "cache-control": cacheControl, vary: "accept-encoding", etag }
    return {
      coding,
      etag,
      ok: HttpServerResponse.uint8Array(bytes, {
        contentType: source.contentType,
        headers: coding === "identity" ? headers : { ...headers, "content-encoding": coding }
      }),
      notModified: HttpServerResponse.empty({ status: 304, headers })
    }
  })

/** `source` in every coding, with the answers of each: compressed here, once (both codings at once). */
export const make = (source: Source, cacheControl: string): Effect.Effect<CompressedBody> =>
  Effect.map(
    Effect.all({
      br: variant(source, cacheControl, "br"),
      gzip: variant(source, cacheControl, "gzip"),
      identity: variant(source, cacheControl, "identity")
    }, { concurrency: "unbounded" }),
    (variants) => ({ variants })
  )

/**
 * The q-value `Accept-Encoding` gives each coding it names (`*` included),
 * lower-cased; `x-gzip` counts as `gzip`. A malformed q-value counts as 0.
 */
export const acceptedCodings = (header: string | undefined): ReadonlyMap<string, number> => {
  const accepted = new Map<string, number>()
  for (const item of (header ?? "").split(",")) {
    const [name = "", ...parameters] = item.split(";").map((part) => part.trim())
    if (name === "") continue
    let quality = 1
    for (const parameter of parameters) {
      const match = /^q\s*=\s*(.*)$/iu.exec(parameter)
      if (match === null) continue
      quality = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/u.test(match[1] ?? "") ? Number(match[1]) : 0
    }
    const coding = name.toLowerCase() === "x-gzip" ? "gzip" : name.toLowerCase()
    accepted.set(coding, Math.max(quality, accepted.get(coding) ?? 0))
  }
  return accepted
}

/** The q-value a request gives `coding`: its own, else `*`'s; identity is acceptable unless refused. */
const qualityOf = (accepted: ReadonlyMap<string, number>, coding: Coding): number =>
  accepted.get(coding) ?? accepted.get("*") ?? (coding === "identity" ? 1 : 0)

/**
 * The codings a request accepts, best first: `br` and `gzip` by q-value
 * (brotli on a tie), then identity, always last: it is what a client gets
 * when it accepts nothing else, even one that refuses it.
 */
export const preferred = (header: string | undefined): readonly [...ReadonlyArray<"br" | "gzip">, "identity"] => {
  const accepted = acceptedCodings(header)
  const compressed = (["br", "gzip"] as const)
    .map((coding) => ({ coding, quality: qualityOf(accepted, coding) }))
    .filter(({ quality }) => quality > 0)
    .sort((a, b) => b.quality - a.quality)
    .map(({ coding }) => coding)
  return [...compressed, "identity"]
}

/** The entity tags of an `If-None-Match` header, weak ones compared by their opaque part; `*` as itself. */
const entityTags = (header: string): ReadonlyArray<string> =>
  header.split(",").map((tag) => tag.trim().replace(/^W\//u, "")).filter((tag) => tag !== "")

/** The answer to one request's headers: 304 when it holds a current coding it accepts, else the best coding. */
export const answer = (body: CompressedBody, headers: HttpServerRequest.HttpServerRequest["headers"]): HttpServerResponse.HttpServerResponse => {
  const variants = preferred(headers["accept-encoding"]).map((coding) => body.variants[coding])
  const best = variants[0] ?? body.variants.identity
  const ifNoneMatch = headers["if-none-match"]
  if (ifNoneMatch !== undefined) {
    const tags = entityTags(ifNoneMatch)
    if (tags.includes("*")) return best.notModified
    const held = variants.find(({ etag }) => tags.includes(etag))
    if (held !== undefined) return held.notModified
  }
  return best.ok
}

/**
 * A GET route (and so HEAD) at `path` serving what `load` makes: `load`
 * runs on the first request only, with that request (concurrent first
 * requests wait for the same run; an interrupted run is not kept), its body
 * is compressed then, and every later request is answered from the kept
 * bytes. A failure of `load` is a defect (the 500 of the error envelope).
 */
export const route = <E>(
  path: HttpRouter.PathInput,
  load: Effect.Effect<Source, E, HttpServerRequest.HttpServerRequest>,
  cacheControl: string
): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  HttpRouter.use((router) =>
    Effect.gen(function*() {
      const body = yield* Effect.cached(Effect.orDie(Effect.flatMap(load, (source) => make(source, cacheControl))))
      yield* router.add("GET", path, (request) => Effect.map(body, (compressed) => answer(compressed, request.headers)))
    })
  )
