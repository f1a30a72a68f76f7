/**
 * The public API's client, derived from its contract (`PublicApi`) with
 * `HttpApiClient`: one method per endpoint, grouped as the contract groups
 * them, success bodies decoded to the contract's shapes and every error
 * answer, declared or not, to an `ApiError` (ApiError.ts) whose `_tag` is
 * the table's name (`NotFound`, `RateLimitExceeded`, …), so
 * `Effect.catchTag` works and the instance carries `code`, `message`,
 * `fields`, `status`, `headers`.
 *
 * What it adds to the derived client (docs/integrators.md "Client kit and
 * examples"):
 * - the key, as `Authorization: Bearer …` on every request (docs/integrators.md "Authentication");
 * - repeats by `RetryPolicy`: 429 after `Retry-After`, doubling on each
 *   repeat, bounded (docs/integrators.md "Limits"); also 408, 5xx and requests
 *   that got no answer;
 * - one `Idempotency-Key` per logical write (docs/integrators.md "Writing"): a write made through
 *   `write` or the Promise facade gets a fresh UUID unless one is given, and
 *   every repeat of that write (after a 429, a 5xx, a lost connection, a 409
 *   idempotency_in_progress) sends the same key, so the service runs it at
 *   most once; a repeat answered from the stored result
 *   (`Idempotent-Replayed: true`) is the write's success (docs/integrators.md "Writing").
 *
 * Two faces, one error class: `make` gives the Effect client, failing with
 * `ApiError`; `makeClient` gives Promises for a plain Node project
 * (`await client.students.list({ per_page: 100 })`), rejecting with the
 * same `ApiError`, with an async iterator over every
 * list (`for await (const student of client.students.all())`, a cursor walk,
 * docs/integrators.md "Lists and pagination").
 *
 * The base URL is the service's origin, with or without `/api/public/v1`
 * (`originOf`).
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as HttpClientResponse from "effect/http/HttpClientResponse"
import type * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import type * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import type * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import type { Simplify } from "effect/Types"
import type * as Brand from "effect/Brand"
import * as Errors from "@school/domain/Errors"
import * as DemoLessons from "@school/domain/DemoLessons"
import * as Enrollments from "@school/domain/Enrollments"
import * as Ids from "@school/domain/Ids"
import * as Leads from "@school/domain/Leads"
import { BASE_PATH, PublicApi } from "@school/domain/api/PublicApi"
import * as Pagination from "@school/domain/Pagination"
import { ApiError } from "./ApiError.ts"
import * as RetryPolicy from "./RetryPolicy.ts"

/** The client `HttpApiClient` derives from the contract, its errors the error table's classes. */
export type DerivedClient = HttpApiClient.ForApi<typeof PublicApi>

/** An error of the derived client as the Effect face fails with it: the table's errors become `ApiError`s. */
export type Faced<E> = E extends Errors.PublicError ? ApiError<E["_tag"]> : E
type FacedEffect<T> = T extends Effect.Effect<infer A, infer E, infer R> ? Effect.Effect<A, Faced<E>, R> : never

type Groups = typeof PublicApi extends HttpApi.HttpApi<infer _Id, infer G> ? G : never
type EndpointsOf<Group extends HttpApiGroup.Constraint> = Group["endpoints"] extends
  infer Endpoints extends Readonly<Record<string, HttpApiEndpoint.ConstraintRequest>> ? Endpoints : never
/**
 * A request as an integrator writes it: ids as plain numbers (the contract's
 * types brand them, `StudentId`…). The contract's schemas still check them
 * when the request is encoded: a value they refuse fails the call with a
 * `SchemaError` and nothing is sent, as in the Promise face.
 */
type Unbranded<T> = T extends number & Brand.Brand<infer _K> ? number
  : T extends string & Brand.Brand<infer _K> ? string
  : T extends ReadonlyArray<infer A> ? ReadonlyArray<Unbranded<A>>
  : T extends object ? { readonly [K in keyof T]: Unbranded<T[K]> }
  : T
