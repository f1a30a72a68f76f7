/**
 * The two ways a test talks to the public API, against any base URL (the
 * in-process `TestServer`, or a real process a test started):
 *
 * - `typedClient`: the client derived from the contract (`HttpApiClient`
 *   over `PublicApi`). Success bodies decode to the contract's shapes and
 *   declared errors to the error table's classes (`Errors.NotFound`, …), so
 *   the client's side of the envelope is tested too. `failsWith` asserts a
 *   call's error class.
 * - `rawClient`: plain requests for what a typed client hides or refuses to
 *   send: exact bytes (replays), the envelope as sent, headers, malformed
 *   bodies and headers, odd paths and methods. `errorOf`, `dataOf` and
 *   `pageOf` decode its JSON strictly (a field more or less is a failure),
 *   and `expectError` checks an error reply's status, content type and code.
 */
import { assert } from "@effect/vitest"
import { Data, Effect, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { Errors, Pagination } from "@school/domain"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { BASE_PATH, PublicApi } from "@school/domain/api/PublicApi"

/** The public API's base path, `/api/public/v1`. */
export const V1 = BASE_PATH

/** The content type of every JSON response (docs/integrators.md). */
export const JSON_CONTENT_TYPE = "application/json; charset=utf-8"

// ---------------------------------------------------------------------------
// The typed client
// ---------------------------------------------------------------------------

/** The client `HttpApiClient` derives from `PublicApi`: one method per endpoint, grouped. */
export type PublicClient = HttpApiClient.ForApi<typeof PublicApi>

export interface TypedClientOptions {
  /** Sent as `Authorization: Bearer <key>`. */
  readonly key?: string
  /** Sent with every request (an endpoint's declared headers, such as Idempotency-Key, go in its call). */
  readonly headers?: Readonly<Record<string, string>>
}

/** The contract's client against `baseUrl` (the server's origin; the contract adds `/api/public/v1`). */
export const typedClient = (baseUrl: string, options: TypedClientOptions = {}): Effect.Effect<PublicClient> =>
  HttpApiClient.make(PublicApi, {
    baseUrl,
    transformClient: HttpClient.mapRequest((request) => {
      const withKey = options.key === undefined ? request : HttpClientRequest.bearerToken(request, options.key)
      return options.headers === undefined ? withKey : HttpClientRequest.setHeaders(withKey, options.headers)
    })
  }).pipe(Effect.provide(FetchHttpClient.layer))

/**
 * The client `HttpApiClient` derives from `BackOfficeApi`. A success decodes
 * to its value (the `{ success: true, data }` envelope is the contract's
 * schema transformation, libs/domain/src/api/BackOfficeMiddleware.ts); a
 * list to `{ data, meta }`.
 */
export type BackOfficeClient = HttpApiClient.ForApi<typeof BackOfficeApi>

/** The back office's client against `baseUrl`; `token`, when given, is sent as `Authorization: Session <token>`. */
export const backOfficeClient = (baseUrl: string, token?: string): Effect.Effect<BackOfficeClient> =>
  HttpApiClient.make(BackOfficeApi, {
    baseUrl,
    transformClient: HttpClient.mapRequest((request) =>
      token === undefined ? request : HttpClientRequest.setHeader(request, "authorization", `Session ${token}`)
    )
  }).pipe(Effect.provide(FetchHttpClient.layer))

/**
 * The error a typed call fails with, asserted to be an instance of `Class`
 * (a row of the error table); a success or another error fails the test.
 *
 *   const error = yield* api.students.get({ params: { id } }).pipe(failsWith(Errors.NotFound))
 */
export const failsWith = <T>(Class: abstract new(...args: ReadonlyArray<never>) => T) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<T, never, R> =>
  Effect.matchEffect(self, {
    onFailure: (error) =>
      error instanceof Class
        ? Effect.succeed(error)
        : Effect.sync(() => assert.fail(`expected ${Class.name}, got ${String(error)}`)),
    onSuccess: (value) => Effect.sync(() => assert.fail(`expected ${Class.name}, got a success: ${JSON.stringify(value)}`))
  })

// ---------------------------------------------------------------------------
// The raw client
// ---------------------------------------------------------------------------

export interface RawReply {
  readonly status: number
  readonly headers: Headers
  /** The body exactly as received. */
  readonly bytes: Uint8Array
  readonly text: string
  /** The body parsed as JSON; undefined when it is not JSON. */
  readonly json: unknown
}

export interface RawRequest {
  /** GET by default. */
  readonly method?: string
  /** Sent as `Authorization: Bearer <key>`. */
  readonly key?: string
  /** Sent as `Idempotency-Key`; omitted, no header. */
  readonly idempotencyKey?: string
  /** A string or bytes are sent as they are; any other value as its JSON. */
  readonly body?: unknown
  /** Sent last, so they override the above (e.g. another content-type). */
  readonly headers?: Readonly<Record<string, string>>
  readonly signal?: AbortSignal
}

/** The request never got an answer (refused, reset, aborted). */
export class RawRequestError extends Data.TaggedError("RawRequestError")<{
  readonly url: string
  readonly cause: unknown
}> {}

export interface RawClient {
  readonly baseUrl: string
  /** `path` is appended to the base URL as is (so odd paths reach the server unchanged). */
  readonly request: (path: string, request?: RawRequest) => Effect.Effect<RawReply, RawRequestError>
  readonly get: (path: string, key?: string) => Effect.Effect<RawReply, RawRequestError>
  /** A POST; its content type is application/json unless `headers` says otherwise. */
  readonly post: (path: string, request?: Omit<RawRequest, "method">) => Effect.Effect<RawReply, RawRequestError>
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Plain HTTP against `baseUrl` (e.g. `http://127.0.0.1:3000`). */
export const rawClient = (baseUrl: string): RawClient => {
  const request = (path: string, options: RawRequest = {}) => {
    const url = `${baseUrl}${path}`
    const method = options.method ?? "GET"
    const headers: Record<string, string> = {}
    if (method === "POST") headers["content-type"] = "application/json"
    if (options.key !== undefined) headers["authorization"] = `Bearer ${options.key}`
    if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey
    Object.assign(headers, options.headers)
    const body = options.body === undefined
      ? undefined
      : typeof options.body === "string" || options.body instanceof Uint8Array
      ? options.body
      : JSON.stringify(options.body)
    return Effect.tryPromise({
      try: async (): Promise<RawReply> => {
        const response = await fetch(url, {
          method,
          headers,
          ...(body === undefined ? {} : { body }),
          ...(options.signal === undefined ? {} : { signal: options.signal })
        })
        const bytes = new Uint8Array(await response.arrayBuffer())
        const text = new TextDecoder().decode(bytes)
        return { status: response.status, headers: response.headers, bytes, text, json: parseJson(text) }
      },
      catch: (cause) => new RawRequestError({ url, cause })
    })
  }
  return {
    baseUrl,
    request,
    get: (path, key) => request(path, key === undefined ? {} : { key }),
    post: (path, options = {}) => request(path, { ...options, method: "POST" })
  }
}

// ---------------------------------------------------------------------------
// Raw replies, decoded strictly
// ---------------------------------------------------------------------------

const strict = { onExcessProperty: "error" } as const

/** The error envelope (docs/integrators.md "Responses and errors"), as every error reply carries it. */
export const ErrorReply = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    fields: Schema.optionalKey(Errors.ErrorFields)
  })
})
export type ErrorReply = typeof ErrorReply.Type

