/**
 * What the generated OpenAPI document says differently from what HttpApi
 * derives, and why: the Idempotency-Key header as the specification spells
 * it, with its rule; request bodies that accept unknown fields; the bearer
 * scheme's name in lower case; X-Request-Id on every answer. Everything
 * else (envelopes, statuses, the 429's `Retry-After`) comes from the
 * contract itself.
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import * as HttpApi from "effect/http-api/HttpApi"
import * as Errors from "../Errors.ts"
import * as Events from "../Events.ts"
import * as Idempotency from "../Idempotency.ts"
import * as RequestId from "../RequestId.ts"
import * as WebhookSignature from "../WebhookSignature.ts"

type Json = Record<string, unknown>

const isJson = (u: unknown): u is Json => Predicate.isObject(u) && !Array.isArray(u)
const valuesOf = (u: unknown): ReadonlyArray<unknown> => (isJson(u) ? Object.values(u) : [])

/**
 * An operation transform for every write: the Idempotency-Key header (spec
 * 4.1) under its specified name, with its rule and its bounds.
 */
export const documentIdempotencyKey = (operation: Json): Json => ({
  ...operation,
  parameters: (Array.isArray(operation["parameters"]) ? operation["parameters"] : []).map((parameter: unknown) =>
    isJson(parameter) && parameter["in"] === "header" && parameter["name"] === "idempotency-key"
      ? {
        ...parameter,
        name: Idempotency.HEADER,
        description: Idempotency.KEY_DESCRIPTION,
        schema: { type: "string", minLength: 1, maxLength: Idempotency.MAX_KEY_LENGTH, pattern: "^[\\x20-\\x7E]+$" }
      }
      : parameter
  ),
  responses: Object.fromEntries(
    Object.entries(isJson(operation["responses"]) ? operation["responses"] : {}).map(([status, response]) =>
      [status, isJson(response) && REPLAYABLE.test(status) ? withReplayedHeader(response) : response]
    )
  )
})

/**
 * The answers a repeat can replay (docs/decisions.md "Idempotency"): what the
 * operation itself produced, its 2xx and its 409 and 422. Never 401, 403,
 * 413, 415, 429 or 5xx, which happen before the key is claimed or roll back.
 */
const REPLAYABLE = /^(2..|409|422)$/

const withReplayedHeader = (response: Json): Json => ({
  ...response,
  headers: {
    ...(isJson(response["headers"]) ? response["headers"] : {}),
    [Idempotency.REPLAYED_HEADER]: {
      description: Idempotency.REPLAYED_DESCRIPTION,
      required: false,
      schema: { type: "string", enum: ["true"] }
    }
  }
})

/**
 * A document transform: unknown fields in a request body are ignored
 * (docs/decisions.md "Requests and responses"), so no request body may claim
 * `additionalProperties: false`.
 */
export const allowUnknownBodyFields = (spec: Json): Json => {
  const components = isJson(spec["components"]) ? spec["components"]["schemas"] : undefined
  const open = (schema: unknown) => {
    const ref = isJson(schema) ? schema["$ref"] : undefined
    const target = typeof ref === "string" && isJson(components) ? components[ref.split("/").pop() ?? ""] : schema
    if (isJson(target) && target["additionalProperties"] === false) delete target["additionalProperties"]
  }
  for (const operations of valuesOf(spec["paths"])) {
    for (const operation of valuesOf(operations)) {
      const body = isJson(operation) ? operation["requestBody"] : undefined
      for (const media of valuesOf(isJson(body) ? body["content"] : undefined)) {
        if (isJson(media)) open(media["schema"])
      }
    }
  }
  return spec
}

/**
 * A document transform: an `http` security scheme's name in lower case
 * (`bearer`, as the IANA registry and OpenAPI's examples spell it).
 * HttpApiSecurity.bearer writes `Bearer`; the name is case-insensitive in
 * HTTP, but tools compare it exactly: the reference page showed the public
 * API's key as Basic authentication and wrote its curl examples with
 * `Authorization: Basic`.
 */
