/**
 * The served OpenAPI 3.1 document and reference page: every read shows the
 * envelope and the errors it can return; every write shows the
 * required Idempotency-Key header, its 201 body, and every error code it can
 * return under the right status, in the public envelope; no
 * request body claims unknown fields are refused.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { V1 } from "../support/Clients.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const Ref = Schema.Struct({ $ref: Schema.String })
const Media = Schema.Struct({ schema: Schema.Unknown })
const Operation = Schema.Struct({
  parameters: Schema.Array(Schema.Struct({ name: Schema.String, in: Schema.String, required: Schema.optionalKey(Schema.Boolean) })),
  requestBody: Schema.Struct({ content: Schema.Record(Schema.String, Media) }),
  responses: Schema.Record(Schema.String, Schema.Struct({ content: Schema.optionalKey(Schema.Record(Schema.String, Media)) }))
})
const Document = Schema.Struct({
  paths: Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Unknown)),
  components: Schema.Struct({ schemas: Schema.Record(Schema.String, Schema.Unknown) })
})
const Envelope = Schema.Struct({
  properties: Schema.Struct({
    error: Schema.Struct({ properties: Schema.Struct({ code: Schema.Struct({ enum: Schema.Array(Schema.String) }) }) })
  })
})
const AnyOf = Schema.Struct({ anyOf: Schema.Array(Ref) })

/** The error codes a response's JSON schema can carry (following $refs and anyOf). */
const codesOf = (document: typeof Document.Type, schema: unknown): ReadonlyArray<string> => {
  if (Schema.is(AnyOf)(schema)) return schema.anyOf.flatMap((ref) => codesOf(document, ref))
  if (Schema.is(Ref)(schema)) {
    const name = schema.$ref.replace("#/components/schemas/", "")
    return codesOf(document, document.components.schemas[name])
  }
  return Schema.is(Envelope)(schema) ? schema.properties.error.properties.code.enum : []
}

const common = {
  "401": ["unauthorized"],
  "403": ["insufficient_scope"],
  "409": ["idempotency_in_progress"],
  "422": ["missing_idempotency_key", "validation_failed"],
  "429": ["rate_limit_exceeded"]
}

const expected: Record<string, Record<string, ReadonlyArray<string>>> = {
  [`${V1}/leads`]: { ...common, "422": [...common["422"], "funnel_not_found"] },
  [`${V1}/demo-lessons`]: {
    ...common,
    "409": [...common["409"], "group_full"],
    "422": [...common["422"], "group_not_found"]
  },
  [`${V1}/students/{id}/groups`]: {
    ...common,
    "409": [...common["409"], "group_full"],
    "422": [...common["422"], "student_not_found", "group_not_found", "already_enrolled"]
  }
}

/** What the read-side checks look at: statuses per operation, schemas, headers and request bodies. */
const ReadOperation = Schema.Struct({
  responses: Schema.Record(
    Schema.String,
    Schema.Struct({ headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)) })
  ),
  requestBody: Schema.optionalKey(Schema.Struct({ content: Schema.Record(Schema.String, Media) }))
})
const ReadDocument = Schema.Struct({
  openapi: Schema.String,
  paths: Schema.Record(Schema.String, Schema.Record(Schema.String, ReadOperation)),
  components: Schema.Struct({ schemas: Schema.Record(Schema.String, Schema.Unknown) })
})
const Required = Schema.Struct({ required: Schema.Array(Schema.String) })
const EnvelopeSchema = Schema.Struct({ required: Schema.Array(Schema.String), properties: Schema.Struct({ error: Required }) })
const RetryAfter = Schema.Struct({
  required: Schema.Boolean,
  schema: Schema.Struct({ type: Schema.String, pattern: Schema.String })
})
const BodySchema = Schema.Struct({ additionalProperties: Schema.optionalKey(Schema.Unknown) })

