/**
 * A public read's 200 answer written from its rows (docs/performance.md
 * "The request path"): a list's, `PlainJson.listJson` of the body
 * `Pagination.listBody` builds; one resource's, `PlainJson.dataJson` of
 * `{ data }`. Both with the headers the HttpApi's own encoding sends
 * (`application/json`). test/domain/plain-json.test.ts holds every public
 * list endpoint's text, and the student card's, to its success schema.
 */
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as Schema from "effect/Schema"
import { Pagination } from "@school/domain"
import { dataJson, listJson } from "@school/domain/api/PlainJson"

const json = (text: string) => HttpServerResponse.text(text, { contentType: "application/json" })

/** The answer of a list of `item`s, built once per endpoint (it checks `item` is plain when built). */
export const listResponse = <F extends Schema.Struct.Fields>(item: Schema.Struct<F>) => {
  const write = listJson(item)
  return <A extends Schema.Struct<F>["Type"] & { readonly id: number }>(
    result: Pagination.ListResult<A>
  ): HttpServerResponse.HttpServerResponse => json(write(Pagination.listBody(result)))
}

/** The answer `{ data: <value> }` of one `struct`, built once per endpoint (it checks `struct` is plain when built). */
export const dataResponse = <F extends Schema.Struct.Fields>(struct: Schema.Struct<F>) => {
  const write = dataJson(struct)
  return (value: Schema.Struct<F>["Type"]): HttpServerResponse.HttpServerResponse => json(write({ data: value }))
}
