/**
 * The types of `@school/client` as a package (`npm pack` of libs/client):
 * the Promise face (`makeClient`), the Effect face (`make`, `write`), their
 * one error class (`ApiError`), the cursor walk (`walk`) and the repeat
 * rule's options (`RetryPolicy`). Written out here, plain and
 * self-contained but for `effect`'s own types (the package's peer
 * dependency), so a project outside this repository needs nothing but this
 * file; test/client/package-types.test.ts holds the implementation
 * (libs/client/src) to it at compile time.
 * See docs/integrators.md "Client kit and examples".
 */
import type * as Effect from "effect/Effect"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as Schema from "effect/Schema"

/** Each error of the table by its name (`_tag`), with its documented code (docs/integrators.md "Responses and errors"). */
export interface ErrorCodes {
  readonly Unauthorized: "unauthorized"
  readonly InsufficientScope: "insufficient_scope"
  readonly RateLimitExceeded: "rate_limit_exceeded"
  readonly ValidationFailed: "validation_failed"
  readonly NotFound: "not_found"
  readonly InvalidWindow: "invalid_window"
  readonly WindowTooLarge: "window_too_large"
  readonly StudentNotFound: "student_not_found"
  readonly GroupNotFound: "group_not_found"
  readonly GroupFull: "group_full"
  readonly AlreadyEnrolled: "already_enrolled"
  readonly FunnelNotFound: "funnel_not_found"
  readonly MissingIdempotencyKey: "missing_idempotency_key"
  readonly IdempotencyInProgress: "idempotency_in_progress"
  readonly MethodNotAllowed: "method_not_allowed"
  readonly PayloadTooLarge: "payload_too_large"
  readonly UnsupportedMediaType: "unsupported_media_type"
  readonly BadRequest: "bad_request"
  readonly RequestTimeout: "request_timeout"
  readonly RequestHeaderFieldsTooLarge: "request_header_fields_too_large"
  readonly InternalError: "internal_error"
  readonly ServiceUnavailable: "service_unavailable"
}
/** The name of an error, e.g. "RateLimitExceeded": `_tag`, what `Effect.catchTag` matches. */
export type ErrorTag = keyof ErrorCodes
/** A documented error code (docs/integrators.md "Responses and errors"). */
export type ErrorCode = ErrorCodes[ErrorTag]

/** Messages per request field, parameter or header. */
export type ErrorFields = { readonly [field: string]: string | ReadonlyArray<string> }

/** What a call of either face fails with when the service answers with an error. */
export declare class ApiError<Tag extends ErrorTag = ErrorTag> extends Error {
  readonly name: "ApiError"
  /** The error's name in the table, e.g. "RateLimitExceeded". */
  readonly _tag: Tag
  readonly code: ErrorCodes[Tag]
  readonly status: number
  readonly fields: ErrorFields | undefined
  /** The headers the error declares: a 429's and a 503's `retry-after`. */
  readonly headers: Readonly<Record<string, string>>
  readonly retryAfterSeconds: number | undefined
  constructor(tag: Tag, body: {
    readonly message: string
    readonly fields?: ErrorFields | undefined
    readonly headers?: Readonly<Record<string, string>> | undefined
  })
  static fromCode(code: string, body: { readonly message: string; readonly fields?: ErrorFields | undefined; readonly headers?: Readonly<Record<string, string>> }): ApiError | undefined
}

/** Any `ApiError`, one member per tag, so `Effect.catchTag("NotFound", …)` narrows to `ApiError<"NotFound">`. */
export type AnyApiError = { readonly [Tag in ErrorTag]: ApiError<Tag> }[ErrorTag]

/** Whether `u` is an `ApiError`, optionally of one code. */
export declare const isApiError: <C extends ErrorCode>(u: unknown, code?: C) => u is ApiError & { readonly code: C }

/** A pause: milliseconds, or a number and a unit, e.g. "500 millis", "2 seconds". */
export type DurationInput =
  | number
  | `${number} ${"milli" | "millis" | "second" | "seconds" | "minute" | "minutes" | "hour" | "hours"}`

export declare namespace RetryPolicy {
  interface RetryOptions {
    /** Attempts per call, the first included (default 5; 1 means never repeat). */
    readonly maxAttempts?: number
    /** The first pause when the answer names none (default 1 second). */
    readonly baseDelay?: DurationInput
    /** The longest pause the doubling reaches (default 60 seconds). */
    readonly maxDelay?: DurationInput
    /** Called before each pause. */
    readonly onRetry?: (retry: RetryEvent) => void
  }
  interface RetryEvent {
    readonly attempt: number
    readonly status: number | undefined
    readonly retryAfterMs: number | undefined
    readonly pauseMs: number
    readonly method: string
    readonly url: string
  }
  /** The pause before the next attempt (docs/integrators.md "Limits"). */
  const nextPause: (previousMs: number | undefined, retryAfterMs: number | undefined, options: { readonly maxAttempts: number; readonly baseDelayMs: number; readonly maxDelayMs: number }) => number
  const isRepeatedStatus: (status: number) => boolean
}

