/**
 * `@school/client`: the public API's typed client (Client.ts), the error
 * its Promise face rejects with (ApiError.ts) and its repeat rule
 * (RetryPolicy.ts). See docs/integrators.md "Client kit and examples".
 */
export * from "./ApiError.ts"
export * from "./Client.ts"
export * as RetryPolicy from "./RetryPolicy.ts"
export { Errors } from "@school/domain"