/** The envelope of an error reply, checked strictly. */
export const errorOf = (reply: RawReply): ErrorReply["error"] => Schema.decodeUnknownSync(ErrorReply)(reply.json, strict).error

/** `{ data: <S> }`, checked strictly. */
export const dataOf = <A>(schema: Schema.Codec<A, unknown>, reply: RawReply): A =>
  Schema.decodeUnknownSync(Schema.Struct({ data: schema }))(reply.json, strict).data

/** `{ data: [<S>], meta }`, a list page, checked strictly. */
export const pageOf = <A>(schema: Schema.Codec<A, unknown>, reply: RawReply) =>
  Schema.decodeUnknownSync(Schema.Struct({
    data: Schema.Array(schema),
    meta: Schema.Struct({ page: Schema.Int, per_page: Schema.Int, total: Schema.Int })
  }))(reply.json, strict)

/** `{ data: [<S>], meta }`, a cursor page (`starting_after`), checked strictly: its meta has no page or total. */
export const cursorPageOf = <A>(schema: Schema.Codec<A, unknown>, reply: RawReply) =>
  Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Array(schema), meta: Pagination.CursorMeta }))(reply.json, strict)

/** The total of a page-number list's meta, as the typed client decodes it (a cursor page's meta has none: a failure). */
export const totalOf = (meta: Pagination.Meta | Pagination.CursorMeta): number => {
  if (!("total" in meta)) assert.fail(`expected a page-number meta, got ${JSON.stringify(meta)}`)
  return meta.total
}

/** An error reply: its status, JSON content type, code and a non-empty message; returns the envelope's `error`. */
export const expectError = (reply: RawReply, status: number, code: string): ErrorReply["error"] => {
  assert.strictEqual(reply.status, status, reply.text)
  assert.strictEqual(reply.headers.get("content-type"), JSON_CONTENT_TYPE)
  const error = errorOf(reply)
  assert.strictEqual(error.code, code)
  assert.isAbove(error.message.length, 0)
  return error
}
