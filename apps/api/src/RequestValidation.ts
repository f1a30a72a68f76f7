/**
 * Request decoding failures become 422 validation_failed (docs/integrators.md
 * "Responses and errors",
 * docs/decisions.md "Requests and responses"): `fields` holds the messages
 * per parameter or body field; a body that is not JSON, or not an object,
 * has a message and no fields.
 */
import * as Effect from "effect/Effect"
import * as SchemaIssue from "effect/SchemaIssue"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import type { HttpApiError } from "effect/http-api"
import { Errors } from "@school/domain"
import { RequestValidation } from "@school/domain/api/Middleware"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

const kindLabel: Record<HttpApiError.HttpApiSchemaError["kind"], string> = {
  Params: "path parameter",
  Query: "query parameter",
  Headers: "header",
  Payload: "request body",
  Body: "request body",
  ResponseHeaders: "response header"
}

/** Groups issue messages by their first path segment (the parameter or field name): the message and fields of a 422. */
export const validationBody = (
  error: HttpApiError.HttpApiSchemaError
): { readonly message: string; readonly fields?: Record<string, Array<string>> } => {
  const { issues } = formatter(error.cause.issue)
  const fields: Record<string, Array<string>> = {}
  const general: Array<string> = []
  for (const issue of issues) {
    const head = issue.path?.[0]
    if (head === undefined) {
      general.push(issue.message)
    } else {
      const name = String(head)
      ;(fields[name] ??= []).push(issue.message)
    }
  }
  const names = Object.keys(fields)
  if (names.length === 0) {
    const detail = general.length > 0 ? general.join("; ") : "invalid input"
    return { message: `Invalid ${kindLabel[error.kind]}: ${detail}` }
  }
  return { message: `Invalid ${kindLabel[error.kind]}: ${names.join(", ")}`, fields }
}

/** The public API's 422 validation_failed. */
export const toValidationFailed = (error: HttpApiError.HttpApiSchemaError): Errors.ValidationFailed =>
  new Errors.ValidationFailed(validationBody(error))

export const RequestValidationLive = HttpApiMiddleware.layerSchemaErrorTransform(
  RequestValidation,
  (error) => Effect.fail(toValidationFailed(error))
)
