/**
 * The bodies written without a Schema pass (libs/domain/src/api/PlainJson.ts,
 * apps/api/src/http/ListResponse.ts) are held to each endpoint's own success
 * schema: for every public list endpoint, and any body that schema accepts
 * (its items and either meta, drawn from the schemas themselves), `listJson`
 * writes the same text as `JSON.stringify` of the schema's encoding, which
 * is what the HttpApi would send; so does `dataJson` for the student card
 * (GET /students/{id}), its groups included.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Money from "@school/domain/Money"
import * as Models from "@school/domain/Models"
import { dataJson, listJson } from "@school/domain/api/PlainJson"
import { BASE_PATH, PublicApi } from "@school/domain/api/PublicApi"
import { ListMeta } from "@school/domain/Pagination"

interface ListEndpoint {
  readonly name: string
  readonly success: Schema.Codec<unknown, unknown>
  readonly item: Schema.Struct<Schema.Struct.Fields>
}

/** An object or a function (a schema may be either). */
const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  (typeof value === "object" || typeof value === "function") && value !== null

/** Every endpoint of the public API whose success is `{ data: [item], meta }`. */
const listEndpoints = (): ReadonlyArray<ListEndpoint> => {
  const found: Array<ListEndpoint> = []
  for (const group of Object.values(PublicApi.groups)) {
    for (const endpoint of Object.values(group.endpoints)) {
      for (const success of endpoint.success) {
        // The HttpApi keeps the declared schema inside its own wrapper (`schema`).
        let declared: unknown = success
        while (isRecord(declared) && declared["fields"] === undefined && declared["schema"] !== undefined) {
          declared = declared["schema"]
        }
        const fields = isRecord(declared) ? declared["fields"] : undefined
        if (!isRecord(fields) || fields["meta"] !== ListMeta || !isRecord(fields["data"])) continue
        const item = fields["data"]["value"]
        if (!isRecord(item) || !isRecord(item["fields"])) continue
        found.push({
          name: `${endpoint.method} ${endpoint.path.slice(BASE_PATH.length)}`,
          success: success as unknown as Schema.Codec<unknown, unknown>,
          item: item as unknown as Schema.Struct<Schema.Struct.Fields>
        })
      }
    }
  }
  return found
}

describe("lists written without a Schema pass", () => {
  const endpoints = listEndpoints()

  it("every public list is found, the ones ListResponse.ts answers among them", () => {
    const names = endpoints.map((endpoint) => endpoint.name)
    for (
      const name of [
        "GET /students",
        "GET /payments",
        "GET /groups",
        "GET /lessons",
        "GET /filials",
        "GET /subjects",
        "GET /programs",
        "GET /levels",
        "GET /enrollments"
      ]
    ) assert.include(names, name)
  })

  for (const { item, name, success } of endpoints) {
    const encode = Schema.encodeUnknownSync(success)
    const direct = listJson(item)
    it.prop(
      `${name}: the same text as the endpoint's schema encodes, for any page or cursor page`,
      [Schema.Struct({ data: Schema.Array(item), meta: ListMeta })],
      ([body]) => {
        assert.strictEqual(direct(body), JSON.stringify(encode(body)))
      },
      { arbitrary: { runs: 200 } }
    )
  }

  /** A student's fields as a row holds them, without `active_groups` (null in lists, the groups on the card). */
  const student = {
    id: 1,
    fio: "A",
    phone: "",
    email: "",
    balance_kopecks: 5,
    filial_id: 2,
    created_at: "2026-11-22T09:15:03.123456Z",
    updated_at: null
  }

  it("keys the rows carry beyond the schema's are left out, as the schema's encoding leaves them", () => {
    const students = endpoints.find((endpoint) => endpoint.name === "GET /students")
    if (students === undefined) return assert.fail("GET /students not found")
    const item = { ...student, active_groups: null }
    const body = { data: [{ ...item, school_id: 9 }], meta: { page: 1, per_page: 20, total: 1 } }
    const direct = listJson(Models.StudentListItem)
    assert.strictEqual(direct(body), JSON.stringify(Schema.encodeUnknownSync(students.success)(body)))
    assert.notInclude(direct(body), "school_id")
  })

  const card = PublicApi.groups["students"].endpoints["get"]
  const cardSuccess = [...card.success][0] as unknown as Schema.Codec<unknown, unknown>
  const encodeCard = Schema.encodeUnknownSync(cardSuccess)
  const cardJson = dataJson(Models.StudentCard)

  it.prop(
    "GET /students/{id}: the same text as the endpoint's schema encodes, for any card and its groups",
    [Schema.Struct({ data: Models.StudentCard })],
    ([body]) => {
      assert.strictEqual(cardJson(body), JSON.stringify(encodeCard(body)))
    },
    { arbitrary: { runs: 200 } }
  )

  it("a card's groups keep their declared keys only, in order", () => {
    const body = {
      data: {
        ...student,
        // Keys out of the declared order, and one more.
        active_groups: [{
          enrolled_at: "2026-11-22T09:15:03.123456Z",
          enrollment_id: 9,
          filial_id: 2,
          group_name: "B1",
          group_id: 3,
          school_id: 9
        }]
      }
    }
    const text = cardJson(body)
    assert.strictEqual(text, JSON.stringify(encodeCard(body)))
    assert.notInclude(text, "school_id")
    assert.include(text, `"active_groups":[{"group_id":3,"group_name":"B1","filial_id":2,"enrollment_id":9,"enrolled_at"`)
  })

  it("a struct it cannot write plainly is refused when built", () => {
    // A transformation (bigint → number), and a Date: neither is its own JSON.
    assert.throws(() => listJson(Schema.Struct({ n: Money.KopecksFromBigInt })), /not a struct of plain fields/)
    assert.throws(() => dataJson(Schema.Struct({ when: Schema.Date })), /not a struct of plain fields/)
  })
})
