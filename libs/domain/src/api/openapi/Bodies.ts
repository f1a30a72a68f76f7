/**
 * Request bodies as the service reads them: unknown fields are ignored
 * (docs/decisions.md "Requests and responses"), so no request body may claim
 * `additionalProperties: false`.
 */
import type { Adjustment } from "./Document.ts"
import { operations, resolveRef } from "./Document.ts"

/** Each request body's schema (the component a `$ref` names) without `additionalProperties: false`. */
export const allowUnknownBodyFields: Adjustment = (spec) => {
  for (const { operation } of operations(spec)) {
    for (const media of Object.values(operation.requestBody?.content ?? {})) {
      const target = resolveRef(spec, media.schema)
      if (target["additionalProperties"] === false) delete target["additionalProperties"]
    }
  }
  return spec
}
