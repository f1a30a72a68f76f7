/**
 * Input the validators used to accept and the database rejected
 * (docs/decisions.md "Requests and responses", "Lists", "GET /lessons",
 * "Idempotency"), over HTTP against a real database: each is now 422
 * validation_failed on its field, never 500:
 * - `updated_since` and `starts_at` beyond ±14:00 or outside years 1..9999
 *   as instants (generated offsets and instants at the ends);
 * - GET /lessons at the ends of its date range;
 * - integers in paths and queries that are not plain decimals (generated
 *   spellings);
 * and a write body no operation can read (Content-Encoding, a charset other
 * than UTF-8, bytes that are not UTF-8) is answered without being stored
 * under its Idempotency-Key: the same key then runs with a readable body.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { gzipSync } from "node:zlib"
import { expectError, pageOf, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, funnel } from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, {
  readonly schoolId: number
  readonly writeKey: string
  readonly studentId: number
  readonly groupId: number
}>()("test/api/hardening-input/World") {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const school = yield* Fixtures.school("pro", "Inputs")
      yield* funnel(school.schoolId, "Main", true, [["Incoming", 10]])
      const [studentId = 0] = yield* Fixtures.students(school.schoolId, school.filialId, 1, "Student")
      return World.of({
        schoolId: school.schoolId,
        writeKey: yield* Fixtures.key(school.schoolId, { scope: "write" }),
        studentId,
        groupId: yield* Fixtures.group(school.schoolId, school.filialId, "Chess", 500)
      })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

let n = 0
const freshKey = () => `input-${++n}-${Math.random().toString(36).slice(2)}`

const int = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))
const pad = (v: number, width: number) => String(Math.abs(v)).padStart(width, "0")

const fieldsOf = (reply: Parameters<typeof expectError>[0]) => Object.keys(expectError(reply, 422, "validation_failed").fields ?? {})

/** An offset beyond ±14:00 (PostgreSQL itself refuses those beyond ±15:59). */
const FarOffset = Schema.Union([int(14 * 60 + 1, 99 * 60 + 59), int(-(99 * 60 + 59), -(14 * 60 + 1))])
const offsetText = (minutes: number) => `${minutes < 0 ? "-" : "+"}${pad(Math.trunc(minutes / 60), 2)}:${pad(minutes % 60, 2)}`

