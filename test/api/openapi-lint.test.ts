/**
 * Both OpenAPI documents pass both linters (`npm run lint:openapi`: `@redocly/cli lint` and
 * `@stoplight/spectral-cli` with `spectral:oas`), so `npm test` fails on a lint error or warning
 * as CI does; and they describe themselves: a summary and a description on every operation, one
 * tag per resource, no `…Encoded` schema name, the documented limits as keywords, validation
 * `fields` as lists, `info.contact` and `info.license`, and the reference page preselecting a
 * security scheme. No server and no database: the documents are generated from the contracts,
 * as the server sends them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Predicate } from "effect"
import * as OpenApi from "effect/http-api/OpenApi"
import { scalarConfig } from "@school/api/http/Reference"
import { lintOpenApi } from "@school/cli/lintOpenApi"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { PublicApi } from "@school/domain/api/PublicApi"

type Json = Record<string, unknown>
const isJson = (u: unknown): u is Json => Predicate.isObject(u) && !Array.isArray(u)
const at = (u: unknown, ...keys: ReadonlyArray<string>): unknown =>
  keys.reduce<unknown>((value, key) => (isJson(value) ? value[key] : undefined), u)
const entriesOf = (u: unknown): ReadonlyArray<[string, unknown]> => (isJson(u) ? Object.entries(u) : [])
const listOf = (u: unknown): ReadonlyArray<unknown> => (Array.isArray(u) ? u : [])

const publicDocument: unknown = JSON.parse(JSON.stringify(OpenApi.fromApi(PublicApi)))
const backOfficeDocument: unknown = JSON.parse(JSON.stringify(OpenApi.fromApi(BackOfficeApi)))
const documents = [["public", publicDocument], ["back office", backOfficeDocument]] as const

const operationsOf = (document: unknown) =>
  entriesOf(at(document, "paths")).flatMap(([path, methods]) =>
    entriesOf(methods).map(([method, operation]) => ({ key: `${method} ${path}`, operation }))
  )

/** A request body property's string schema (the string branch of an optional field). */
const bodyField = (document: unknown, operationId: string, field: string): unknown => {
  const operation = operationsOf(document).find(({ operation }) => at(operation, "operationId") === operationId)?.operation
  const schema = at(operation, "requestBody", "content", "application/json", "schema")
  const ref = at(schema, "$ref")
  const body = typeof ref === "string" ? at(document, "components", "schemas", ref.split("/").pop() ?? "") : schema
  const property = at(body, "properties", field)
  const branches = at(property, "anyOf")
  return Array.isArray(branches) ? branches.find((branch) => at(branch, "type") === "string") : property
}

describe("npm run lint:openapi", () => {
  it("finds no error and no warning in either document", { timeout: 60_000 }, () => {
    for (const { command, output, status } of lintOpenApi()) {
      assert.strictEqual(status, 0, `${command}\n${output}`)
    }
  })
})

describe("the OpenAPI documents describe themselves", () => {
  it("every operation has a summary and a description; every tag a description, one per resource", () => {
    for (const [name, document] of documents) {
      const operations = operationsOf(document)
      assert.isAbove(operations.length, 10, name)
      for (const { key, operation } of operations) {
        assert.isNotEmpty(String(at(operation, "summary") ?? ""), `${name}: ${key} has no summary`)
        assert.isAbove(String(at(operation, "description") ?? "").length, 20, `${name}: ${key} has no description`)
      }
      const tags = listOf(at(document, "tags")).map((tag) => String(at(tag, "name")))
      assert.deepStrictEqual([...new Set(tags)], tags, `${name}: a tag twice`)
      const used = new Set(operations.flatMap(({ operation }) => listOf(at(operation, "tags")).map(String)))
      assert.deepStrictEqual([...used].sort(), [...tags].sort(), `${name}: tags listed and used`)
    }
    const enrollments = operationsOf(publicDocument).filter(({ key }) => key.endsWith("/enrollments") || key.endsWith("/groups") && key.includes("students"))
    assert.deepStrictEqual(enrollments.map(({ operation }) => at(operation, "tags")), [["enrollments"], ["enrollments"]])
  })

  it("no schema name ends in Encoded; validation fields are lists of messages", () => {
    for (const [name, document] of documents) {
      const schemas = entriesOf(at(document, "components", "schemas")).map(([schema]) => schema)
      assert.deepStrictEqual(schemas.filter((schema) => schema.endsWith("Encoded")), [], name)
      assert.notInclude(JSON.stringify(document), "Encoded\"", name)
    }
    const list = { type: "array", items: { type: "string" } }
    for (const [document, schema, path] of [
      [publicDocument, "ValidationFailedError", ["properties", "error", "properties", "fields"]],
      [publicDocument, "MissingIdempotencyKeyError", ["properties", "error", "properties", "fields"]],
      [backOfficeDocument, "BackOfficeValidationFailedError", ["properties", "fields"]]
    ] as const) {
      assert.deepStrictEqual(at(at(document, "components", "schemas", schema), ...path, "additionalProperties"), list, schema)
    }
  })

  it("the documented limits are keywords", () => {
    for (const [document, operation] of [[publicDocument, "leads.create"], [backOfficeDocument, "leads.create"]] as const) {
      assert.strictEqual(at(bodyField(document, operation, "name"), "maxLength"), 255)
      assert.strictEqual(at(bodyField(document, operation, "comment"), "maxLength"), 4000)
      assert.strictEqual(at(bodyField(document, operation, "source"), "maxLength"), 64)
      const pattern = new RegExp(String(at(bodyField(document, operation, "phone"), "pattern")))
      for (const accepted of ["+7 (999) 123-45-67", "12345", " 12345678901234567890 "]) assert.isTrue(pattern.test(accepted), accepted)
      for (const refused of ["1234", "123456789012345678901", "+7 999 12a", ""]) assert.isFalse(pattern.test(refused), refused)
    }
    assert.strictEqual(at(bodyField(publicDocument, "demoLessons.create", "comment"), "maxLength"), 4000)
    assert.deepStrictEqual(
      [at(bodyField(backOfficeDocument, "apiKeys.create", "name"), "minLength"), at(bodyField(backOfficeDocument, "apiKeys.create", "name"), "maxLength")],
      [1, 255]
    )
    assert.strictEqual(at(bodyField(backOfficeDocument, "employees.create", "password"), "minLength"), 10)
  })

  it("info has a contact and a license; the reference pages preselect a security scheme", () => {
    for (const [name, document] of documents) {
      assert.isString(at(document, "info", "contact", "name"), name)
      assert.deepStrictEqual(at(document, "info", "license"), { name: "Proprietary", identifier: "LicenseRef-Proprietary" }, name)
    }
    assert.deepStrictEqual(scalarConfig(PublicApi).authentication, { preferredSecurityScheme: "bearer" })
    assert.deepStrictEqual(scalarConfig(BackOfficeApi).authentication, { preferredSecurityScheme: "sessionToken" })
  })
})
