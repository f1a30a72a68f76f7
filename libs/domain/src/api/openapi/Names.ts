/**
 * The names of the documents' schemas (`components.schemas`) as a code generator shows them:
 * HttpApi names the wire form of an error class after the class with `Encoded` appended
 * (`NotFoundEncoded`), an implementation word in every generated client. Each such component is
 * named for what it is, the error's envelope: `NotFoundError` (`InternalErrorEncoded` is
 * `InternalError`), and every `$ref` follows. Runs last, after the adjustments that look
 * components up by HttpApi's names.
 */
import * as Predicate from "effect/Predicate"
import type { Adjustment } from "./Document.ts"

const SUFFIX = "Encoded"
const COMPONENT_REF = "#/components/schemas/"

/** The name a component gets: `NotFoundEncoded` is `NotFoundError`, `InternalErrorEncoded` is `InternalError`. */
export const componentName = (name: string): string => {
  if (!name.endsWith(SUFFIX)) return name
  const base = name.slice(0, -SUFFIX.length)
  return base.endsWith("Error") ? base : `${base}Error`
}

/** Every `$ref` to a renamed component, anywhere under `node`, follows it. */
const followRefs = (node: unknown, renamed: ReadonlyMap<string, string>): void => {
  if (Array.isArray(node)) {
    for (const item of node) followRefs(item, renamed)
    return
  }
  if (!Predicate.isObject(node)) return
  for (const [key, value] of Object.entries(node)) {
    if (key === "$ref" && typeof value === "string" && value.startsWith(COMPONENT_REF)) {
      const target = renamed.get(value.slice(COMPONENT_REF.length))
      if (target !== undefined) Object.assign(node, { $ref: `${COMPONENT_REF}${target}` })
    } else {
      followRefs(value, renamed)
    }
  }
}

/** No component name ends in `Encoded`; the order of the components stays. */
export const nameComponents: Adjustment = (spec) => {
  const renamed = new Map<string, string>()
  const schemas: typeof spec.components.schemas = {}
  for (const [name, schema] of Object.entries(spec.components.schemas)) {
    const target = componentName(name)
    if (target !== name) {
      if (target in spec.components.schemas) throw new Error(`OpenAPI: ${name} would be named ${target}, a name taken`)
      renamed.set(name, target)
    }
    schemas[target] = schema
  }
  spec.components.schemas = schemas
  followRefs(spec, renamed)
  return spec
}
