/**
 * The error answers the documents spell out beyond what HttpApi derives from
 * the contract's error rows: the 401's reasons as an enum, the 500 and the
 * 405 that are written outside HttpApi, and no status on an operation that
 * cannot answer it.
 */
import * as JsonSchema from "effect/JsonSchema"
import * as Schema from "effect/Schema"
import type { HttpApiGroup } from "effect/http-api"
import type * as HttpApi from "effect/http-api/HttpApi"
import type * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as Errors from "../../Errors.ts"
import * as RequestId from "../../RequestId.ts"
import type { Adjustment, ComponentsWithResponses } from "./Document.ts"
import { endpointsOf, isJsonSchema, operationOf, operations } from "./Document.ts"

/**
 * `status` taken off the operations that cannot answer it. HttpApi writes a
 * middleware's errors on every endpoint behind it, though a middleware may
 * fail only for some requests (the back office's 403 FORBIDDEN:
 * BackOfficeApi.ts says which operations never give it); `unreachable` picks
 * the endpoints, read from the contract.
 */
export const documentUnreachableStatus = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  status: number,
  unreachable: (endpoint: HttpApiEndpoint.Top) => boolean
): Adjustment =>
(spec) => {
  for (const { endpoint } of endpointsOf(api)) {
    if (!unreachable(endpoint)) continue
    const { responses } = operationOf(spec, endpoint)
    if (!(status in responses)) throw new Error(`OpenAPI: ${endpoint.method} ${endpoint.path} has no ${status}`)
    delete responses[status]
  }
  return spec
}

/**
 * The reason of a 401 (docs/integrators.md "Authentication"), which the error
 * table writes as a free `fields` map like every row's, is one of
 * `Errors.UnauthorizedReason`, and a 401 always carries it.
 */
export const documentUnauthorizedReasons: Adjustment = (spec) => {
  const unauthorized = spec.components.schemas["UnauthorizedEncoded"]
  const envelope = unauthorized?.["properties"]
  const error = isJsonSchema(envelope) ? envelope["error"] : undefined
  const properties = isJsonSchema(error) ? error["properties"] : undefined
  if (!isJsonSchema(error) || !isJsonSchema(properties)) {
    throw new Error("OpenAPI: UnauthorizedEncoded is not the public envelope")
  }
  properties["fields"] = {
    type: "object",
    properties: {
      reason: {
        type: "string",
        enum: [...Errors.UnauthorizedReason.literals],
        description: "Why the key was refused"
      }
    },
    required: ["reason"]
  }
  error["required"] = ["code", "message", "fields"]
  return spec
}

/** An error row of the contract: its envelope is the schema of its answers' body. */
export interface ErrorRow {
  readonly envelope: Schema.Top
}

/** The error rows every API has for answers outside its operations. */
export interface UnexpectedErrorRows {
  readonly internalError: ErrorRow
  readonly methodNotAllowed: ErrorRow
}

/**
 * Registers an error row's envelope among the document's schemas, as HttpApi
 * registers the contract's (its definitions under `components.schemas`), and
 * returns the reference to it.
 */
const registerEnvelope = (schemas: JsonSchema.Definitions, row: ErrorRow): JsonSchema.JsonSchema => {
  const document = Schema.toJsonSchemaDocument(row.envelope, { onExcessProperty: "error" })
  const { definitions, schemas: [root] } = JsonSchema.toMultiDocumentOpenApi3_1({
    dialect: document.dialect,
    schemas: [document.schema],
    definitions: document.definitions
  })
  for (const [name, definition] of Object.entries(definitions)) {
    if (!(name in schemas)) schemas[name] = definition
  }
  if (typeof root["$ref"] === "string") return root
  throw new Error("OpenAPI: an error envelope without an identifier")
}

/**
 * What any operation can answer besides what the contract declares
 * (docs/decisions.md "Requests and responses"): 500 internal_error on every
 * operation (an unexpected failure, with a generic message), and the 405
 * method_not_allowed with its `Allow` header, a response of no operation (it
 * answers a method the path does not have), kept as
 * `components.responses.MethodNotAllowed`. Both are written outside HttpApi
 * (apps/api/src/ErrorEnvelope.ts), so the contract cannot declare them.
 */
export const documentUnexpectedErrors = (rows: UnexpectedErrorRows): Adjustment => (spec) => {
  const components: ComponentsWithResponses = spec.components
  const internalError = registerEnvelope(components.schemas, rows.internalError)
  const methodNotAllowed = registerEnvelope(components.schemas, rows.methodNotAllowed)
  components.responses = {
    ...components.responses,
    MethodNotAllowed: {
      description:
        "The path exists but not with this method. Answers any method a path does not list, on every path of this document.",
      headers: {
        allow: { description: "The methods the path has, e.g. `GET, POST`", required: true, schema: { type: "string" } },
        [RequestId.HEADER]: { description: RequestId.DESCRIPTION, required: true, schema: RequestId.SCHEMA }
      },
      content: { "application/json": { schema: methodNotAllowed } }
    }
  }
  for (const { operation } of operations(spec)) {
    operation.responses[500] = {
      description: "An unexpected failure: a generic message, never a stack or SQL text. Quote X-Request-Id.",
      content: { "application/json": { schema: internalError } }
    }
  }
  return spec
}

/**
 * The `fields` of the errors that name request fields (`validation_failed`,
 * `missing_idempotency_key`; the back office's `VALIDATION_FAILED`) as they
 * are sent: a list of messages per field, parameter or header
 * (docs/integrators.md "Responses and errors"; docs/back-office.md "Answers
 * and errors"). The error table types every row's `fields` alike, a string or
 * a list (a 401's `reason` is a string); these rows always send lists.
 * `components` names the envelopes by HttpApi's names.
 */
export const documentListFields = (components: ReadonlyArray<string>): Adjustment => (spec) => {
  for (const name of components) {
    const envelope = spec.components.schemas[name]
    const properties = envelope?.["properties"]
    const error = isJsonSchema(properties) ? properties["error"] : undefined
    const body = isJsonSchema(error) ? error["properties"] : properties
    const fields = isJsonSchema(body) ? body["fields"] : undefined
    if (!isJsonSchema(fields)) throw new Error(`OpenAPI: ${name} is not an envelope with fields`)
    fields["additionalProperties"] = { type: "array", items: { type: "string" } }
  }
  return spec
}
