/**
 * A list's response body as JSON text without a Schema pass
 * (docs/performance.md "The request path"): for a struct whose encoded
 * form is its type (every field a string, number, boolean or null, no
 * transformation), encoding is taking its fields in their declared order,
 * so the text is `JSON.stringify` of the body with each item's fields
 * picked, which the rows and `Pagination.listBody` already hold. The HttpApi
 * would walk the same values through the endpoint's success schema first.
 * test/domain/plain-json.test.ts holds it to that schema: for any body the
 * schema accepts, the same text as `JSON.stringify` of the schema's
 * encoding.
 */
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import type { CursorMeta, Meta } from "../Pagination.ts"

/** A field whose JSON is its value's as it is: a string, number, boolean, null, a literal, or a union of those. */
const isPlainField = (ast: SchemaAST.AST): boolean => {
  switch (ast._tag) {
    case "String":
    case "Number":
    case "Boolean":
    case "Null":
    case "Literal":
      return true
    case "Union":
      return ast.types.every(isPlainField)
    default:
      return false
  }
}

/**
 * The picker of one item of `item`: a plain object of its fields in declared order, whose
 * `JSON.stringify` is the item's JSON; throws at start for a struct it cannot write.
 */
const itemPicker = <F extends Schema.Struct.Fields>(
  item: Schema.Struct<F>
): (value: Schema.Struct<F>["Type"]) => Record<string, unknown> => {
  const keys = Object.keys(item.fields)
  if (SchemaAST.toEncoded(item.ast) !== item.ast || !keys.every((key) => isPlainField(item.fields[key]!.ast))) {
    throw new Error(`PlainJson: ${keys.join(", ")}: not a struct of plain fields`)
  }
  return (value) => {
    const picked: Record<string, unknown> = {}
    const source = value as Readonly<Record<string, unknown>>
    for (const key of keys) picked[key] = source[key]
    return picked
  }
}

/**
 * A public list's body (`Pagination.listBody`) as JSON: its items picked, then one
 * `JSON.stringify` of the body, so the text is built once, flat. Joining each item's text
 * built a string per item and a rope to flatten: 13.6 against 11.0 µs for a 20-row page in a
 * tight loop, and 7.7 kB more allocated a request in the ladder's handler rung
 * (docs/performance.md "The request path").
 */
export const listJson = <F extends Schema.Struct.Fields>(item: Schema.Struct<F>) => {
  const pick = itemPicker(item)
  return (body: { readonly data: ReadonlyArray<Schema.Struct<F>["Type"]>; readonly meta: Meta | CursorMeta }): string => {
    const data = new Array<Record<string, unknown>>(body.data.length)
    for (let i = 0; i < data.length; i++) data[i] = pick(body.data[i]!)
    const meta = body.meta
    return JSON.stringify({
      data,
      meta: "page" in meta
        ? { page: meta.page, per_page: meta.per_page, total: meta.total }
        : {
          per_page: meta.per_page,
          starting_after: meta.starting_after,
          has_more: meta.has_more,
          next_starting_after: meta.next_starting_after
        }
    })
  }
}
