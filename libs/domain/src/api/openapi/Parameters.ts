/**
 * Path and query parameters as what they stand for: an integer parameter is
 * documented as the integer (`type: integer` with its bounds), not as the
 * text it travels as, and every parameter keeps its description.
 */
import type * as JsonSchema from "effect/JsonSchema"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import type { HttpApiGroup } from "effect/http-api"
import type * as HttpApi from "effect/http-api/HttpApi"
import type { Adjustment, Parameter } from "./Document.ts"
import { endpointsOf, isJsonSchema, openApiPath, operationKey, operations, propertiesOf } from "./Document.ts"

/** A JSON Schema without its `null` alternative (an optional parameter's decoded side). */
const withoutNull = (schema: JsonSchema.JsonSchema): JsonSchema.JsonSchema => {
  const anyOf = schema["anyOf"]
  if (!Array.isArray(anyOf)) return schema
  const rest = anyOf.filter((branch) => !(isJsonSchema(branch) && branch["type"] === "null"))
  const { anyOf: _, ...others } = schema
  const [only] = rest
  return rest.length === 1 && isJsonSchema(only) ? { ...only, ...others } : { ...others, anyOf: rest }
}

/** What the contract says of one parameter: its schema when it is an integer, its description. */
interface Decoded {
  readonly schema?: JsonSchema.JsonSchema
  readonly description?: string
}

/** `in name` (`query page`) → what the contract says of it, for one operation. */
type DecodedParameters = ReadonlyMap<string, Decoded>

/** The decoded side of an endpoint's path and query parameters, read from its schemas. */
const decodedParameters = (params: Schema.Top | undefined, query: Schema.Top | undefined): DecodedParameters => {
  const byName = new Map<string, Decoded>()
  for (const [location, schema] of [["path", params], ["query", query]] as const) {
    if (schema === undefined) continue
    const type = Schema.toType(schema)
    const descriptions = new Map<string, string | undefined>(
      SchemaAST.isObjects(type.ast)
        ? type.ast.propertySignatures.map((p) => [String(p.name), SchemaAST.resolveDescription(p.type)])
        : []
    )
    for (const [name, property] of propertiesOf(Schema.toJsonSchemaDocument(type).schema)) {
      const plain = withoutNull(property)
      const own = plain["description"]
      const description = descriptions.get(name) ?? (typeof own === "string" ? own : undefined)
      byName.set(`${location} ${name}`, {
        ...(plain["type"] === "integer" ? { schema: plain } : {}),
        ...(description !== undefined ? { description } : {})
      })
    }
  }
  return byName
}

const documented = (parameter: Parameter, decoded: Decoded | undefined): Parameter => {
  if (decoded === undefined) return parameter
  const { description, schema } = decoded
  return {
    ...parameter,
    ...(description !== undefined ? { description } : {}),
    schema: schema ?? (isJsonSchema(parameter.schema) ? withoutNull(parameter.schema) : {})
  }
}

/**
 * Every integer path and query parameter is documented as the integer it
 * stands for, and every parameter keeps its description. HttpApi documents
 * a parameter by its text without the text's checks, so `page`, `per_page`
 * and `{id}` read as any string, and a generator types them `string`
 * (`DecimalIntFromString` in libs/domain/src/Ids.ts is the rule that makes
 * the text an integer: a query `page=1.5` is still validation_failed). The
 * decoded side of each parameter, read from the contract, says which ones
 * are integers.
 */
export const documentParameters = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
): Adjustment =>
(spec) => {
  const byOperation = new Map<string, DecodedParameters>(
    endpointsOf(api).map(({ endpoint }) => [
      operationKey(endpoint.method, openApiPath(endpoint.path)),
      decodedParameters(endpoint.params, endpoint.query)
    ])
  )
  for (const { method, operation, path } of operations(spec)) {
    const byName = byOperation.get(operationKey(method, path))
    if (byName === undefined) continue
    operation.parameters = operation.parameters.map((parameter) =>
      documented(parameter, byName.get(`${parameter.in} ${parameter.name}`))
    )
  }
  return spec
}
