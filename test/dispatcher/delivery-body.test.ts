/**
 * A delivery's body has one definition, the SQL the claim builds it with
 * (libs/persistence/src/DeliveryQueue.ts `deliveryBodySql`); the domain's
 * `WebhookSignature.deliveryBody` spells the same bytes for tests and
 * benchmarks. For generated events (every event of the catalog with a
 * generated payload, a school id, a first attempt's time) both build the
 * body and the bytes are equal; and for any storable event name, so the two
 * escape a string alike (`to_json` and `JSON.stringify`).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Events from "@school/domain/Events"
import { PositiveInt32 } from "@school/domain/Ids"
import * as Signature from "@school/domain/WebhookSignature"
import { deliveryBodySql } from "@school/persistence/DeliveryQueue"
import { TestDatabase } from "../support/TestDatabase.ts"

/** Any catalog event with a payload of its own schema. */
const AnyEvent = Schema.Union(
  Events.EVENT_NAMES.map((event) => Schema.Struct({ event: Schema.Literal(event), payload: Events.payloads[event] }))
)

/** A first attempt's time: any instant of 1970..2100, to the microsecond. */
const Instant = Schema.Struct({
  ms: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: Date.UTC(2100, 0, 1) })),
  micros: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 999 }))
})
const render = ({ micros, ms }: typeof Instant.Type) =>
  new Date(ms).toISOString().replace("Z", `${String(micros).padStart(3, "0")}Z`)

/** What PostgreSQL stores unchanged: generated strings may hold NUL and lone surrogates, which it refuses. */
const storable = (s: string) => s.toWellFormed().replaceAll("\u0000", "")
const storableJson = (value: unknown) => JSON.stringify(value, (_key, v: unknown) => typeof v === "string" ? storable(v) : v)

const Built = Schema.Struct({ body: Schema.String, payload: Schema.String, timestamp: Schema.String })
const decodeBuilt = Schema.decodeUnknownEffect(Schema.Array(Built))

layer(TestDatabase.layer, { excludeTestServices: true })("the delivery body", (it) => {
  /** The body both ways: the claim's SQL over these values, and `deliveryBody` over what the database stored. */
  const bothWays = (event: string, accountId: number, payloadJson: string, at: string) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [built] = yield* sql`
        SELECT ${
        deliveryBodySql(sql, {
          event: sql`${event}::text`,
          accountId: sql`${accountId}::int`,
          payload: sql`${payloadJson}::json`,
          timestamp: sql`api_ts(${at}::timestamptz)`
        })
      } AS body, (${payloadJson}::json)::text AS payload, api_ts(${at}::timestamptz) AS timestamp
      `.pipe(Effect.flatMap(decodeBuilt), Effect.orDie)
      if (built === undefined) return assert.fail("no row")
      const domain = Signature.deliveryBody({ event, accountId, payloadJson: built.payload, timestamp: built.timestamp })
      assert.strictEqual(built.body, domain)
      return built
    })

  it.effect.prop(
    "every catalog event: the claim's SQL and deliveryBody build the same bytes",
    [AnyEvent, PositiveInt32, Instant],
    ([{ event, payload }, accountId, at]) =>
      Effect.gen(function*() {
        const payloadJson = storableJson(Schema.encodeUnknownSync(Events.payloads[event])(payload))
        const built = yield* bothWays(event, accountId, payloadJson, render(at))
        // The body is JSON whose payload is the event's, as stored.
        const parsed: unknown = JSON.parse(built.body)
        assert.deepStrictEqual(parsed, {
          event,
          account_id: accountId,
          payload: JSON.parse(payloadJson),
          timestamp: built.timestamp
        })
      }),
    { timeout: 120_000, arbitrary: { runs: 300 } }
  )

  it.effect.prop(
    "any storable event name is escaped alike",
    [Schema.String, PositiveInt32, Instant],
    ([name, accountId, at]) => bothWays(storable(name), accountId, `{"subscription_id":1}`, render(at)).pipe(Effect.asVoid),
    { timeout: 120_000, arbitrary: { runs: 300 } }
  )
})
