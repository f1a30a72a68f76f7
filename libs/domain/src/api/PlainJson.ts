/**
 * A response body as JSON text without a Schema pass (docs/performance.md
 * "The request path"): for a struct whose encoded form is its type (every
 * field a string, number, boolean or null, or an array of such structs; no
 * transformation), encoding is taking its fields in their declared order,
 * so the text is `JSON.stringify` of the body with each value's fields
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

/** A value's JSON form as its schema encodes it, built from the value: what `JSON.stringify` then writes. */
type Picker = (value: unknown) => unknown

const asItIs: Picker = (value) => value

/**
 * The picker of `ast`'s values, undefined when its JSON is not the value's own: a plain field as it
 * is; a struct's declared keys in their order, each picked; an array of those, item by item.
 */
const pickerOf = (ast: SchemaAST.AST): Picker | undefined => {
  if (isPlainField(ast)) return asItIs
  if (ast._tag === "Objects") {
    if (ast.indexSignatures.length > 0) return undefined
    const keys: Array<string> = []
    const pickers: Array<Picker> = []
    for (const property of ast.propertySignatures) {
      const picker = pickerOf(property.type)
      if (typeof property.name !== "string" || picker === undefined) return undefined
      keys.push(property.name)
      pickers.push(picker)
    }
    return (value) => {
      const picked: Record<string, unknown> = {}
      const source = value as Readonly<Record<string, unknown>>
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!
        const picker = pickers[i]!
        picked[key] = picker === asItIs ? source[key] : picker(source[key])
      }
      return picked
    }
  }
  if (ast._tag === "Arrays" && ast.elements.length === 0 && ast.rest.length === 1) {
    const item = pickerOf(ast.rest[0]!)
    if (item === undefined) return undefined
    return item === asItIs ? asItIs : (value) => (value as ReadonlyArray<unknown>).map(item)
  }
  return undefined
}

/**
 * The picker of one value of `struct`: a plain object of its fields in declared order (an array
 * of plain structs picked item by item), whose `JSON.stringify` is its encoding's; throws at start
 * for a struct it cannot write.
 */
const structPicker = <F extends Schema.Struct.Fields>(
  struct: Schema.Struct<F>
): (value: Schema.Struct<F>["Type"]) => unknown => {
  const picker = SchemaAST.toEncoded(struct.ast) === struct.ast ? pickerOf(struct.ast) : undefined
  if (picker === undefined) {
    throw new Error(`PlainJson: ${Object.keys(struct.fields).join(", ")}: not a struct of plain fields`)
  }
  return picker
}

/**
 * A single resource's body, `{ data: <value of struct> }`, as JSON: what the endpoint's success
 * schema `Struct({ data: struct })` would encode (GET /students/{id}: the card with its groups).
 */
export const dataJson = <F extends Schema.Struct.Fields>(struct: Schema.Struct<F>) => {
  const pick = structPicker(struct)
  return (body: { readonly data: Schema.Struct<F>["Type"] }): string => JSON.stringify({ data: pick(body.data) })
}

/**
 * A public list's body (`Pagination.listBody`) as JSON: its items picked, then one
 * `JSON.stringify` of the body, so the text is built once, flat. Joining each item's text
 * built a string per item and a rope to flatten: 13.6 against 11.0 µs for a 20-row page in a
 * tight loop, and 7.7 kB more allocated a request in the ladder's handler rung
 * (docs/performance.md "The request path").
 */
export const listJson = <F extends Schema.Struct.Fields>(item: Schema.Struct<F>) => {
  const pick = structPicker(item)
  return (body: { readonly data: ReadonlyArray<Schema.Struct<F>["Type"]>; readonly meta: Meta | CursorMeta }): string => {
    const data = new Array<unknown>(body.data.length)
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