/** One endpoint's method: the derived client's, failing with `ApiError` where it failed with a table's class. */
type Method<Endpoint extends HttpApiEndpoint.ConstraintRequest> = <Mode extends HttpApiEndpoint.ClientResponseMode = "decoded-only">(
  request: Unbranded<Simplify<HttpApiEndpoint.ClientRequest<Endpoint["~Params"], Endpoint["~Query"], Endpoint["~Payload"], Endpoint["~Headers"], Mode>>>
) => FacedEffect<HttpApiClient.Client.MethodReturn<Endpoint, never, never, Mode, never>>

/**
 * The Effect face: the contract's methods, grouped as the contract groups
 * them (`client.students.list({ query })`), each failing with an `ApiError`
 * when the service answers with an error (`error.code`, `error.message`,
 * `error.fields`, `error.status`, `error._tag` for `Effect.catchTag`), with an
 * `HttpClientError` when no answer came, with a `SchemaError` when the
 * arguments do not pass the contract's checks.
 */
export type PublicClient = {
  readonly [Group in Groups as HttpApiGroup.Identifier<Group>]: {
    readonly [Name in keyof EndpointsOf<Group>]: Method<EndpointsOf<Group>[Name]>
  }
}

export interface ClientOptions {
  /** The service's origin, e.g. `http://127.0.0.1:3000`, or the API's base URL `http://127.0.0.1:3000/api/public/v1` (a trailing `/` or not). */
  readonly baseUrl: string
  /** The whole `svc_<prefix>_<secret>` key. */
  readonly apiKey: string
  /** When and how often to repeat (RetryPolicy.ts); `{ maxAttempts: 1 }` never repeats. */
  readonly retry?: RetryPolicy.RetryOptions
}

/** Repeats what `RetryPolicy` says to repeat, each call on its own schedule; after the last attempt, its answer. */
export const repeating = (options: RetryPolicy.RetryOptions = {}) => <E, R>(
  client: HttpClient.HttpClient.With<E, R>
): HttpClient.HttpClient.With<E, R> =>
  HttpClient.transformResponse(client, (effect) =>
    effect.pipe(
      Effect.flatMap((response) =>
        RetryPolicy.isRepeatedStatus(response.status)
          ? response.arrayBuffer.pipe(
            Effect.orElseSucceed(() => new ArrayBuffer(0)),
            Effect.flatMap((body) => Effect.fail(new RetryPolicy.RepeatableAnswer(response, new Uint8Array(body))))
          )
          : Effect.succeed(response)
      ),
      Effect.retry({
        while: (error) => error instanceof RetryPolicy.RepeatableAnswer || RetryPolicy.isNoAnswer(error),
        schedule: RetryPolicy.schedule(options)
      }),
      // Out of attempts: the last answer is the call's answer (a 429 decodes to RateLimitExceeded).
      Effect.catchIf(
        (error): error is RetryPolicy.RepeatableAnswer => error instanceof RetryPolicy.RepeatableAnswer,
        (answer) =>
          Effect.succeed(HttpClientResponse.fromWeb(
            answer.response.request,
            new Response(answer.body.byteLength === 0 ? null : answer.body, {
              status: answer.response.status,
              headers: answer.response.headers
            })
          ))
      )
    ))

/**
 * The origin the contract's paths (`/api/public/v1/…`) are added to: the
 * given URL without trailing slashes and without the API's prefix, so
 * `https://host`, `https://host/` and `https://host/api/public/v1/` all
 * name the same API.
 */
export const originOf = (baseUrl: string): string => {
  const trimmed = baseUrl.replace(/\/+$/u, "")
  return trimmed.endsWith(BASE_PATH) ? trimmed.slice(0, -BASE_PATH.length) : trimmed
}

/**
 * The Effect client: the contract's methods, with the key and the repeats,
 * failing with `ApiError` (the same class as the Promise face) for every
 * error answer, declared by the endpoint or not.
 */