export const lowerCaseHttpSchemes = (spec: Json): Json => {
  const schemes = isJson(spec["components"]) ? spec["components"]["securitySchemes"] : undefined
  for (const scheme of valuesOf(schemes)) {
    if (isJson(scheme) && scheme["type"] === "http" && typeof scheme["scheme"] === "string") {
      scheme["scheme"] = scheme["scheme"].toLowerCase()
    }
  }
  return spec
}

/**
 * A document transform: every answer of every operation carries
 * `X-Request-Id` (docs/operations.md "Request ids"), as HttpApi cannot
 * declare a header on every response.
 */
export const documentRequestId = (spec: Json): Json => {
  for (const operations of valuesOf(spec["paths"])) {
    for (const operation of valuesOf(operations)) {
      for (const response of valuesOf(isJson(operation) ? operation["responses"] : undefined)) {
        if (!isJson(response)) continue
        response["headers"] = {
          ...(isJson(response["headers"]) ? response["headers"] : {}),
          [RequestId.HEADER]: { description: RequestId.DESCRIPTION, required: true, schema: RequestId.SCHEMA }
        }
      }
    }
  }
  return spec
}

/** The path of an endpoint as OpenAPI writes it: `/students/:id` is `/students/{id}`. */
const openApiPath = (path: string): string => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")

/** A JSON Schema without its `null` alternative (an optional parameter's decoded side). */
const withoutNull = (schema: unknown): unknown => {
  if (!isJson(schema) || !Array.isArray(schema["anyOf"])) return schema
  const rest = schema["anyOf"].filter((branch) => !(isJson(branch) && branch["type"] === "null"))
  const { anyOf: _, ...others } = schema
  return rest.length === 1 && isJson(rest[0]) ? { ...rest[0], ...others } : { ...others, anyOf: rest }
}

/**
 * A document transform: every integer path and query parameter is
 * documented as the integer it stands for (`type: integer` with its
 * bounds), and every parameter keeps its description. HttpApi documents a
 * parameter by its text without the text's checks, so `page`, `per_page`
 * and `{id}` read as any string, and a generator types them `string`
 * (`DecimalIntFromString` in libs/domain/src/Ids.ts is the rule that makes
 * the text an integer: a query `page=1.5` is still validation_failed). The
 * decoded side of each parameter, read from the contract, says which ones
 * are integers.
 */
export const documentParameters = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
) =>
(spec: Json): Json => {
  const decoded = new Map<string, Map<string, Json>>()
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const byName = new Map<string, Json>()
      for (const [location, schema] of [["path", endpoint.params], ["query", endpoint.query]] as const) {
        if (schema === undefined) continue
        const type = Schema.toType(schema)
        const document = Schema.toJsonSchemaDocument(type).schema
        const properties = isJson(document) && isJson(document["properties"]) ? document["properties"] : {}
        const descriptions = new Map<string, string | undefined>(
          SchemaAST.isObjects(type.ast)
            ? type.ast.propertySignatures.map((p) => [String(p.name), SchemaAST.resolveDescription(p.type)])
            : []
        )
        for (const [name, property] of Object.entries(properties)) {
          const plain = withoutNull(property)
          const description = descriptions.get(name) ?? (isJson(plain) ? plain["description"] : undefined)
          byName.set(`${location} ${name}`, {
            ...(isJson(plain) && plain["type"] === "integer" ? { schema: plain } : {}),
            ...(typeof description === "string" ? { description } : {})
          })
        }
      }
      decoded.set(`${endpoint.method.toLowerCase()} ${openApiPath(endpoint.path)}`, byName)
    }
  })
  for (const [path, operations] of Object.entries(isJson(spec["paths"]) ? spec["paths"] : {})) {
    for (const [method, operation] of Object.entries(isJson(operations) ? operations : {})) {
      const byName = decoded.get(`${method} ${path}`)
      if (!isJson(operation) || byName === undefined || !Array.isArray(operation["parameters"])) continue
      operation["parameters"] = operation["parameters"].map((parameter: unknown) => {
        if (!isJson(parameter)) return parameter
        const found = byName.get(`${String(parameter["in"])} ${String(parameter["name"])}`)
        if (found === undefined) return parameter
        const { description, schema } = found
        const current = isJson(parameter["schema"]) ? parameter["schema"] : {}
        return {
          ...parameter,
          ...(typeof description === "string" ? { description } : {}),
          schema: isJson(schema) ? schema : withoutNull(current)
        }
      })
    }
  }
  return spec
}

