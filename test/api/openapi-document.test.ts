/**
 * Both served OpenAPI documents (public `/api/public/v1/openapi.json`,
 * back office `/api/crm/v1/openapi.json`), fetched from the running server:
 * valid by the official OpenAPI 3.1 JSON Schema
 * (@seriousme/openapi-schema-validator), and what a code generator needs
 * (docs/integrators.md "The OpenAPI documents"): integer parameters typed as integers,
 * timestamps and dates with their `format`, `servers`, a summary and an
 * example on every operation (each example valid by its own schema), the
 * 401 reasons as an enum, `Idempotent-Replayed` on the writes, 413/415 on
 * the writes, 500 on every operation and the 405 among the components. And
 * what `openapi-typescript` generates from the public one.
 */
import { assert, layer } from "@effect/vitest"
import { Validator } from "@seriousme/openapi-schema-validator"
import { Effect, Layer, Predicate, Schema } from "effect"
import openapiTS, { astToString } from "openapi-typescript"
import { BACK_OFFICE_OPENAPI_PATH, OPENAPI_PATH } from "@school/api/Server"
import { Errors, Idempotency } from "@school/domain"
import * as Events from "@school/domain/Events"
import * as WebhookSignature from "@school/domain/WebhookSignature"
import { openApiDocument } from "../support/OpenApiDocument.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

type Json = Record<string, unknown>
const isJson = (u: unknown): u is Json => Predicate.isObject(u) && !Array.isArray(u)
const entriesOf = (u: unknown): ReadonlyArray<[string, unknown]> => (isJson(u) ? Object.entries(u) : [])
const at = (u: unknown, ...keys: ReadonlyArray<string>): unknown =>
  keys.reduce<unknown>((value, key) => (isJson(value) ? value[key] : undefined), u)

/** A payload of every event, as the outbox stores them (docs/integrators.md "Event catalog"). */
const payloads: { readonly [E in Events.EventName]: (typeof Events.payloads)[E]["Type"] } = {
  "student.created": { student_id: 11, student_name: "Anna Ivanova", filial_id: 2 },
  "lead.created": { lead_id: 5, name: "", phone: "+7 900 123-45-67", source: "api" },
  "group.enrolled": { enrollment_id: 9, student_id: 11, group_id: 3, group_name: "English B1", filial_id: 2 },
  "lesson.completed": { student_id: 11, lesson_id: 40, group_id: 3, teacher_id: 0, visit_status: 1, filial_id: 2 },
  "payment.received": {
    student_id: 11,
    payment_id: 8,
    amount: 1500.5,
    payment_amount: 1500.5,
    payment_type: "card",
    group_id: 0,
    filial_id: 2
  },
  "webhook.test": { subscription_id: 4, message: "Test delivery" }
}

/** Every (method, path, operation) of a document. */
const operationsOf = (document: Json) =>
  entriesOf(document["paths"]).flatMap(([path, methods]) =>
    entriesOf(methods).map(([method, operation]) => ({ method, path, operation: isJson(operation) ? operation : {} }))
  )

/** Every property schema named `name` anywhere in `u`, with the name. */
const propertiesNamed = (u: unknown, test: (name: string) => boolean): ReadonlyArray<[string, unknown]> => {
  if (Array.isArray(u)) return u.flatMap((v) => propertiesNamed(v, test))
  if (!isJson(u)) return []
  const own = entriesOf(u["properties"]).filter(([name]) => test(name))
  return [...own, ...Object.values(u).flatMap((v) => propertiesNamed(v, test))]
}

/** The non-null alternatives of a schema. */
const branches = (schema: unknown): ReadonlyArray<Json> =>
  isJson(schema) && Array.isArray(schema["anyOf"])
    ? schema["anyOf"].filter(isJson).filter((b) => b["type"] !== "null")
    : isJson(schema) ? [schema] : []

const served = (path: string) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const reply = yield* server.raw.get(path)
    assert.strictEqual(reply.status, 200)
    assert.isTrue(isJson(reply.json))
    return reply.json as Json
  })

