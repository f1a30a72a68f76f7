/**
 * The package's types (libs/client/types/index.d.ts, what `npm pack` ships)
 * describe the code (libs/client/src): checked when the tests are
 * type-checked (`npm run typecheck`), each export of the code assigned to its
 * declaration. A field renamed in the contract, a list without `all`, an
 * error without `code` fails the type check here. The test below runs the
 * same assignments so the file is a test file.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as Package from "../../libs/client/types/index.d.ts"
import * as Client from "../../libs/client/src/index.ts"
import type * as Effect from "effect/Effect"

const makeClient: typeof Package.makeClient = Client.makeClient
const make: typeof Package.make = Client.make
const write: typeof Package.write = Client.write
const walk: typeof Package.walk = Client.walk
const originOf: typeof Package.originOf = Client.originOf
const newIdempotencyKey: typeof Package.newIdempotencyKey = Client.newIdempotencyKey
const isApiError: typeof Package.isApiError = Client.isApiError
const nextPause: typeof Package.RetryPolicy.nextPause = Client.RetryPolicy.nextPause
const error: Package.ApiError = new Client.ApiError("NotFound", { message: "No such student." })
const code: Package.ErrorCode = Client.ApiError.fromCode("group_full", { message: "Full." })?.code ?? "not_found"
const notFound: Package.ApiError<"NotFound"> = new Client.ApiError("NotFound", { message: "No such student." })
const anyError: Package.AnyApiError = new Client.ApiError("GroupFull", { message: "Full." })
// Every code of the table is a declared code, and back; every tag too, each with its own code.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const codes: Same<Package.ErrorCode, Client.ErrorCode> = true
const tags: Same<Package.ErrorTag, Client.ErrorTag> = true
const codeOfTag: { readonly [Tag in Client.ErrorTag]: Same<Package.ErrorCodes[Tag], Client.ApiError<Tag>["code"]> } = {
  Unauthorized: true, InsufficientScope: true, RateLimitExceeded: true, ValidationFailed: true, NotFound: true,
  InvalidWindow: true, WindowTooLarge: true, StudentNotFound: true, GroupNotFound: true, GroupFull: true,
  AlreadyEnrolled: true, FunnelNotFound: true, MissingIdempotencyKey: true, IdempotencyInProgress: true,
  MethodNotAllowed: true, PayloadTooLarge: true, UnsupportedMediaType: true, BadRequest: true, RequestTimeout: true,
  RequestHeaderFieldsTooLarge: true, InternalError: true, ServiceUnavailable: true
}
// The Effect face's calls fail with what the package declares (each method's error channel within CallError).
type CallErrors = {
  readonly [Group in keyof Client.PublicClient]: {
    readonly [Name in keyof Client.PublicClient[Group]]: Client.PublicClient[Group][Name] extends
      (request: never) => Effect.Effect<infer _A, infer E, infer _R> ? ([E] extends [Package.CallError] ? true : false) : false
  }
}
type AllTrue<T> = T extends { readonly [group: string]: { readonly [name: string]: true } } ? true : false
const callErrors: AllTrue<CallErrors> = true

describe("libs/client/types/index.d.ts", () => {
  it("declares what the code exports", () => {
    assert.strictEqual(typeof makeClient, "function")
    assert.strictEqual(typeof walk, "function")
    assert.strictEqual(originOf("http://h/api/public/v1/"), "http://h")
    assert.match(newIdempotencyKey(), /^[0-9a-f-]{36}$/)
    assert.isTrue(isApiError(error, "not_found"))
    assert.strictEqual(error.status, 404)
    assert.strictEqual(code, "group_full")
    assert.strictEqual(nextPause(undefined, 2_000, { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 100 }), 2_000)
    assert.isTrue(codes && tags && callErrors && Object.values(codeOfTag).every((same) => same))
    assert.strictEqual(typeof make, "function")
    assert.strictEqual(typeof write, "function")
    assert.deepStrictEqual([notFound.code, notFound.status, notFound.name], ["not_found", 404, "ApiError"])
    assert.strictEqual(anyError._tag, "GroupFull")
  })
})
