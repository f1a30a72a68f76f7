/**
 * The write endpoints in the served OpenAPI document (issue 4): each shows
 * the required Idempotency-Key header, its 201 body, and every error code it
 * can return under the right status, in the public envelope.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { TestDatabase } from "../support/TestDatabase.ts"
import { V1, WriteServer } from "../support/WriteServer.ts"

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

layer(WriteServer.layer().pipe(Layer.provideMerge(TestDatabase.layer)), { excludeTestServices: true })("OpenAPI", (it) => {
  it.effect("every write: Idempotency-Key required, 201 body, and every error code under its status", () =>
    Effect.gen(function*() {
      const server = yield* WriteServer
      const reply = yield* server.get(`${V1}/openapi.json`)
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