export const make = (options: ClientOptions): Effect.Effect<PublicClient> =>
  HttpApiClient.make(PublicApi, {
    baseUrl: originOf(options.baseUrl),
    transformClient: (client) =>
      client.pipe(
        HttpClient.mapRequest(HttpClientRequest.bearerToken(options.apiKey)),
        repeating(options.retry)
      ),
    transformResponse: (decoded) => Effect.catch(decoded, toApiError)
  }).pipe(
    Effect.provide(FetchHttpClient.layer),
    // The same object: transformResponse turned every table's error into an ApiError, which is what `PublicClient` says.
    Effect.map((client: DerivedClient): PublicClient => client as unknown as PublicClient)
  )

/** A fresh Idempotency-Key: one per logical write (docs/integrators.md "Writing": "a fresh unique value per operation, e.g. a UUID"). */
export const newIdempotencyKey = (): string => globalThis.crypto.randomUUID()

/**
 * One logical write: `send` gets the key (the given one, else a fresh one)
 * and is repeated with that same key while the service answers 409
 * idempotency_in_progress (docs/integrators.md "Writing": "repeat a little
 * later"). Repeats after 429, 5xx and lost connections happen
 * inside the client, with the same request and so the same key.
 */
export const write = <A, E, R>(
  send: (idempotencyKey: string) => Effect.Effect<A, E, R>,
  options: { readonly idempotencyKey?: string | undefined; readonly retry?: RetryPolicy.RetryOptions | undefined } = {}
): Effect.Effect<A, E, R> => {
  const key = options.idempotencyKey ?? newIdempotencyKey()
  return Effect.suspend(() => send(key)).pipe(
    Effect.retry({
      // The Effect face's ApiError or the derived client's class: both have this `_tag`.
      while: (error) =>
        typeof error === "object" && error !== null && "_tag" in error && error._tag === "IdempotencyInProgress",
      schedule: RetryPolicy.schedule({ ...options.retry, onRetry: () => {} })
    })
  )
}

// ---------------------------------------------------------------------------
// The Promise facade
// ---------------------------------------------------------------------------

/** What a method of the derived client decodes its success to (not the raw-response modes). */
type Success<F> = F extends (...args: never) => Effect.Effect<infer A, infer _E, infer _R>
  ? Exclude<A, HttpClientResponse.HttpClientResponse | readonly [unknown, HttpClientResponse.HttpClientResponse]>
  : never

/** One item of a list's `data`. */
type Item<F> = Success<F> extends { readonly data: ReadonlyArray<infer A> } ? A : never

export interface ListQuery {
  /** From 1 (default 1); not above 1 with `starting_after`. */
  readonly page?: number
  /** 1..100 (default 20). */
  readonly per_page?: number
  /**
   * Cursor mode: the items with an id above this one (0: from the first),
   * in id order; `meta` is then `{ per_page, starting_after, has_more,
   * next_starting_after }`, without a total. A sync walks a list this way
   * (docs/integrators.md "Lists and pagination").
   */
  readonly starting_after?: number
}

export interface ChangedQuery extends ListQuery {
  /** ISO 8601 with an offset: only records changed at or after it (docs/integrators.md "Keeping a copy in sync"). */
  readonly updated_since?: string
}

/** The query of `all`: a list's filters; the walk sets `starting_after` and `page` itself (`per_page` defaults to 100). */
export type WalkQuery<Q> = Omit<Q, "page" | "starting_after">

export interface WriteOptions {
  /** The key of this logical write; a fresh UUID when omitted. Give your own to repeat a write across restarts. */
  readonly idempotencyKey?: string
}

/** A list body: its items and its meta (a cursor page's meta says where the next page starts). */
export interface ListBody<A> {
  readonly data: ReadonlyArray<A>
  readonly meta: Pagination.Meta | Pagination.CursorMeta
}

/**
 * Every item of a list, in id order: a cursor walk (docs/integrators.md
 * "Lists and pagination") from `starting_after=0`, each page asking for the
 * ids after the previous page's last, until `has_more` is false. Each page
 * is one call of `list`, so a 429 on the way is waited out and the same
 * page asked again; nothing is skipped. Items created during the walk are
 * met on a later page.
 */