layer(TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer)), { excludeTestServices: true })("OpenAPI", (it) => {
  it.effect("the OpenAPI 3.1 document shows the envelope and every error per endpoint, and the docs page loads", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const res = yield* server.raw.get(`${V1}/openapi.json`)
      assert.strictEqual(res.status, 200)
      const doc = Schema.decodeUnknownSync(ReadDocument)(res.json)
      assert.match(doc.openapi, /^3\.1/)
      const get = (path: string) => Schema.decodeUnknownSync(ReadOperation)(doc.paths[path]?.["get"])
      const statuses = (path: string) => Object.keys(get(path).responses).sort()
      // 500: any unexpected failure; 503: the database is away (docs/decisions.md "Requests and responses"), on every operation.
      assert.deepStrictEqual(statuses(`${V1}/students`), ["200", "401", "422", "429", "500", "503"])
      assert.deepStrictEqual(statuses(`${V1}/students/{id}`), ["200", "401", "404", "422", "429", "500", "503"])
      assert.deepStrictEqual(statuses(`${V1}/lessons`), ["200", "401", "422", "429", "500", "503"])
      const lessons422 = JSON.stringify(get(`${V1}/lessons`).responses["422"])
      for (const code of ["validation_failed", "invalid_window", "window_too_large"]) {
        assert.include(JSON.stringify(doc.components.schemas) + lessons422, code)
      }
      const unauthorized = Schema.decodeUnknownSync(EnvelopeSchema)(doc.components.schemas["UnauthorizedError"])
      assert.deepStrictEqual(unauthorized.required, ["error"])
      // A 401 always says why (fields.reason, documentUnauthorizedReasons).
      assert.deepStrictEqual([...unauthorized.properties.error.required].sort(), ["code", "fields", "message"])
      assert.notInclude(res.text, "HttpApiSchemaError")
      // The key is a bearer token, named as tools expect it (lower case: Scalar read `Bearer` as Basic).
      const { components } = Schema.decodeUnknownSync(Schema.Struct({ components: Schema.Struct({ securitySchemes: Schema.Unknown }) }))(res.json)
      assert.deepStrictEqual(components.securitySchemes, {
        bearer: { type: "http", scheme: "bearer" }
      })
      const tooMany = get(`${V1}/students`).responses["429"]
      // Declared by the contract: HttpApi names response headers in lower case and documents an
      // integer header as its text (as it does `page` and `{id}`): whole seconds, at least 1.
      const retryAfter = Schema.decodeUnknownSync(RetryAfter)(tooMany?.headers?.["retry-after"])
      assert.isTrue(retryAfter.required)
      assert.deepStrictEqual([retryAfter.schema.type, retryAfter.schema.pattern], ["string", "^[1-9][0-9]*$"])
      // Unknown body fields are ignored (docs/decisions.md "Requests and responses"), so no request body may claim otherwise.
      const bodies = Object.values(doc.paths).flatMap((operations) =>
        Object.values(operations).flatMap((operation) => Object.values(operation.requestBody?.content ?? {}))
      )
      assert.isAtLeast(bodies.length, 3)
      for (const media of bodies) {
        const schema = Schema.is(Ref)(media.schema)
          ? doc.components.schemas[media.schema.$ref.split("/").pop() ?? ""]
          : media.schema
        assert.notStrictEqual(Schema.decodeUnknownSync(BodySchema)(schema).additionalProperties, false, JSON.stringify(schema))
      }
      const docs = yield* server.raw.get(`${V1}/docs`)
      assert.strictEqual(docs.status, 200)
      assert.include(docs.text, "<html")
    }))

  it.effect("every write: Idempotency-Key required, 201 body, and every error code under its status", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const reply = yield* server.raw.get(`${V1}/openapi.json`)
      assert.strictEqual(reply.status, 200)
      const document = Schema.decodeUnknownSync(Document)(reply.json)
      for (const [path, statuses] of Object.entries(expected)) {
        const operation = Schema.decodeUnknownSync(Operation)(document.paths[path]?.["post"])
        const header = operation.parameters.find((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key")
        assert.isDefined(header, path)
        assert.strictEqual(header?.name, "Idempotency-Key")
        assert.isTrue(header?.required)
        assert.isDefined(operation.requestBody.content["application/json"])
        assert.isDefined(operation.responses["201"]?.content?.["application/json"], path)
        for (const [status, codes] of Object.entries(statuses)) {
          const schema = operation.responses[status]?.content?.["application/json"]?.schema
          assert.deepStrictEqual([...codesOf(document, schema)].sort(), [...codes].sort(), `${path} ${status}`)
        }
      }
    }))
})
