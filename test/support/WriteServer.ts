/**
 * What the write tests share: the real API served over a real socket
 * (NodeHttpServer on port 0, in-process, its own pool against this file's
 * database), a fetch-based client that keeps the exact response bytes, the
 * envelope and success shapes as strict schemas, and SQL fixtures for
 * funnels with statuses, groups and API keys.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { AppRoutes } from "@school/api/Server"
import { IdempotencyConfig } from "@school/persistence/IdempotencyStore"
import * as Sql from "@school/persistence/Sql"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { createServer } from "node:http"
import { TestDatabase } from "./TestDatabase.ts"

export const V1 = "/api/public/v1"

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly bytes: Uint8Array
  readonly text: string
  /** The body parsed as JSON; undefined when it is not JSON. */
  readonly json: unknown
}

export interface PostOptions {
  /** Sent as `Authorization: Bearer <key>`. */
  readonly key?: string
  /** Sent as `Idempotency-Key`; omit to leave the header out. */
  readonly idempotencyKey?: string
  /** A value is sent as JSON; a string is sent as is. */
  readonly body?: unknown
  readonly headers?: Record<string, string>
}

const toReply = async (response: Response): Promise<Reply> => {
  const bytes = new Uint8Array(await response.arrayBuffer())
  const text = new TextDecoder().decode(bytes)
  let json: unknown = undefined
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, bytes, text, json }
}

export class WriteServer extends Context.Service<WriteServer, {
  readonly baseUrl: string
  post(path: string, options?: PostOptions): Effect.Effect<Reply>
  get(path: string, key?: string): Effect.Effect<Reply>
}>()("test/support/WriteServer") {
  /** The API listening on 127.0.0.1:<random>, IDEMPOTENCY_WAIT = `wait`, pool of `maxConnections`. */
  static readonly layer = (options: { readonly wait?: Duration.Input; readonly maxConnections?: number } = {}) =>
    Layer.effect(
      WriteServer,
      Effect.gen(function*() {
        const server = yield* HttpServer.HttpServer
        const baseUrl = HttpServer.formatAddress(server.address)
        const post = (path: string, request: PostOptions = {}) =>
          Effect.promise(() => {
            const headers: Record<string, string> = { "content-type": "application/json", ...request.headers }
            if (request.key !== undefined) headers["authorization"] = `Bearer ${request.key}`
            if (request.idempotencyKey !== undefined) headers["idempotency-key"] = request.idempotencyKey
            const body = request.body === undefined
              ? undefined
              : typeof request.body === "string"
              ? request.body
              : JSON.stringify(request.body)
            return fetch(`${baseUrl}${path}`, { method: "POST", headers, ...(body === undefined ? {} : { body }) })
              .then(toReply)
          })
        const get = (path: string, key?: string) =>
          Effect.promise(() =>
            fetch(`${baseUrl}${path}`, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } })
              .then(toReply)
          )
        return WriteServer.of({ baseUrl, post, get })
      })
    ).pipe(
      Layer.provide(
        HttpRouter.serve(AppRoutes, { disableLogger: true, disableListenLog: true }).pipe(
          Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
        )
      ),
      Layer.provide(Layer.succeed(IdempotencyConfig, {
        ...IdempotencyConfig.defaultValue(),
        wait: Duration.fromInputUnsafe(options.wait ?? "2 seconds")
      })),
      Layer.provide(Layer.unwrap(Effect.gen(function*() {
        const database = yield* TestDatabase
        return Sql.layer({ url: database.url, maxConnections: options.maxConnections ?? 10, applicationName: "test-api" })
      })))
    )
}

// ---------------------------------------------------------------------------
// Shapes (strict: a field more or less is a failure)
// ---------------------------------------------------------------------------

const strict = { onExcessProperty: "error" } as const

export const ErrorReply = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    fields: Schema.optionalKey(Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Array(Schema.String)])))
  })
})
export type ErrorReply = typeof ErrorReply.Type

/** The envelope of an error reply, checked strictly. */
export const errorOf = (reply: Reply): ErrorReply["error"] => Schema.decodeUnknownSync(ErrorReply)(reply.json, strict).error

/** `{ data: <S> }`, checked strictly. */
export const dataOf = <A>(schema: Schema.Codec<A, unknown>, reply: Reply): A => {
  const { data } = Schema.decodeUnknownSync(Schema.Struct({ data: schema }))(reply.json, strict)
  return data
}

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

const one = <A>(rows: ReadonlyArray<A>): A => {
  const row = rows[0]
  if (row === undefined) throw new Error("expected one row")
  return row
}

/** A funnel with statuses (name, priority) in the given order; returns its id and the status ids in that order. */
export const funnel = Effect.fnUntraced(function*(
  schoolId: number,
  name: string,
  isMain: boolean,
  statuses: ReadonlyArray<readonly [name: string, priority: number]>
) {
  const sql = yield* SqlClient.SqlClient
  const { id } = one(
    yield* sql<{ id: number }>`INSERT INTO funnels (school_id, name, is_main) VALUES (${schoolId}, ${name}, ${isMain}) RETURNING id`
  )
  const statusIds: Array<number> = []
  for (const [statusName, priority] of statuses) {
    statusIds.push(one(yield* sql<{ id: number }>`
      INSERT INTO pipeline_statuses (school_id, funnel_id, name, priority)
      VALUES (${schoolId}, ${id}, ${statusName}, ${priority}) RETURNING id`).id)
  }
  return { funnelId: id, statusIds }
}, Effect.orDie)

export interface OutboxRow {
  readonly event: string
  readonly payload: string
  readonly created_at: string
}

/** The school's outbox rows in order, payload as the exact stored json text. */
export const outbox = Effect.fnUntraced(function*(schoolId: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<OutboxRow>`
    SELECT event, payload::text AS payload, api_ts(created_at) AS created_at
    FROM outbox_events WHERE school_id = ${schoolId} ORDER BY id`
}, Effect.orDie)

export const count = Effect.fnUntraced(function*(table: "leads" | "demo_lessons" | "enrollments" | "outbox_events" | "idempotency_keys", schoolId: number) {
  const sql = yield* SqlClient.SqlClient
  return one(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE school_id = ${schoolId}`).n
}, Effect.orDie)
