/**
 * The lists written without a Schema pass (libs/domain/src/api/PlainJson.ts)
 * are held to the endpoint's own success schema: for any body that schema
 * accepts (its items and either meta, drawn from the schemas themselves),
 * `listJson` writes the same text as `JSON.stringify` of the schema's
 * encoding, which is what the HttpApi would send.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Models from "@school/domain/Models"
import { listJson } from "@school/domain/api/PlainJson"
import { PublicApi } from "@school/domain/api/PublicApi"
import { CursorMeta, Meta } from "@school/domain/Pagination"

/** The success schema GET /students declares, as the HttpApi encodes with it. */
const studentsSuccess = (): Schema.Codec<unknown, unknown> => {
  const [success] = [...PublicApi.groups.students.endpoints.list.success]
  if (success === undefined) throw new Error("GET /students declares no success schema")
  return success as unknown as Schema.Codec<unknown, unknown>
}

const Body = Schema.Struct({
  data: Schema.Array(Models.StudentListItem),
  meta: Schema.Union([Meta, CursorMeta])
})

describe("lists written without a Schema pass", () => {
  const encode = Schema.encodeUnknownSync(studentsSuccess())
  const direct = listJson(Models.StudentListItem)

  it.prop("GET /students: the same text as the endpoint's schema encodes, for any page or cursor page", [Body], ([body]) => {
    assert.strictEqual(direct(body), JSON.stringify(encode(body)))
  }, { arbitrary: { runs: 300 } })

  it("keys the rows carry beyond the schema's are left out, as the schema's encoding leaves them", () => {
    const item = {
      id: 1,
      fio: "A",
      phone: "",
      email: "",
      balance_kopecks: 5,
      filial_id: 2,
      created_at: "2026-11-22T09:15:03.123456Z",
      updated_at: null,
      active_groups: null
    }
    const body = { data: [{ ...item, school_id: 9 }], meta: { page: 1, per_page: 20, total: 1 } }
    assert.strictEqual(direct(body), JSON.stringify(encode(body)))
    assert.notInclude(direct(body), "school_id")
  })
})
