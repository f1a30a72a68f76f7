/**
 * One tag per resource: a group of the contract is a tag, named by the group's
 * `OpenApi.Title` when two groups document one resource (the public
 * `enrollmentList`, a group of its own for its read scope, is the tag
 * `enrollments` of the write beside it). HttpApi lists a tag per group, so the
 * document's `tags` keeps the first of each name, with the first description
 * any of them has.
 */
import type { Adjustment } from "./Document.ts"

export const mergeTags: Adjustment = (spec) => {
  const byName = new Map<string, (typeof spec.tags)[number]>()
  for (const tag of spec.tags) {
    const first = byName.get(tag.name)
    if (first === undefined) byName.set(tag.name, tag)
    else if (first.description === undefined && tag.description !== undefined) first.description = tag.description
  }
  spec.tags = [...byName.values()]
  return spec
}