layer(Env, { excludeTestServices: true })("hardening: input", (it) => {
  describe("timestamps: one range, checked on the instant", () => {
    it.effect.prop(
      "updated_since with an offset beyond ±14:00 is validation_failed on updated_since (GET /students, /payments)",
      [FarOffset, int(0, 59)],
      ([offset, minute]) =>
        Effect.gen(function*() {
          const world = yield* World
          const server = yield* TestServer
          const value = encodeURIComponent(`2026-01-01T00:${pad(minute, 2)}:00${offsetText(offset)}`)
          for (const list of ["/students", "/payments"]) {
            const reply = yield* server.raw.get(`${V1}${list}?updated_since=${value}`, world.writeKey)
            assert.deepStrictEqual(fieldsOf(reply), ["updated_since"], reply.text)
          }
        }),
      { timeout: 60_000, arbitrary: { runs: 25 } }
    )

    it.effect("the probe's timestamps: refused on the field; the ends of the range are read to the microsecond", () =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        for (const value of ["2026-01-01T00:00:00-23:59", "2026-01-01T00:00:00+16:00", "9999-12-31T23:00:00-05:00", "0000-12-31T23:00:00Z"]) {
          const reply = yield* server.raw.get(`${V1}/students?updated_since=${encodeURIComponent(value)}`, world.writeKey)
          assert.deepStrictEqual(fieldsOf(reply), ["updated_since"], `${value}: ${reply.text}`)
        }
        for (const value of ["0001-01-01T00:00:00-14:00", "9999-12-31T23:59:59.999999Z", "2026-01-01T00:00:00+14:00"]) {
          const reply = yield* server.raw.get(`${V1}/payments?updated_since=${encodeURIComponent(value)}`, world.writeKey)
          assert.strictEqual(reply.status, 200, `${value}: ${reply.text}`)
        }
      }))

    it.effect("starts_at beyond the range as an instant, or with a far offset, is validation_failed on starts_at", () =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        for (const startsAt of ["9999-12-31T23:00:00-05:00", "2026-01-01T00:00:00-23:59", "2026-01-01T00:00:00+16:00"]) {
          const reply = yield* server.raw.post(`${V1}/demo-lessons`, {
            key: world.writeKey,
            idempotencyKey: freshKey(),
            body: { user_id: world.studentId, group_id: world.groupId, starts_at: startsAt }
          })
          assert.deepStrictEqual(fieldsOf(reply), ["starts_at"], `${startsAt}: ${reply.text}`)
        }
        // Inside the range, any offset: stored as that instant, returned in UTC with microseconds.
        const reply = yield* server.raw.post(`${V1}/demo-lessons`, {
          key: world.writeKey,
          idempotencyKey: freshKey(),
          body: { user_id: world.studentId, group_id: world.groupId, starts_at: "9999-12-31T18:59:59.123456-05:00" }
        })
        assert.strictEqual(reply.status, 201, reply.text)
        assert.include(reply.text, "\"9999-12-31T23:59:59.123456Z\"")
      }))
  })

  describe("GET /lessons at the ends of its dates", () => {
    it.effect("from=to=9999-12-31 is a one-day window; 0001-01-01 is accepted; year 0 is validation_failed on from", () =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        const last = yield* server.raw.get(`${V1}/lessons?from=9999-12-31&to=9999-12-31`, world.writeKey)
        assert.strictEqual(last.status, 200, last.text)
        assert.strictEqual(pageOf(Schema.Unknown, last).meta.total, 0)
        const first = yield* server.raw.get(`${V1}/lessons?from=0001-01-01&to=0001-01-01`, world.writeKey)
        assert.strictEqual(first.status, 200, first.text)
        const zero = yield* server.raw.get(`${V1}/lessons?from=0000-01-01&to=0001-01-01`, world.writeKey)
        assert.deepStrictEqual(fieldsOf(zero), ["from"], zero.text)
        const after = yield* server.raw.get(`${V1}/lessons?from=9999-12-31&to=10000-01-01`, world.writeKey)
        assert.deepStrictEqual(fieldsOf(after), ["to"], after.text)
      }))
  })

  describe("integers are plain decimals, in paths and queries", () => {
    /** A spelling of 1..100 that is not its plain decimal. */
    const Odd = Schema.Struct({
      n: int(1, 100),
      how: Schema.Literals(["plus", "zero", "fraction", "exponent", "space", "hex", "empty", "underscore"])
    })
    const spell = ({ how, n }: typeof Odd.Type): string => {
      switch (how) {
        case "plus":
          return `+${n}`
        case "zero":
          return `0${n}`
        case "fraction":
          return `${n}.0`
        case "exponent":
          return n % 10 === 0 ? `${n / 10}e1` : `${n}e0`
        case "space":
          return ` ${n}`
        case "hex":
          return `0x${n.toString(16)}`
        case "empty":
          return ""
        case "underscore":
          return `${n}_0`
      }
    }

    it.effect.prop(
      "page, per_page and the student id: validation_failed naming the parameter",
      [Odd],
      ([odd]) =>
        Effect.gen(function*() {
          const world = yield* World
          const server = yield* TestServer
          const text = encodeURIComponent(spell(odd))
          for (const [path, field] of [[`/students?page=${text}`, "page"], [`/groups?per_page=${text}`, "per_page"]] as const) {
            const reply = yield* server.raw.get(`${V1}${path}`, world.writeKey)
            assert.deepStrictEqual(fieldsOf(reply), [field], `${path}: ${reply.text}`)
          }
          // (Empty, `/students/` and `/students//groups` have an empty id.)
          const card = yield* server.raw.get(`${V1}/students/${text}`, world.writeKey)
          assert.deepStrictEqual(fieldsOf(card), ["id"], `${text}: ${card.text}`)
          const enroll = yield* server.raw.post(`${V1}/students/${text}/groups`, {
            key: world.writeKey,
            idempotencyKey: freshKey(),
            body: { group_id: world.groupId }
          })
          assert.deepStrictEqual(fieldsOf(enroll), ["id"], `${text}: ${enroll.text}`)
        }),
      { timeout: 60_000, arbitrary: { runs: 40 } }
    )

    it.effect("the probe's spellings", () =>
      Effect.gen(function*() {
        const world = yield* World
        const server = yield* TestServer
        for (const id of ["1e3", "%2B5", "5.0", "007"]) {
          assert.deepStrictEqual(fieldsOf(yield* server.raw.get(`${V1}/students/${id}`, world.writeKey)), ["id"], id)
        }
        for (const perPage of ["1.0", "1e1", "%205", "0x10", ""]) {
          const reply = yield* server.raw.get(`${V1}/students?per_page=${perPage}`, world.writeKey)
          assert.deepStrictEqual(fieldsOf(reply), ["per_page"], perPage)
        }
        const plain = yield* server.raw.get(`${V1}/students/${world.studentId}?per_page=10`, world.writeKey)
        assert.strictEqual(plain.status, 200, plain.text)
      }))
  })

  describe("a body no operation can read is not stored under its key", () => {
    const send = (key: string, idempotencyKey: string, body: Uint8Array, headers: Record<string, string>) =>
      Effect.flatMap(TestServer, (server) => server.raw.post(`${V1}/leads`, { key, idempotencyKey, body, headers }))

    const ErrorCode = Schema.Struct({ error: Schema.Struct({ code: Schema.String }) })
    const json = new TextEncoder().encode(JSON.stringify({ phone: "12345", name: "Zoë" }))
    const latin1 = new Uint8Array([...new TextEncoder().encode("{\"phone\":\"12345\",\"name\":\"Zo"), 0xeb, ...new TextEncoder().encode("\"}")])

    const cases: ReadonlyArray<readonly [string, Uint8Array, Record<string, string>, number, string]> = [
      ["gzip", gzipSync(json), { "content-type": "application/json", "content-encoding": "gzip" }, 415, "unsupported_media_type"],
      ["br on plain bytes", json, { "content-type": "application/json", "content-encoding": "br" }, 415, "unsupported_media_type"],
      ["charset latin1", latin1, { "content-type": "application/json; charset=latin1" }, 415, "unsupported_media_type"],
      ["charset \"iso-8859-1\"", latin1, { "content-type": "application/json; charset=\"ISO-8859-1\"" }, 415, "unsupported_media_type"],
      ["invalid UTF-8", latin1, { "content-type": "application/json" }, 422, "validation_failed"]
    ]

    for (const [name, body, headers, status, code] of cases) {
      it.effect(`${name}: ${status} ${code}, nothing stored; the same key then runs`, () =>
        Effect.gen(function*() {
          const world = yield* World
          const key = freshKey()
          const records = yield* count("idempotency_keys", world.schoolId)
          const leads = yield* count("leads", world.schoolId)
          const refused = yield* send(world.writeKey, key, body, headers)
          assert.strictEqual(refused.status, status, refused.text)
          assert.strictEqual(Schema.decodeUnknownSync(ErrorCode)(JSON.parse(refused.text)).error.code, code)
          if (status === 415 && headers["content-encoding"] !== undefined) {
            assert.strictEqual(refused.headers.get("accept-encoding"), "identity")
          }
          assert.strictEqual(yield* count("idempotency_keys", world.schoolId), records)
          assert.strictEqual(yield* count("leads", world.schoolId), leads)
          // Nothing was stored: the same key with a readable body runs and creates the lead.
          const ran = yield* send(world.writeKey, key, json, { "content-type": "application/json; charset=UTF-8" })
          assert.strictEqual(ran.status, 201, ran.text)
          assert.isNull(ran.headers.get("idempotent-replayed"))
          assert.include(ran.text, "Zoë")
          assert.strictEqual(yield* count("leads", world.schoolId), leads + 1)
        }))
    }
  })
})
