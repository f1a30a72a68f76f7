/**
 * Reading an OpenAPI 3.1 document the service serves, for tests: its
 * operations, and whether a real answer (status, headers, body) is one the
 * document allows for the operation that was called. Schemas are checked by
 * ajv in the document's own dialect (JSON Schema 2020-12) with the standard
 * formats (`date-time`, `date`), `$ref`s resolved against the document.
 *
 *   const document = openApiDocument(reply.json)
 *   const problems = document.check("GET", "/api/public/v1/students/7", reply)
 *   assert.deepStrictEqual(problems, [])
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { Predicate, Schema } from "effect"

type Json = Record<string, unknown>
const isJson = (u: unknown): u is Json => Predicate.isObject(u) && !Array.isArray(u)
const entriesOf = (u: unknown): ReadonlyArray<[string, unknown]> => (isJson(u) ? Object.entries(u) : [])

/** What `check` reads of an answer. */
export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** One documented answer: `get /api/public/v1/students/{id} 404`. */
export type ResponseId = string

export interface OpenApiDocument {
  readonly json: Json
  /** Every documented operation: `get /api/public/v1/students/{id}`. */
  readonly operations: ReadonlyArray<string>
  /** Every documented (operation, status). */
  readonly responses: ReadonlyArray<ResponseId>
  /** The operation a request names (`GET`, a concrete path), if the document has it. */
  readonly operationOf: (method: string, path: string) => string | undefined
  /**
   * What is wrong with `answer` as the answer of `method path` by the
   * document: an undocumented status, a missing or malformed documented
   * header, a body its schema refuses. Empty when it conforms.
   */
  readonly check: (method: string, path: string, answer: Answer) => ReadonlyArray<string>
  /** A schema of the document (`#/components/...` refs resolved) as an ajv validator. */
  readonly validator: (schema: unknown) => ValidateFunction
}

export const openApiDocument = (document: unknown): OpenApiDocument => {
  if (!isJson(document)) throw new Error("not an OpenAPI document")
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
  addFormats.default(ajv)
  const components = document["components"]
  const cache = new Map<unknown, ValidateFunction>()
  const validator = (schema: unknown): ValidateFunction => {
    const cached = cache.get(schema)
    if (cached !== undefined) return cached
    // The wrapper is the `$ref`s' root, so `#/components/schemas/X` resolves as in the document.
    const compiled = ajv.compile({ ...(isJson(schema) ? schema : {}), components })
    cache.set(schema, compiled)
    return compiled
  }
  const templates: Array<{ readonly method: string; readonly path: string; readonly pattern: RegExp; readonly operation: Json }> = []
  for (const [path, operations] of entriesOf(document["paths"])) {
    for (const [method, operation] of entriesOf(operations)) {
      if (!isJson(operation)) continue
      const pattern = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{[^}]+\\?\}/g, "[^/]+")}$`)
      templates.push({ method, path, pattern, operation })
    }
  }
  // A literal segment wins over a parameter (`/sessions/current` before `/sessions/{id}`).
  templates.sort((a, b) => (a.path.match(/\{/g)?.length ?? 0) - (b.path.match(/\{/g)?.length ?? 0))
  const find = (method: string, path: string) =>
    templates.find((t) => t.method === method.toLowerCase() && t.pattern.test(path.split("?")[0] ?? path))

  const check = (method: string, path: string, answer: Answer): ReadonlyArray<string> => {
    const template = find(method, path)
    if (template === undefined) return [`${method} ${path}: no such operation in the document`]
    const name = `${template.method} ${template.path} ${answer.status}`
    const response = isJson(template.operation["responses"]) ? template.operation["responses"][String(answer.status)] : undefined
    if (!isJson(response)) return [`${name}: status not documented`]
    const problems: Array<string> = []
    for (const [header, definition] of entriesOf(response["headers"])) {
      if (!isJson(definition)) continue
      const value = answer.headers.get(header)
      if (value === null) {
        if (definition["required"] === true) problems.push(`${name}: header ${header} missing`)
        continue
      }
      const validate = validator(definition["schema"])
      if (!validate(value)) problems.push(`${name}: header ${header}=${value}: ${ajv.errorsText(validate.errors)}`)
    }
    const media = isJson(response["content"]) ? response["content"]["application/json"] : undefined
    if (!isJson(media)) {
      if (answer.text !== "") problems.push(`${name}: a body where none is documented`)
      return problems
    }
    let body: unknown
    try {
      body = JSON.parse(answer.text)
    } catch {
      return [...problems, `${name}: body is not JSON: ${answer.text.slice(0, 200)}`]
    }
    const validate = validator(media["schema"])
    if (!validate(body)) {
      problems.push(`${name}: body ${answer.text.slice(0, 300)}: ${ajv.errorsText(validate.errors)}`)
    }
    return problems
  }

  return {
    json: document,
    operations: templates.map((t) => `${t.method} ${t.path}`).sort(),
    responses: templates.flatMap((t) => entriesOf(t.operation["responses"]).map(([status]) => `${t.method} ${t.path} ${status}`)).sort(),
    operationOf: (method, path) => {
      const template = find(method, path)
      return template === undefined ? undefined : `${template.method} ${template.path}`
    },
    check,
    validator
  }
}

/** A document's answers and their headers, as a Schema: `paths[path][method].responses[status].headers`. */
export const ResponseHeaders = Schema.Struct({
  paths: Schema.Record(
    Schema.String,
    Schema.Record(
      Schema.String,
      Schema.Struct({
        responses: Schema.Record(
          Schema.String,
          Schema.Struct({ headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)) })
        )
      })
    )
  )
})