export async function* walk<A, F extends object>(
  list: (query: F & { readonly per_page?: number; readonly starting_after: number }) => Promise<ListBody<A>>,
  query: F
): AsyncGenerator<A, void, undefined> {
  let cursor = 0
  while (true) {
    const page = await list({ per_page: 100, ...query, starting_after: cursor })
    yield* page.data
    const meta = page.meta
    if (!("has_more" in meta) || !meta.has_more || meta.next_starting_after === null) return
    cursor = meta.next_starting_after
  }
}

type List<F, Q> = (query?: Q) => Promise<Success<F>>
type All<F, Q> = (query?: WalkQuery<Q>) => AsyncGenerator<Item<F>, void, undefined>

/**
 * The API as Promises. Each method resolves with the body the contract
 * declares (`{ data }`, or `{ data, meta }` for a list) and rejects with an
 * `ApiError` (`error.code`, `error.message`, `error.fields`, `error.status`)
 * when the service answers with an error, or with a `SchemaError` when the
 * arguments do not pass the contract's own checks (nothing is sent then).
 * Each list has `all`: every item, page after page (`walk`).
 */
export interface SchoolClient {
  /** The Effect client underneath. */
  readonly effect: Promise<PublicClient>
  readonly students: {
    readonly list: List<PublicClient["students"]["list"], ChangedQuery>
    readonly all: All<PublicClient["students"]["list"], ChangedQuery>
    readonly get: (id: number) => Promise<Success<PublicClient["students"]["get"]>>
  }
  readonly payments: {
    readonly list: List<PublicClient["payments"]["list"], ChangedQuery>
    readonly all: All<PublicClient["payments"]["list"], ChangedQuery>
  }
  readonly groups: {
    readonly list: List<PublicClient["groups"]["list"], ListQuery>
    readonly all: All<PublicClient["groups"]["list"], ListQuery>
  }
  readonly lessons: {
    readonly list: (query: ListQuery & { readonly from: string; readonly to: string }) => Promise<Success<PublicClient["lessons"]["list"]>>
    readonly all: (query: WalkQuery<ListQuery> & { readonly from: string; readonly to: string }) => AsyncGenerator<Item<PublicClient["lessons"]["list"]>, void, undefined>
  }
  readonly reference: {
    readonly filials: List<PublicClient["reference"]["filials"], ListQuery>
    readonly subjects: List<PublicClient["reference"]["subjects"], ListQuery>
    readonly programs: List<PublicClient["reference"]["programs"], ListQuery>
    readonly levels: List<PublicClient["reference"]["levels"], ListQuery>
  }
  readonly leads: {
    readonly create: (
      lead: typeof Leads.CreateLeadRequest.Encoded,
      options?: WriteOptions
    ) => Promise<Success<PublicClient["leads"]["create"]>>
  }
  readonly demoLessons: {
    readonly create: (
      demoLesson: typeof DemoLessons.CreateDemoLessonRequest.Encoded,
      options?: WriteOptions
    ) => Promise<Success<PublicClient["demoLessons"]["create"]>>
  }
  readonly enrollments: {
    /** The school's active enrollments, `{ id, student_id, group_id, enrolled_at }` (docs/integrators.md "Keeping a copy in sync"). */
    readonly list: List<PublicClient["enrollmentList"]["list"], ListQuery>
    readonly all: All<PublicClient["enrollmentList"]["list"], ListQuery>
    readonly create: (
      studentId: number,
      enrollment: typeof Enrollments.CreateEnrollmentRequest.Encoded,
      options?: WriteOptions
    ) => Promise<Success<PublicClient["enrollments"]["create"]>>
  }
}

/**
 * What both faces fail with: the service's error as an `ApiError`, also when
 * the endpoint does not declare it (the envelope read from the body);
 * anything else as it is.
 */