/**
 * A document transform: `status` taken off the operations that cannot
 * answer it. HttpApi writes a middleware's errors on every endpoint behind
 * it, though a middleware may fail only for some requests (the back office's
 * 403 FORBIDDEN: BackOfficeApi.ts says which operations never give it);
 * `unreachable` picks the endpoints, read from the contract.
 */
export const documentUnreachableStatus = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  status: string,
  unreachable: (endpoint: HttpApiEndpoint.Top) => boolean
) =>
(spec: Json): Json => {
  const paths = isJson(spec["paths"]) ? spec["paths"] : {}
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      if (!unreachable(endpoint)) return
      const operations = paths[openApiPath(endpoint.path)]
      const operation = isJson(operations) ? operations[endpoint.method.toLowerCase()] : undefined
      const responses = isJson(operation) ? operation["responses"] : undefined
      if (!isJson(responses) || !(status in responses)) throw new Error(`OpenAPI: ${endpoint.method} ${endpoint.path} has no ${status}`)
      delete responses[status]
    }
  })
  return spec
}

/**
 * A document transform: the back office's session (docs/decisions.md
 * "Back-office sessions") as the security of every operation that needs
 * one, so a generator knows how to authenticate: the `crm_session` cookie,
 * or `Authorization: Session <token>` (either). HttpApi documents security
 * only for its own schemes, and the session middleware reads both places
 * itself. `needsSession` picks the operations, read from the contract.
 */
export const documentSessionSecurity = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  session: { readonly cookieName: string },
  needsSession: (middleware: ReadonlySet<unknown>) => boolean
) =>
(spec: Json): Json => {
  const components = isJson(spec["components"]) ? spec["components"] : {}
  components["securitySchemes"] = {
    ...(isJson(components["securitySchemes"]) ? components["securitySchemes"] : {}),
    sessionCookie: {
      type: "apiKey",
      in: "cookie",
      name: session.cookieName,
      description: "Set by POST /sessions (sign-in)."
    },
    sessionToken: {
      type: "apiKey",
      in: "header",
      name: "Authorization",
      description: "`Session <token>`, the token POST /sessions (sign-in) returns."
    }
  }
  spec["components"] = components
  const paths = isJson(spec["paths"]) ? spec["paths"] : {}
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, middleware }) => {
      if (!needsSession(middleware)) return
      const operations = paths[openApiPath(endpoint.path)]
      const operation = isJson(operations) ? operations[endpoint.method.toLowerCase()] : undefined
      if (!isJson(operation)) throw new Error(`OpenAPI: ${endpoint.method} ${endpoint.path} is not documented`)
      operation["security"] = [{ sessionCookie: [] }, { sessionToken: [] }]
    }
  })
  return spec
}

/**
 * Where the documents' paths are served: the host that served the document
 * (a relative URL, resolved against the document's own address), and the
 * address `npm start` listens on (docs/operations.md "Settings": PORT, HOST).
 * The paths carry their prefix (`/api/public/v1/...`), so a server is a host.
 */
export const SERVERS = [
  { url: "/", description: "The host that serves this document" },
  { url: "http://127.0.0.1:3000", description: "npm start on this machine (HOST and PORT defaults)" }
]

/**
 * Registers an error row's envelope among the document's schemas, as HttpApi
 * registers the contract's (its definitions under `components.schemas`), and
 * returns the reference to it.
 */
const registerEnvelope = (schemas: Json, row: { readonly envelope: Schema.Top }): Json => {
  const document = Schema.toJsonSchemaDocument(row.envelope, { onExcessProperty: "error" })
  const retarget = (u: unknown): unknown => JSON.parse(JSON.stringify(u).replaceAll("\"#/$defs/", "\"#/components/schemas/"))
  for (const [name, definition] of Object.entries(document.definitions)) {
    if (!(name in schemas)) schemas[name] = retarget(definition)
  }
  const root = retarget(document.schema)
  if (isJson(root) && typeof root["$ref"] === "string") return root
  throw new Error("OpenAPI: an error envelope without an identifier")
}

