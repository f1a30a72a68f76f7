/**
 * The `example` of each request body and success answer (what a reference
 * page shows and a mock server returns), taken from the `examples`
 * annotations of the contract's schemas, which HttpApi writes into the
 * document. A schema is annotated where it is declared (libs/domain: the
 * models, the request bodies, a list's `Meta`); an answer's envelope
 * (`{ data, meta }`, `{ success, data }`) is not a schema of its own, so its
 * example is assembled from its parts' examples. Nothing here invents a
 * value: a body whose schema has no example is an error at build time, and
 * test/api/openapi-document.test.ts checks every example against its schema.
 */
import type * as JsonSchema from "effect/JsonSchema"
import type * as Schema from "effect/Schema"
import type { Adjustment, MediaTypeWithExample, Spec } from "./Document.ts"
import { isJson, isJsonSchema, operations, propertiesOf, resolveRef } from "./Document.ts"

/** The first of a schema's own `examples` (of the component a `$ref` names). */
const ownExample = (spec: Spec, schema: JsonSchema.JsonSchema): Schema.Json | undefined => {
  const examples = resolveRef(spec, schema)["examples"]
  const first: unknown = Array.isArray(examples) ? examples[0] : undefined
  return isJson(first) ? first : undefined
}

/** The one value a schema allows (`success: true` is `enum: [true]`). */
const onlyValue = (schema: JsonSchema.JsonSchema): Schema.Json | undefined => {
  if ("const" in schema) return isJson(schema["const"]) ? schema["const"] : undefined
  const values = schema["enum"]
  const only: unknown = Array.isArray(values) && values.length === 1 ? values[0] : undefined
  return isJson(only) ? only : undefined
}

/**
 * An example of a schema of the document: its own (a `$ref`'s component's),
 * the one value it allows, or, for an anonymous object, array or union, one
 * assembled from its parts' examples; undefined when a part has none.
 */
export const exampleOf = (spec: Spec, schema: JsonSchema.JsonSchema): Schema.Json | undefined => {
  const own = ownExample(spec, schema) ?? onlyValue(schema)
  if (own !== undefined || typeof schema["$ref"] === "string") return own
  const branches = schema["anyOf"]
  if (Array.isArray(branches)) {
    for (const branch of branches.filter(isJsonSchema)) {
      const example = exampleOf(spec, branch)
      if (example !== undefined) return example
    }
    return undefined
  }
  const items = schema["items"]
  if (schema["type"] === "array" && isJsonSchema(items)) {
    const item = exampleOf(spec, items)
    return item === undefined ? undefined : [item]
  }
  if (schema["type"] === "object") {
    const example: Record<string, Schema.Json> = {}
    for (const [name, property] of propertiesOf(schema)) {
      const value = exampleOf(spec, property)
      if (value === undefined) return undefined
      example[name] = value
    }
    return example
  }
  return undefined
}

/**
 * Each operation's request body and success answer carry an `example`, from
 * their schemas' `examples` annotations.
 */
export const documentExamples: Adjustment = (spec) => {
  for (const { method, operation, path } of operations(spec)) {
    const bodies = [
      ["request body", operation.requestBody?.content] as const,
      ...Object.entries(operation.responses)
        .filter(([status]) => status.startsWith("2"))
        .map(([status, response]) => [`${status} answer`, response.content] as const)
    ]
    for (const [what, content] of bodies) {
      for (const media of Object.values<MediaTypeWithExample>(content ?? {})) {
        if (media.example !== undefined) continue
        const example = exampleOf(spec, media.schema)
        if (example === undefined) {
          throw new Error(`OpenAPI: ${method} ${path}: no example for its ${what}: annotate its schema with examples`)
        }
        media.example = example
      }
    }
  }
  return spec
}
