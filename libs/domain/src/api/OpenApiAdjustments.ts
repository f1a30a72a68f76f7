/**
 * What the generated OpenAPI document says differently from what HttpApi
 * derives, and why: the Idempotency-Key header as the specification spells
 * it, with its rule; request bodies that accept unknown fields; the bearer
 * scheme's name in lower case; X-Request-Id on every answer. Everything
 * else (envelopes, statuses, the 429's `Retry-After`) comes from the
 * contract itself.
 */
import { Predicate } from "effect"
import * as Idempotency from "../Idempotency.ts"
import * as RequestId from "../RequestId.ts"

type Json = Record<string, unknown>

const isJson = (u: unknown): u is Json => Predicate.isObject(u) && !Array.isArray(u)
const valuesOf = (u: unknown): ReadonlyArray<unknown> => (isJson(u) ? Object.values(u) : [])

/**
 * An operation transform for every write: the Idempotency-Key header (spec
 * 4.1) under its specified name, with its rule and its bounds.
 */
export const documentIdempotencyKey = (operation: Json): Json => ({
  ...operation,
  parameters: (Array.isArray(operation["parameters"]) ? operation["parameters"] : []).map((parameter: unknown) =>
    isJson(parameter) && parameter["in"] === "header" && parameter["name"] === "idempotency-key"
      ? {
        ...parameter,
        name: Idempotency.HEADER,
        description: Idempotency.KEY_DESCRIPTION,
        schema: { type: "string", minLength: 1, maxLength: Idempotency.MAX_KEY_LENGTH, pattern: "^[\\x20-\\x7E]+$" }
      }
      : parameter
  )
})

/**
 * A document transform: unknown fields in a request body are ignored
 * (docs/decisions.md "Requests and responses"), so no request body may claim
 * `additionalProperties: false`.
 */
export const allowUnknownBodyFields = (spec: Json): Json => {
  const components = isJson(spec["components"]) ? spec["components"]["schemas"] : undefined
  const open = (schema: unknown) => {
    const ref = isJson(schema) ? schema["$ref"] : undefined
    const target = typeof ref === "string" && isJson(components) ? components[ref.split("/").pop() ?? ""] : schema
    if (isJson(target) && target["additionalProperties"] === false) delete target["additionalProperties"]
  }
  for (const operations of valuesOf(spec["paths"])) {
    for (const operation of valuesOf(operations)) {
      const body = isJson(operation) ? operation["requestBody"] : undefined
      for (const media of valuesOf(isJson(body) ? body["content"] : undefined)) {
        if (isJson(media)) open(media["schema"])
      }
    }
  }
  return spec
}

/**
 * A document transform: an `http` security scheme's name in lower case
 * (`bearer`, as the IANA registry and OpenAPI's examples spell it).
 * HttpApiSecurity.bearer writes `Bearer`; the name is case-insensitive in
 * HTTP, but tools compare it exactly: the reference page showed the public
 * API's key as Basic authentication and wrote its curl examples with
 * `Authorization: Basic`.
 */
export const lowerCaseHttpSchemes = (spec: Json): Json => {
  const schemes = isJson(spec["components"]) ? spec["components"]["securitySchemes"] : undefined
  for (const scheme of valuesOf(schemes)) {
    if (isJson(scheme) && scheme["type"] === "http" && typeof scheme["scheme"] === "string") {
      scheme["scheme"] = scheme["scheme"].toLowerCase()
    }
  }
  return spec
}

/**
 * A document transform: every answer of every operation carries
 * `X-Request-Id` (docs/operators.md "Request ids"), as HttpApi cannot
 * declare a header on every response.
 */
export const documentRequestId = (spec: Json): Json => {
  for (const operations of valuesOf(spec["paths"])) {
    for (const operation of valuesOf(operations)) {
      for (const response of valuesOf(isJson(operation) ? operation["responses"] : undefined)) {
        if (!isJson(response)) continue
        response["headers"] = {
          ...(isJson(response["headers"]) ? response["headers"] : {}),
          [RequestId.HEADER]: { description: RequestId.DESCRIPTION, required: true, schema: RequestId.SCHEMA }
        }
      }
    }
  }
  return spec
}