export interface ClientOptions {
  /** The service's origin or the API's base URL (`…/api/public/v1`, a trailing `/` or not). */
  readonly baseUrl: string
  /** The whole `svc_<prefix>_<secret>` key. */
  readonly apiKey: string
  readonly retry?: RetryPolicy.RetryOptions
}

export interface ListQuery {
  readonly page?: number
  readonly per_page?: number
  readonly starting_after?: number
}
export interface ChangedQuery extends ListQuery {
  /** ISO 8601 with an offset. */
  readonly updated_since?: string
}
export interface LessonsQuery extends ListQuery {
  readonly from: string
  readonly to: string
}
export type WalkQuery<Q> = Omit<Q, "page" | "starting_after">
export interface WriteOptions {
  readonly idempotencyKey?: string
}

export interface PageMeta {
  readonly page: number
  readonly per_page: number
  readonly total: number
}
export interface CursorMeta {
  readonly per_page: number
  readonly starting_after: number
  readonly has_more: boolean
  readonly next_starting_after: number | null
}
export interface ListBody<A> {
  readonly data: ReadonlyArray<A>
  readonly meta: PageMeta | CursorMeta
}
export interface One<A> {
  readonly data: A
}

interface StudentFields {
  readonly id: number
  readonly fio: string
  readonly phone: string
  readonly email: string
  readonly balance_kopecks: number
  readonly filial_id: number
  readonly created_at: string
  readonly updated_at: string | null
}
export interface Student extends StudentFields {
  readonly active_groups: null
}
export interface ActiveGroup {
  readonly group_id: number
  readonly group_name: string
  readonly filial_id: number
  readonly enrollment_id: number
  readonly enrolled_at: string
}
export interface StudentCard extends StudentFields {
  readonly active_groups: ReadonlyArray<ActiveGroup>
}
export interface Payment {
  readonly id: number
  readonly student_id: number
  readonly amount_kopecks: number
  readonly payment_type: "cash" | "card" | "transfer" | "online"
  readonly group_id: number | null
  readonly filial_id: number
  readonly paid_at: string
  readonly created_at: string
  readonly updated_at: string
}
export interface Group {
  readonly id: number
  readonly name: string
  readonly filial_id: number
  readonly subject_id: number | null
  readonly program_id: number | null
  readonly level_id: number | null
  readonly teacher_id: number | null
  readonly capacity: number
  readonly enrolled_count: number
  readonly free_places: number
}
export interface Lesson {
  readonly id: number
  readonly group_id: number
  readonly filial_id: number
  readonly teacher_id: number | null
  readonly starts_at: string
  readonly ends_at: string
  readonly topic: string | null
}
export interface Filial {
  readonly id: number
  readonly name: string
  readonly address: string | null
}
export interface Subject {
  readonly id: number
  readonly name: string
}
export interface Program {
  readonly id: number
  readonly name: string
  readonly subject_id: number | null
}
export interface Level {
  readonly id: number
  readonly name: string
  readonly program_id: number | null
}
export interface Enrollment {
  readonly id: number
  readonly student_id: number
  readonly group_id: number
  readonly enrolled_at: string
}
export interface Lead {
  readonly id: number
  readonly name: string
  readonly phone: string
  readonly source: string
  readonly comment: string
  readonly funnel_id: number
  readonly pipeline_status_id: number
  readonly created_at: string
}
export interface DemoLesson {
  readonly id: number
  readonly user_id: number | null
  readonly lead_id: number | null
  readonly group_id: number
  readonly starts_at: string | null
  readonly comment: string
  readonly status: "scheduled"
  readonly created_at: string
}
export interface CreateLead {
  readonly phone: string
  readonly name?: string
  readonly comment?: string
  readonly source?: string
  readonly funnel_id?: number
}
export interface CreateDemoLesson {
  readonly user_id?: number
  readonly lead_id?: number
  readonly group_id: number
  readonly starts_at?: string
  readonly comment?: string
}
export interface CreateEnrollment {
  readonly group_id: number
}

type All<A, Q> = (query?: WalkQuery<Q>) => AsyncGenerator<A, void, undefined>