/**
 * A document transform: the reason of a 401 (spec 5.1), which the error
 * table writes as a free `fields` map like every row's, is one of
 * `Errors.UnauthorizedReason`, and a 401 always carries it.
 */
export const documentUnauthorizedReasons = (spec: Json): Json => {
  const schemas = isJson(spec["components"]) && isJson(spec["components"]["schemas"]) ? spec["components"]["schemas"] : {}
  const unauthorized = schemas["UnauthorizedEncoded"]
  const error = isJson(unauthorized) && isJson(unauthorized["properties"]) ? unauthorized["properties"]["error"] : undefined
  if (!isJson(error) || !isJson(error["properties"])) throw new Error("OpenAPI: UnauthorizedEncoded is not the public envelope")
  error["properties"]["fields"] = {
    type: "object",
    properties: {
      reason: {
        type: "string",
        enum: [...Errors.UnauthorizedReason.literals],
        description: "Why the key was refused (spec 5.1)"
      }
    },
    required: ["reason"]
  }
  error["required"] = ["code", "message", "fields"]
  return spec
}

/** The error rows every API has for answers outside its operations. */
export interface UnexpectedErrorRows {
  readonly internalError: { readonly envelope: Schema.Top }
  readonly methodNotAllowed: { readonly envelope: Schema.Top }
}

/**
 * A document transform: what any operation can answer besides what the
 * contract declares (docs/decisions.md "Requests and responses"): 500
 * internal_error on every operation (an unexpected failure, with a generic
 * message), and the 405 method_not_allowed with its `Allow` header, a
 * response of no operation (it answers a method the path does not have), kept
 * as `components.responses.MethodNotAllowed`. Both are written outside
 * HttpApi (apps/api/src/ErrorEnvelope.ts), so the contract cannot declare
 * them.
 */
export const documentUnexpectedErrors = (rows: UnexpectedErrorRows) => (spec: Json): Json => {
  const components = isJson(spec["components"]) ? spec["components"] : {}
  const schemas = isJson(components["schemas"]) ? components["schemas"] : {}
  const internalError = registerEnvelope(schemas, rows.internalError)
  const methodNotAllowed = registerEnvelope(schemas, rows.methodNotAllowed)
  components["schemas"] = schemas
  components["responses"] = {
    ...(isJson(components["responses"]) ? components["responses"] : {}),
    MethodNotAllowed: {
      description:
        "The path exists but not with this method. Answers any method a path does not list, on every path of this document.",
      headers: {
        allow: { description: "The methods the path has, e.g. `GET, POST`", required: true, schema: { type: "string" } },
        [RequestId.HEADER]: { description: RequestId.DESCRIPTION, required: true, schema: RequestId.SCHEMA }
      },
      content: { "application/json": { schema: methodNotAllowed } }
    }
  }
  spec["components"] = components
  for (const operations of valuesOf(spec["paths"])) {
    for (const operation of valuesOf(operations)) {
      if (!isJson(operation) || !isJson(operation["responses"])) continue
      operation["responses"]["500"] = {
        description: "An unexpected failure: a generic message, never a stack or SQL text. Quote X-Request-Id.",
        content: { "application/json": { schema: internalError } }
      }
    }
  }
  return spec
}

/** How deep an example follows nested schemas (the documents' deepest is a few levels). */
const MAX_EXAMPLE_DEPTH = 12

/**
 * An example value of a JSON Schema of the document: the schema's own
 * `examples` where the contract gives them (timestamps, dates, ...), else one
 * built from its type and bounds.
 */
