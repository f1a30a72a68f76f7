/**
 * A public list's 200 answer written from its rows (docs/performance.md
 * "The request path"): `PlainJson.listJson` of the body
 * `Pagination.listBody` builds, with the headers the HttpApi's own encoding
 * sends (`application/json`). test/domain/plain-json.test.ts holds every
 * public list endpoint's text to its success schema.
 */
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as Schema from "effect/Schema"
import { Pagination } from "@school/domain"
import { listJson } from "@school/domain/api/PlainJson"

/** The answer of a list of `item`s, built once per endpoint (it checks `item` is plain when built). */
export const listResponse = <F extends Schema.Struct.Fields>(item: Schema.Struct<F>) => {
  const json = listJson(item)
  return <A extends Schema.Struct<F>["Type"] & { readonly id: number }>(
    result: Pagination.ListResult<A>
  ): HttpServerResponse.HttpServerResponse =>
    HttpServerResponse.text(json(Pagination.listBody(result)), { contentType: "application/json" })
}