layer(TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer)), { excludeTestServices: true })("OpenAPI documents", (it) => {
  it.effect("both served documents are valid OpenAPI 3.1 (and the validator refuses a broken one)", () =>
    Effect.gen(function*() {
      for (const path of [OPENAPI_PATH, BACK_OFFICE_OPENAPI_PATH]) {
        const document = yield* served(path)
        assert.strictEqual(document["openapi"], "3.1.0")
        const result = yield* Effect.promise(() => new Validator().validate(document))
        assert.isTrue(result.valid, `${path}: ${JSON.stringify(result.errors)}`)
        // Negative control: the same document with an operation's responses made a string is refused.
        const broken = structuredClone(document)
        const first = operationsOf(broken)[0]
        assert.isDefined(first)
        if (first !== undefined) first.operation["responses"] = "none"
        const refused = yield* Effect.promise(() => new Validator().validate(broken))
        assert.isFalse(refused.valid, path)
      }
    }))

  it.effect("servers, a summary and a valid example on every operation, of both documents", () =>
    Effect.gen(function*() {
      for (const path of [OPENAPI_PATH, BACK_OFFICE_OPENAPI_PATH]) {
        const json = yield* served(path)
        const document = openApiDocument(json)
        const servers = json["servers"]
        assert.isTrue(Array.isArray(servers) && servers.length > 0, path)
        let examples = 0
        for (const { method, operation, path: route } of operationsOf(json)) {
          const name = `${method} ${route}`
          assert.isTrue(typeof operation["summary"] === "string" && operation["summary"].length > 0, `${name}: summary`)
          const media = [
            at(operation, "requestBody", "content", "application/json"),
            ...entriesOf(operation["responses"]).filter(([status]) => status.startsWith("2")).map(([, r]) =>
              at(r, "content", "application/json")
            )
          ].filter(isJson)
          assert.isAtLeast(media.length, 1, name)
          for (const m of media) {
            assert.isTrue("example" in m, `${name}: example`)
            const validate = document.validator(m["schema"])
            assert.isTrue(validate(m["example"]), `${name}: ${JSON.stringify(m["example"])} ${JSON.stringify(validate.errors)}`)
            examples++
          }
        }
        assert.isAtLeast(examples, operationsOf(json).length, path)
        // Negative control: an example that breaks its schema is caught.
        const leads = at(json, "paths", "/api/public/v1/leads", "post", "requestBody", "content", "application/json")
        if (isJson(leads)) assert.isFalse(document.validator(leads["schema"])({ phone: 5 }))
      }
    }))

  it.effect("the back office declares its session, cookie or header, on every operation but sign-in; the public API its bearer key", () =>
    Effect.gen(function*() {
      const json = yield* served(BACK_OFFICE_OPENAPI_PATH)
      assert.deepStrictEqual(at(json, "components", "securitySchemes", "sessionCookie"), {
        type: "apiKey",
        in: "cookie",
        name: "crm_session",
        description: "Set by POST /sessions (sign-in)."
      })
      assert.strictEqual(at(json, "components", "securitySchemes", "sessionToken", "name"), "Authorization")
      const secured = (operation: Json) => Array.isArray(operation["security"]) && operation["security"].length > 0
      const unsecured = operationsOf(json).filter(({ operation }) => !secured(operation))
        .map(({ method, path }) => `${method} ${path}`)
      assert.deepStrictEqual(unsecured, ["post /api/crm/v1/sessions"])
      for (const { operation } of operationsOf(json)) {
        if (secured(operation)) assert.deepStrictEqual(operation["security"], [{ sessionCookie: [] }, { sessionToken: [] }])
      }
      const publicJson = yield* served(OPENAPI_PATH)
      for (const { method, operation, path } of operationsOf(publicJson)) {
        assert.isTrue(secured(operation), `${method} ${path}`)
      }
    }))

  it.effect("integer parameters are integers; timestamps, dates and the 401 reasons are typed", () =>
    Effect.gen(function*() {
      for (const path of [OPENAPI_PATH, BACK_OFFICE_OPENAPI_PATH]) {
        const json = yield* served(path)
        let integers = 0
        for (const { method, operation, path: route } of operationsOf(json)) {
          for (const parameter of Array.isArray(operation["parameters"]) ? operation["parameters"].filter(isJson) : []) {
            const name = `${method} ${route} ${String(parameter["in"])} ${String(parameter["name"])}`
            const schema = parameter["schema"]
            if (parameter["in"] === "path" || parameter["name"] === "page" || parameter["name"] === "per_page") {
              assert.deepInclude(schema, { type: "integer" }, name)
              assert.isAtLeast(Number(at(schema, "minimum")), 0, name)
              integers++
            }
            if (parameter["name"] === "from" || parameter["name"] === "to") assert.deepInclude(schema, { format: "date" }, name)
            if (parameter["name"] === "updated_since") assert.deepInclude(schema, { format: "date-time" }, name)
          }
        }
        assert.isAtLeast(integers, 10, path)
        // Every `*_at` field of every schema is a date-time.
        const stamps = propertiesNamed(json, (name) => name.endsWith("_at"))
        assert.isAtLeast(stamps.length, 5, path)
        for (const [name, schema] of stamps) {
          for (const branch of branches(schema)) {
            const target = typeof branch["$ref"] === "string" ? undefined : branch
            if (target !== undefined) assert.deepInclude(target, { type: "string", format: "date-time" }, `${path} ${name}`)
          }
        }
      }
      const json = yield* served(OPENAPI_PATH)
      const reason = at(json, "components", "schemas", "UnauthorizedError", "properties", "error", "properties", "fields", "properties", "reason")
      assert.deepStrictEqual(at(reason, "enum"), [...Errors.UnauthorizedReason.literals])
    }))

  it.effect("writes document Idempotent-Replayed, 413 and 415; every operation 500; 405 is a component", () =>
    Effect.gen(function*() {
      for (const path of [OPENAPI_PATH, BACK_OFFICE_OPENAPI_PATH]) {
        const json = yield* served(path)
        assert.isDefined(at(json, "components", "responses", "MethodNotAllowed", "headers", "allow"), path)
        for (const { method, operation, path: route } of operationsOf(json)) {
          assert.isDefined(at(operation, "responses", "500", "content", "application/json"), `${method} ${route}`)
        }
      }
      const json = yield* served(OPENAPI_PATH)
      const writes = operationsOf(json).filter(({ method }) => method === "post")
      assert.strictEqual(writes.length, 3)
      for (const { operation, path } of writes) {
        for (const status of ["413", "415"]) assert.isDefined(at(operation, "responses", status), `${path} ${status}`)
        for (const status of ["201", "409", "422"]) {
          assert.deepStrictEqual(
            at(operation, "responses", status, "headers", Idempotency.REPLAYED_HEADER, "schema"),
            { type: "string", enum: ["true"] },
            `${path} ${status}`
          )
        }
        // Never on what is not stored (docs/decisions.md "Idempotency").
        assert.isUndefined(at(operation, "responses", "401", "headers", Idempotency.REPLAYED_HEADER), path)
      }
    }))

  it.effect("openapi-typescript: integer parameters are numbers, timestamps strings, the 401 reason a union", () =>
    Effect.gen(function*() {
      const json = yield* served(OPENAPI_PATH)
      const source = astToString(yield* Effect.promise(() => openapiTS(JSON.stringify(json))))
      const squeeze = (s: string) => s.replace(/\s+/g, " ")
      const text = squeeze(source)
      assert.include(text, "page?: number;")
      assert.include(text, "per_page?: number;")
      assert.include(text, "path: { id: number; };")
      assert.include(text, "from: string;")
      assert.include(text, "updated_since?: string;")
      // Timestamps keep their format in the generated comments (openapi-typescript writes none for a parameter).
      assert.match(text, /\* Format: date-time [^/]*\*\/ created_at: string;/)
      assert.include(text, 'reason: "missing_or_malformed_key" | "unknown_key" | "revoked_key" | "expired_key";')
      assert.include(text, '"Idempotent-Replayed"?: "true";')
      assert.notInclude(text, "page?: string")
    }))

  it.effect("webhooks: every event of the catalog, its real body and both signatures' headers as documented", () =>
    Effect.gen(function*() {
      const json = yield* served(OPENAPI_PATH)
      const document = openApiDocument(json)
      assert.deepStrictEqual(Object.keys(isJson(json["webhooks"]) ? json["webhooks"] : {}).sort(), [...Events.EventName.literals].sort())
      const secret = `${WebhookSignature.SECRET_PREFIX}${Buffer.alloc(32, 7).toString("base64")}`
      for (const event of Events.EventName.literals) {
        const operation = at(json, "webhooks", event, "post")
        assert.isString(at(operation, "summary"), event)
        assert.isDefined(at(operation, "responses", "2XX"), event)
        assert.isDefined(at(operation, "responses", "default"), event)
        const schema = at(operation, "requestBody", "content", "application/json", "schema")
        const validate = document.validator(schema)
        const body = WebhookSignature.deliveryBody({
          event,
          accountId: 7,
          payloadJson: JSON.stringify(Schema.encodeUnknownSync(Events.payloads[event])(payloads[event])),
          timestamp: "2026-11-22T09:15:03.123456Z"
        })
        assert.isTrue(validate(JSON.parse(body)), `${event}: ${body} ${JSON.stringify(validate.errors)}`)
        // Negative controls: another event's name, a payload field less.
        assert.isFalse(validate({ ...JSON.parse(body), event: event === "webhook.test" ? "lead.created" : "webhook.test" }), event)
        const [first] = Object.keys(payloads[event])
        const short = JSON.parse(body)
        delete short.payload[first ?? ""]
        assert.isFalse(validate(short), event)
        // The headers of a real attempt, each valid by its documented schema; every documented one is sent.
        const headers = WebhookSignature.attemptHeaders({ secret, deliveryId: "msg_0123456789abcdef0123456789abcdef", event, body, nowSeconds: 1_790_000_000 })
        const documented = Array.isArray(at(operation, "parameters")) ? (at(operation, "parameters") as Array<unknown>).filter(isJson) : []
        const names = documented.map((p) => String(p["name"]).toLowerCase()).sort()
        for (const name of ["x-service-signature", "webhook-id", "webhook-timestamp", "webhook-signature"]) assert.include(names, name)
        for (const parameter of documented) {
          const name = String(parameter["name"]).toLowerCase()
          const value = headers[name]
          assert.isString(value, `${event} ${name}`)
          assert.isTrue(document.validator(parameter["schema"])(value), `${event} ${name}=${value}`)
        }
      }
    }))
})