const exampleOf = (schemas: Json, schema: unknown, depth = 0): unknown => {
  if (!isJson(schema) || depth > MAX_EXAMPLE_DEPTH) return null
  const ref = schema["$ref"]
  if (typeof ref === "string") return exampleOf(schemas, schemas[ref.split("/").pop() ?? ""], depth + 1)
  if (Array.isArray(schema["examples"]) && schema["examples"].length > 0) return schema["examples"][0]
  if ("const" in schema) return schema["const"]
  if (Array.isArray(schema["enum"]) && schema["enum"].length > 0) return schema["enum"][0]
  const choices = Array.isArray(schema["anyOf"]) ? schema["anyOf"] : Array.isArray(schema["oneOf"]) ? schema["oneOf"] : undefined
  if (choices !== undefined) {
    const preferred = choices.find((c) => !(isJson(c) && c["type"] === "null")) ?? choices[0]
    return exampleOf(schemas, preferred, depth + 1)
  }
  // `Schema.Struct({})` is written as "anything but null": an empty object is one.
  if (schema["type"] === undefined && "not" in schema) return {}
  switch (schema["type"]) {
    case "object": {
      const properties = isJson(schema["properties"]) ? schema["properties"] : {}
      return Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, exampleOf(schemas, v, depth + 1)]))
    }
    case "array":
      return [exampleOf(schemas, schema["items"], depth + 1)]
    case "integer":
    case "number": {
      const minimum = typeof schema["minimum"] === "number" ? schema["minimum"] : -Infinity
      const maximum = typeof schema["maximum"] === "number" ? schema["maximum"] : Infinity
      return Math.min(Math.max(1, minimum), maximum)
    }
    case "boolean":
      return true
    case "null":
      return null
    case "string": {
      if (schema["format"] === "date-time") return "2026-11-22T09:15:03.123456Z"
      if (schema["format"] === "date") return "2026-11-22"
      const minLength = typeof schema["minLength"] === "number" ? schema["minLength"] : 0
      const maxLength = typeof schema["maxLength"] === "number" ? schema["maxLength"] : Infinity
      return "string".padEnd(minLength, "x").slice(0, maxLength)
    }
    default:
      return null
  }
}

/**
 * A document transform: each operation's request body and success answer
 * carry an `example` (what a reference page shows and a mock server
 * returns), built from the contract's schemas and their own `examples`.
 * HttpApi writes examples only where a schema is annotated; an operation's
 * envelope (`{ data, meta }`) never is. The examples are checked against
 * their schemas by test/api/openapi-document.test.ts.
 */
export const documentExamples = (spec: Json): Json => {
  const schemas = isJson(spec["components"]) && isJson(spec["components"]["schemas"]) ? spec["components"]["schemas"] : {}
  const exemplify = (content: unknown) => {
    for (const media of valuesOf(content)) {
      if (isJson(media) && !("example" in media)) media["example"] = exampleOf(schemas, media["schema"])
    }
  }
  for (const operations of valuesOf(spec["paths"])) {
    for (const operation of valuesOf(operations)) {
      if (!isJson(operation)) continue
      if (isJson(operation["requestBody"])) exemplify(operation["requestBody"]["content"])
      for (const [status, response] of Object.entries(isJson(operation["responses"]) ? operation["responses"] : {})) {
        if (status.startsWith("2") && isJson(response)) exemplify(response["content"])
      }
    }
  }
  return spec
}

/** What each event is sent for (spec 6.3; docs/decisions.md "Webhooks"). */
const EVENT_SUMMARIES: Record<Events.EventName, string> = {
  "student.created": "A student was created (back office)",
  "lead.created": "A lead was created (POST /leads or the back office)",
  "group.enrolled": "A student was enrolled into a group (POST /students/{id}/groups or the back office)",
  "lesson.completed": "A student attended a lesson (visit_status 1)",
  "payment.received": "A payment was received; amount and payment_amount in roubles (spec 6.4)",
  "webhook.test": "A test delivery queued from the back office (POST /webhooks/{id}/test)"
}

