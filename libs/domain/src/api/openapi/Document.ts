/**
 * The OpenAPI 3.1 document as the adjustments see it: Effect's own model of
 * what HttpApi builds (`OpenApi.OpenAPISpec` and its parts), the few fields
 * the adjustments add that the model leaves out, each as a narrow interface,
 * and the one place where HttpApi hands a transform its document.
 *
 * The adjustments live beside this file, one concern each: Headers.ts
 * (Idempotency-Key, Idempotent-Replayed, X-Request-Id), Parameters.ts,
 * Bodies.ts, Security.ts (the bearer scheme, the back office's session),
 * Errors.ts (the 401's reasons, 500 and 405, unreachable statuses, validation
 * fields as lists), Examples.ts, Webhooks.ts, Servers.ts, Info.ts (contact,
 * license), Tags.ts (one tag per resource), Limits.ts (the body limits as
 * keywords) and Names.ts (no `…Encoded` schema name). Each contract composes its own
 * with `flow`, in the order they apply, in one place (PublicApi.ts,
 * BackOfficeApi.ts). An adjustment may change the document it is given in
 * place (HttpApi hands the transform a document it has just built) and
 * returns it.
 */
import type * as Context from "effect/Context"
import type * as JsonSchema from "effect/JsonSchema"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { HttpApiGroup } from "effect/http-api"
import * as HttpApi from "effect/http-api/HttpApi"
import type * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import type * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import type * as OpenApi from "effect/http-api/OpenApi"

export type Spec = OpenApi.OpenAPISpec
export type Operation = OpenApi.OpenAPISpecOperation
export type Parameter = OpenApi.OpenAPISpecParameter
export type SpecResponse = OpenApi.OpenApiSpecResponse
export type Header = OpenApi.OpenAPISpecHeader
export type MethodName = OpenApi.OpenAPISpecMethodName

/** One step of a document's adjustments; a contract composes its steps with `flow`. */
export type Adjustment = (spec: Spec) => Spec

/** One step of an operation's adjustments (an endpoint's `OpenApi.Transform`). */
export type OperationAdjustment = (operation: Operation) => Operation

/** The function `OpenApi.Transform` holds: HttpApi types the document it hands over as a plain record. */
type Transform = Context.Service.Shape<typeof OpenApi.Transform>
type Untyped = Parameters<Transform>[0]

const isSpec = (u: Untyped): u is Spec => u["openapi"] === "3.1.0" && Predicate.isObject(u["paths"])
const isOperation = (u: Untyped): u is Operation =>
  typeof u["operationId"] === "string" && Array.isArray(u["parameters"]) && Predicate.isObject(u["responses"])

/**
 * A document's adjustments as its `OpenApi.annotations({ transform })`: what
 * HttpApi passes is the `OpenAPISpec` it built (OpenApi.fromApi), checked
 * here once, so every step is typed against Effect's model.
 */
export const adjustDocument = (adjust: Adjustment): Transform => (spec) => {
  if (!isSpec(spec)) throw new Error("OpenAPI: the transform was not given an OpenAPI 3.1 document")
  return adjust(spec)
}

/** An operation's adjustments as an endpoint's `OpenApi.Transform`, checked like `adjustDocument`. */
export const adjustOperation = (adjust: OperationAdjustment): Transform => (operation) => {
  if (!isOperation(operation)) throw new Error("OpenAPI: the transform was not given an operation")
  return adjust(operation)
}

/** A JSON Schema object (not a boolean schema, not an array). */
export const isJsonSchema = (u: unknown): u is JsonSchema.JsonSchema => Predicate.isObject(u) && !Array.isArray(u)

/** `properties` of a JSON Schema object, each a JSON Schema object. */
export const propertiesOf = (
  schema: JsonSchema.JsonSchema
): ReadonlyArray<readonly [name: string, schema: JsonSchema.JsonSchema]> => {
  const properties = schema["properties"]
  if (!isJsonSchema(properties)) return []
  return Object.entries(properties).flatMap(([name, property]) => isJsonSchema(property) ? [[name, property] as const] : [])
}

const COMPONENT_REF = "#/components/schemas/"

/** The component a schema refers to (`$ref: #/components/schemas/X`), or the schema itself. */
export const resolveRef = (spec: Spec, schema: JsonSchema.JsonSchema): JsonSchema.JsonSchema => {
  const ref = schema["$ref"]
  return typeof ref === "string" && ref.startsWith(COMPONENT_REF)
    ? spec.components.schemas[ref.slice(COMPONENT_REF.length)] ?? schema
    : schema
}

/** A reference to a schema of the document's components. */
export const componentRef = (name: string): JsonSchema.JsonSchema => ({ $ref: `${COMPONENT_REF}${name}` })

const METHOD_NAMES: ReadonlyArray<MethodName> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

const methodName = (name: string): MethodName | undefined =>
  METHOD_NAMES.find((method) => method === name.toLowerCase())

/** An operation of the document with where it is. */
export interface Located {
  readonly path: string
  readonly method: MethodName
  readonly operation: Operation
}

/** Every operation of the document, in the document's order. */
export const operations = (spec: Spec): ReadonlyArray<Located> =>
  Object.entries(spec.paths).flatMap(([path, item]) =>
    Object.keys(item).flatMap((key) => {
      const method = methodName(key)
      const operation = method === undefined ? undefined : item[method]
      return method === undefined || operation === undefined ? [] : [{ path, method, operation }]
    })
  )

/** The path of an endpoint as OpenAPI writes it: `/students/:id` is `/students/{id}`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")

/** The key of an operation: `get /api/public/v1/students/{id}`. */
export const operationKey = (method: string, path: string): string => `${method.toLowerCase()} ${path}`

/** An endpoint of a contract with the middleware in front of it. */
export interface Endpoint {
  readonly endpoint: HttpApiEndpoint.Top
  readonly middleware: ReadonlySet<HttpApiMiddleware.AnyService>
}

/** Every endpoint of a contract, read with `HttpApi.reflect`. */
export const endpointsOf = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
): ReadonlyArray<Endpoint> => {
  const endpoints: Array<Endpoint> = []
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, middleware }) => endpoints.push({ endpoint, middleware })
  })
  return endpoints
}

/** The operation the document has for an endpoint of the contract; an error when it has none. */
export const operationOf = (spec: Spec, endpoint: HttpApiEndpoint.Top): Operation => {
  const method = methodName(endpoint.method)
  const operation = method === undefined ? undefined : spec.paths[openApiPath(endpoint.path)]?.[method]
  if (operation === undefined) throw new Error(`OpenAPI: ${endpoint.method} ${endpoint.path} is not documented`)
  return operation
}

/**
 * A media type with its `example` (what a reference page shows and a mock
 * server returns), which Effect's model of a media type leaves out.
 */
export interface MediaTypeWithExample extends OpenApi.OpenApiSpecMediaType {
  example?: Schema.Json
}

/** A JSON value, as the `examples` of a JSON Schema hold them. */
export const isJson: (u: unknown) => u is Schema.Json = Schema.is(Schema.Json)

/**
 * Reusable answers (`components.responses`), which Effect's model of the
 * components leaves out: an answer of no operation, such as the 405.
 */
export interface ComponentsWithResponses extends OpenApi.OpenAPIComponents {
  responses?: Record<string, SpecResponse>
}