/** The API as Promises; each list has `all`, every item page after page (a cursor walk). */
export interface SchoolClient {
  /** The Effect face underneath. */
  readonly effect: Promise<PublicClient>
  readonly students: {
    readonly list: (query?: ChangedQuery) => Promise<ListBody<Student>>
    readonly all: All<Student, ChangedQuery>
    readonly get: (id: number) => Promise<One<StudentCard>>
  }
  readonly payments: {
    readonly list: (query?: ChangedQuery) => Promise<ListBody<Payment>>
    readonly all: All<Payment, ChangedQuery>
  }
  readonly groups: {
    readonly list: (query?: ListQuery) => Promise<ListBody<Group>>
    readonly all: All<Group, ListQuery>
  }
  readonly lessons: {
    readonly list: (query: LessonsQuery) => Promise<ListBody<Lesson>>
    readonly all: (query: WalkQuery<LessonsQuery>) => AsyncGenerator<Lesson, void, undefined>
  }
  readonly reference: {
    readonly filials: (query?: ListQuery) => Promise<ListBody<Filial>>
    readonly subjects: (query?: ListQuery) => Promise<ListBody<Subject>>
    readonly programs: (query?: ListQuery) => Promise<ListBody<Program>>
    readonly levels: (query?: ListQuery) => Promise<ListBody<Level>>
  }
  readonly leads: {
    readonly create: (lead: CreateLead, options?: WriteOptions) => Promise<One<Lead>>
  }
  readonly demoLessons: {
    readonly create: (demoLesson: CreateDemoLesson, options?: WriteOptions) => Promise<One<DemoLesson>>
  }
  readonly enrollments: {
    readonly list: (query?: ListQuery) => Promise<ListBody<Enrollment>>
    readonly all: All<Enrollment, ListQuery>
    readonly create: (studentId: number, enrollment: CreateEnrollment, options?: WriteOptions) => Promise<One<Enrollment>>
  }
}

export declare const makeClient: (options: ClientOptions) => SchoolClient

/**
 * What a call of the Effect face fails with: the service's error as an
 * `ApiError` (the same class as the Promise face's), no answer as an
 * `HttpClientError`, arguments the contract refuses as a `SchemaError`
 * (nothing is sent then).
 */
export type CallError = AnyApiError | HttpClientError.HttpClientError | Schema.SchemaError
/** One call of the Effect face. */
export type Call<A> = Effect.Effect<A, CallError>
/** The headers of every write: its Idempotency-Key (`write` gives one). */
export interface WriteHeaders {
  readonly "idempotency-key": string
}

/** The API as Effects, grouped as the contract groups it; `make` gives it. */
export interface PublicClient {
  readonly students: {
    list(request: { readonly query: ChangedQuery }): Call<ListBody<Student>>
    get(request: { readonly params: { readonly id: number } }): Call<One<StudentCard>>
  }
  readonly payments: {
    list(request: { readonly query: ChangedQuery }): Call<ListBody<Payment>>
  }
  readonly groups: {
    list(request: { readonly query: ListQuery }): Call<ListBody<Group>>
  }
  readonly lessons: {
    list(request: { readonly query: LessonsQuery }): Call<ListBody<Lesson>>
  }
  readonly reference: {
    filials(request: { readonly query: ListQuery }): Call<ListBody<Filial>>
    subjects(request: { readonly query: ListQuery }): Call<ListBody<Subject>>
    programs(request: { readonly query: ListQuery }): Call<ListBody<Program>>
    levels(request: { readonly query: ListQuery }): Call<ListBody<Level>>
  }
  readonly enrollmentList: {
    list(request: { readonly query: ListQuery }): Call<ListBody<Enrollment>>
  }
  readonly leads: {
    create(request: { readonly headers: WriteHeaders; readonly payload: CreateLead }): Call<One<Lead>>
  }
  readonly demoLessons: {
    create(request: { readonly headers: WriteHeaders; readonly payload: CreateDemoLesson }): Call<One<DemoLesson>>
  }
  readonly enrollments: {
    create(request: {
      readonly params: { readonly id: number }
      readonly headers: WriteHeaders
      readonly payload: CreateEnrollment
    }): Call<One<Enrollment>>
  }
}

/** The Effect face: the client, with the key and the repeats. */
export declare const make: (options: ClientOptions) => Effect.Effect<PublicClient>
/**
 * One logical write: `send` gets the key (the given one, else a fresh UUID)
 * and is repeated with that same key while the service answers 409
 * idempotency_in_progress.
 */
export declare const write: <A, E, R>(
  send: (idempotencyKey: string) => Effect.Effect<A, E, R>,
  options?: { readonly idempotencyKey?: string | undefined; readonly retry?: RetryPolicy.RetryOptions | undefined }
) => Effect.Effect<A, E, R>
/** Every item of a list, in id order: a cursor walk from starting_after=0 until has_more is false. */
export declare function walk<A, F extends object>(
  list: (query: F & { readonly per_page?: number; readonly starting_after: number }) => Promise<ListBody<A>>,
  query: F
): AsyncGenerator<A, void, undefined>
/** The origin the API's paths are added to: the base URL without trailing slashes and without `/api/public/v1`. */
export declare const originOf: (baseUrl: string) => string
/** A fresh Idempotency-Key (a UUID). */
export declare const newIdempotencyKey: () => string