/** The headers of every delivery attempt, as a receiver reads them (libs/domain/src/WebhookSignature.ts). */
const webhookHeaders = (event: string): ReadonlyArray<Json> => {
  const header = (name: string, description: string, schema: Json) => ({ name, in: "header", required: true, description, schema })
  // docs/decisions.md "Delivery ids": opaque, the same on every attempt (WebhookSignature.DeliveryPublicId).
  const id = { type: "string", pattern: "^msg_[0-9a-f]{32}$", example: "msg_8f14e45fceea4e9b9c2a3d7b1e0f6a52" }
  return [
    header("X-Service-Event", "The event's name.", { type: "string", enum: [event] }),
    header(
      "X-Service-Delivery",
      "The delivery's opaque id (msg_ + 32 hex digits): the same on every attempt of this delivery, from any dispatcher; deduplicate on it.",
      id
    ),
    header(
      "X-Service-Signature",
      "spec 6.2: lowercase hex HMAC-SHA256 of the raw body bytes, keyed with the UTF-8 bytes of the whole " +
        `subscription secret as shown (\`${WebhookSignature.SECRET_PREFIX}…\`). Compare in constant time.`,
      { type: "string", pattern: "^[0-9a-f]{64}$" }
    ),
    header("webhook-id", "Standard Webhooks: the delivery's opaque id (as X-Service-Delivery).", id),
    header(
      "webhook-timestamp",
      "Standard Webhooks: unix seconds of THIS attempt (a retry carries its own time), within the libraries' tolerance.",
      { type: "string", pattern: "^[0-9]+$" }
    ),
    header(
      "webhook-signature",
      "Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the " +
        `base64-decoded bytes after \`${WebhookSignature.SECRET_PREFIX}\`; the \`standardwebhooks\` libraries verify it.`,
      { type: "string", pattern: "^v1,[A-Za-z0-9+/]{43}=$" }
    ),
    header("User-Agent", "The dispatcher.", { type: "string", enum: [WebhookSignature.USER_AGENT] })
  ]
}

/**
 * A document transform: the webhooks a subscription receives (OpenAPI 3.1
 * `webhooks`), one per event of the domain's catalog (`Events.payloads`):
 * the exact body `{ event, account_id, payload, timestamp }` with the
 * event's payload schema, the headers of both signature schemes, and what
 * the answer means (docs/decisions.md "Webhooks"). The deliveries are not
 * routes of the API, so the contract has nothing to derive them from.
 */
export const documentWebhooks = (spec: Json): Json => {
  const components = isJson(spec["components"]) ? spec["components"] : {}
  const schemas = isJson(components["schemas"]) ? components["schemas"] : {}
  const webhooks: Json = {}
  for (const [event, payload] of Object.entries(Events.payloads)) {
    const name = `${event.split(".").map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join("")}Payload`
    const document = Schema.toJsonSchemaDocument(payload, { onExcessProperty: "error" })
    schemas[name] = document.schema
    const body = {
      type: "object",
      description: "Built once per delivery: every retry resends these exact bytes.",
      properties: {
        event: { type: "string", enum: [event] },
        account_id: { type: "integer", minimum: 1, description: "The school's id" },
        payload: { $ref: `#/components/schemas/${name}` },
        timestamp: { type: "string", format: "date-time", description: "The first attempt's time, ISO 8601 with offset" }
      },
      required: ["event", "account_id", "payload", "timestamp"],
      additionalProperties: false
    }
    webhooks[event] = {
      post: {
        operationId: `webhook.${event}`,
        summary: EVENT_SUMMARIES[event as Events.EventName],
        description:
          "POSTed to the subscription's URL for every subscribed event. At least once, in no particular order: " +
          "deduplicate on X-Service-Delivery / webhook-id. Verify either signature over the raw body bytes.",
        parameters: webhookHeaders(event),
        requestBody: {
          required: true,
          content: { "application/json": { schema: body, example: exampleOf(schemas, body) } }
        },
        responses: {
          "2XX": { description: "Received. Answer fast (within WEBHOOK_TIMEOUT, 10 s by default), then do the work." },
          default: {
            description:
              "Any other status (3xx and 410 and 429 included: redirects are not followed), a time-out or a refused " +
              "connection is a failed attempt. Attempts run at once, then after 1, 5 and 30 minutes; after the fourth " +
              "failure the delivery is failed (the back office can resend it). The subscription is never disabled automatically."
          }
        }
      }
    }
  }
  components["schemas"] = schemas
  spec["components"] = components
  spec["webhooks"] = webhooks
  return spec
}