const toApiError = (error: unknown): Effect.Effect<never, unknown> => {
  if (error instanceof ApiError) return Effect.fail(error)
  if (Errors.isPublicError(error)) return Effect.fail(ApiError.fromPublicError(error))
  if (HttpClientError.isHttpClientError(error) && error.reason._tag === "DecodeError" && error.reason.response !== undefined) {
    const response = error.reason.response
    return response.json.pipe(
      Effect.flatMap((body) => Schema.decodeUnknownEffect(Envelope)(body)),
      Effect.flatMap(({ error: envelope }): Effect.Effect<never, unknown> => {
        const retryAfter = response.headers["retry-after"]
        const found = ApiError.fromCode(envelope.code, {
          message: envelope.message,
          fields: envelope.fields,
          headers: retryAfter === undefined ? {} : { "retry-after": retryAfter }
        })
        return found === undefined ? Effect.fail(error) : Effect.fail(found)
      }),
      Effect.catchIf((failure) => !(failure instanceof ApiError), (): Effect.Effect<never, unknown> => Effect.fail(error))
    )
  }
  return Effect.fail(error)
}
const Envelope = Schema.Struct({
  error: Schema.Struct({ code: Schema.String, message: Schema.String, fields: Schema.optional(Errors.ErrorFields) })
})

/** The client as Promises, for code that does not use Effect. */
export const makeClient = (options: ClientOptions): SchoolClient => {
  const client = Effect.runPromise(make(options))
  const run = <A, E>(use: (api: PublicClient) => Effect.Effect<A, E>): Promise<A> =>
    client.then((api) => Effect.runPromise(Effect.catch(use(api), toApiError)))
  const studentId = Schema.decodeUnknownEffect(Ids.StudentId)
  const writeOptions = (given: WriteOptions | undefined) => ({ idempotencyKey: given?.idempotencyKey, retry: options.retry })
  const students: SchoolClient["students"]["list"] = (query = {}) => run((api) => api.students.list({ query }))
  const payments: SchoolClient["payments"]["list"] = (query = {}) => run((api) => api.payments.list({ query }))
  const groups: SchoolClient["groups"]["list"] = (query = {}) => run((api) => api.groups.list({ query }))
  const lessons: SchoolClient["lessons"]["list"] = (query) => run((api) => api.lessons.list({ query }))
  const enrollments: SchoolClient["enrollments"]["list"] = (query = {}) => run((api) => api.enrollmentList.list({ query }))
  return {
    effect: client,
    students: {
      list: students,
      all: (query = {}) => walk(students, query),
      get: (id) => run((api) => Effect.flatMap(studentId(id), (id) => api.students.get({ params: { id } })))
    },
    payments: { list: payments, all: (query = {}) => walk(payments, query) },
    groups: { list: groups, all: (query = {}) => walk(groups, query) },
    lessons: { list: lessons, all: (query) => walk(lessons, query) },
    reference: {
      filials: (query = {}) => run((api) => api.reference.filials({ query })),
      subjects: (query = {}) => run((api) => api.reference.subjects({ query })),
      programs: (query = {}) => run((api) => api.reference.programs({ query })),
      levels: (query = {}) => run((api) => api.reference.levels({ query }))
    },
    leads: {
      create: (lead, given) =>
        run((api) =>
          Effect.flatMap(Schema.decodeUnknownEffect(Leads.CreateLeadRequest)(lead), (payload) =>
            write((key) => api.leads.create({ headers: { "idempotency-key": key }, payload }), writeOptions(given)))
        )
    },
    demoLessons: {
      create: (demoLesson, given) =>
        run((api) =>
          Effect.flatMap(Schema.decodeUnknownEffect(DemoLessons.CreateDemoLessonRequest)(demoLesson), (payload) =>
            write((key) => api.demoLessons.create({ headers: { "idempotency-key": key }, payload }), writeOptions(given)))
        )
    },
    enrollments: {
      list: enrollments,
      all: (query = {}) => walk(enrollments, query),
      create: (id, enrollment, given) =>
        run((api) =>
          Effect.flatMap(
            Effect.all([studentId(id), Schema.decodeUnknownEffect(Enrollments.CreateEnrollmentRequest)(enrollment)]),
            ([id, payload]) =>
              write((key) => api.enrollments.create({ params: { id }, headers: { "idempotency-key": key }, payload }), writeOptions(given))
          )
        )
    }
  }
}
