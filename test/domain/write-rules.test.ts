/**
 * Property tests of the pure rules behind the writes: the
 * Idempotency-Key format and what a repeat does with the record it finds,
 * the phone rule, the lead's status choice, the lead's defaults and the text
 * fields. Schemas are the arbitraries; strings that reach PostgreSQL in other
 * tests are constrained, here any string is fair game.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option, Result, Schema } from "effect"
import { Errors, Idempotency, Leads, Phone, Text } from "@school/domain"

const Printable = Schema.String.check(Schema.isPattern(/^[\x20-\x7E]{1,255}$/))
const AnyString = Schema.String
const Age = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 * 24 * 60 * 60 * 1000 }))

describe("Idempotency-Key (docs/decisions.md \"Idempotency\": 1 to 255 printable ASCII)", () => {
  it.prop("1 to 255 printable ASCII characters are accepted unchanged", [Printable], ([key]) => {
    const result = Idempotency.validateKey(key)
    assert.isTrue(Result.isSuccess(result))
    assert.strictEqual(Result.getOrThrow(result), key)
  })

  it.prop("any string is accepted exactly when it is 1..255 characters of 0x20..0x7E", [AnyString], ([key]) => {
    const expected = key.length >= 1 && key.length <= 255 && [...key].every((c) => c >= " " && c <= "~")
    const result = Idempotency.validateKey(key)
    assert.strictEqual(Result.isSuccess(result), expected)
    if (Result.isFailure(result)) {
      assert.instanceOf(result.failure, Errors.ValidationFailed)
      assert.deepStrictEqual(Object.keys(result.failure.fields ?? {}), ["Idempotency-Key"])
    }
  })

  it.prop("a printable key made longer than 255 characters is refused", [Printable], ([key]) => {
    const long = key.repeat(Math.ceil(256 / key.length))
    assert.isTrue(Result.isFailure(Idempotency.validateKey(long)))
  })

  it("absent is missing_idempotency_key naming the header; empty is validation_failed", () => {
    const missing = Idempotency.validateKey(undefined)
    assert.isTrue(Result.isFailure(missing) && missing.failure instanceof Errors.MissingIdempotencyKey)
    if (Result.isFailure(missing)) assert.deepStrictEqual(Object.keys(missing.failure.fields ?? {}), ["Idempotency-Key"])
    const empty = Idempotency.validateKey("")
    assert.isTrue(Result.isFailure(empty) && empty.failure instanceof Errors.ValidationFailed)
  })

  it.prop("the operation is the method and the concrete path", [Schema.String, Schema.String], ([a, b]) => {
    assert.strictEqual(Idempotency.operationOf("post", `/x/${a}`), `POST /x/${a}`)
    if (a !== b) assert.notStrictEqual(Idempotency.operationOf("POST", `/x/${a}`), Idempotency.operationOf("POST", `/x/${b}`))
  })
})

describe("what a repeat does with the record it finds (docs/decisions.md \"Idempotency\": 60 s, 24 h)", () => {
  const policy = Idempotency.DEFAULT_POLICY

  it.prop("a completed record is replayed for 24 hours, then runs again", [Age], ([ageMs]) => {
    assert.strictEqual(
      Idempotency.decide({ completed: true, ageMs }, policy),
      ageMs > policy.retentionMs ? "take-over" : "replay"
    )
  })

  it.prop("a running first attempt is waited for up to 60 s, then taken over", [Age], ([ageMs]) => {
    assert.strictEqual(
      Idempotency.decide({ completed: false, ageMs }, policy),
      ageMs > policy.staleAfterMs ? "take-over" : "wait"
    )
  })

  it.prop("never waits on a completed record, never replays a running one; older never means less", [
    Schema.Boolean,
    Age,
    Age
  ], ([completed, a, b]) => {
    const rank = { replay: 0, wait: 0, "take-over": 1 } as const
    const [younger, older] = a <= b ? [a, b] : [b, a]
    const dy = Idempotency.decide({ completed, ageMs: younger }, policy)
    const dol = Idempotency.decide({ completed, ageMs: older }, policy)
    assert.notStrictEqual(dy, completed ? "wait" : "replay")
    assert.isTrue(rank[dy] <= rank[dol])
  })

  it("the limits themselves: exactly 60 s still waits, exactly 24 h still replays", () => {
    assert.strictEqual(Idempotency.decide({ completed: false, ageMs: 60_000 }), "wait")
    assert.strictEqual(Idempotency.decide({ completed: false, ageMs: 60_001 }), "take-over")
    assert.strictEqual(Idempotency.decide({ completed: true, ageMs: 86_400_000 }), "replay")
    assert.strictEqual(Idempotency.decide({ completed: true, ageMs: 86_400_001 }), "take-over")
  })

  it.prop("poll pauses are positive and at most 50 ms", [Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10_000 }))], ([n]) => {
    const delay = Idempotency.pollDelayMs(n)
    assert.isTrue(delay > 0 && delay <= 50)
  })
})

describe("phone (docs/decisions.md \"Writes\": 5 to 20 digits once + - ( ) and spaces are removed)", () => {
  const PhoneChar = Schema.Literals(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "-", "(", ")", " "])
  const Chars = Schema.Array(PhoneChar).check(Schema.isMaxLength(40))
  const digits = (s: string) => [...s].filter((c) => c >= "0" && c <= "9").length

  it.prop("made of digits and separators: valid exactly with 5..20 digits, and stored trimmed", [Chars, Chars], ([
    body,
    padding
  ]) => {
    const raw = padding.filter((c) => c === " ").join("") + body.join("") + " "
    const result = Phone.validatePhone(raw)
    const n = digits(raw)
    assert.strictEqual(Result.isSuccess(result), n >= 5 && n <= 20)
    if (Result.isSuccess(result)) assert.strictEqual(result.success, raw.trim())
  })

  it.prop("any other character makes it invalid", [Chars, AnyString], ([body, other]) => {
    const bad = [...other].find((c) => !"0123456789+-() ".includes(c) && c.trim() !== "")
    if (bad === undefined) return
    const phone = body.join("").slice(0, 5) + bad + "12345"
    assert.isTrue(Result.isFailure(Phone.validatePhone(phone)))
  })

  it.prop("validation is idempotent and agrees with the request schema", [AnyString], ([raw]) => {
    const once = Phone.validatePhone(raw)
    if (Result.isSuccess(once)) {
      assert.deepStrictEqual(Phone.validatePhone(once.success), once)
    }
    const decoded = Schema.decodeUnknownResult(Phone.Phone)(raw)
    // The schema also refuses text PostgreSQL cannot store and > 255 characters.
    const storable = Text.isStorable(raw.trim()) && raw.trim().length <= Text.PHONE_MAX
    assert.strictEqual(Result.isSuccess(decoded), Result.isSuccess(once) && storable)
  })
})

describe("the lead's status (the lowest priority value of its funnel)", () => {
  const Priorities = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: -1000, maximum: 1000 })))
  const statusesOf = (priorities: ReadonlyArray<number>, ids: (i: number) => number) =>
    priorities.map((priority, i) => ({ id: ids(i), priority }))

  it.prop("a status of the funnel, with no other status before it by (priority, id)", [Priorities], ([priorities]) => {
    const statuses = statusesOf(priorities, (i) => 1000 - i)
    const chosen = Leads.lowestPriorityStatus(statuses)
    assert.strictEqual(Option.isSome(chosen), statuses.length > 0)
    if (Option.isNone(chosen)) return
    assert.include(statuses, chosen.value)
    for (const s of statuses) {
      assert.isTrue(s.priority > chosen.value.priority || (s.priority === chosen.value.priority && s.id >= chosen.value.id))
    }
  })

  it.prop("the order the statuses come in does not matter", [Priorities, Schema.Int], ([priorities, seed]) => {
    const statuses = statusesOf(priorities, (i) => i + 1)
    const shuffled = [...statuses].sort((a, b) => ((a.id * 7919 + seed) % 97) - ((b.id * 7919 + seed) % 97))
    assert.deepStrictEqual(Leads.lowestPriorityStatus(shuffled), Leads.lowestPriorityStatus(statuses))
  })

  it.prop("its priority is the minimum priority", [Priorities], ([priorities]) => {
    const chosen = Leads.lowestPriorityStatus(statusesOf(priorities, (i) => i + 1))
    if (Option.isSome(chosen)) assert.strictEqual(chosen.value.priority, Math.min(...priorities))
  })
})

describe("the lead's defaults", () => {
  const Optional = Schema.Struct({
    name: Schema.optionalKey(Schema.NullOr(Schema.String)),
    comment: Schema.optionalKey(Schema.NullOr(Schema.String)),
    source: Schema.optionalKey(Schema.NullOr(Schema.Union([Schema.Literal(""), Schema.String]))),
    funnel_id: Schema.optionalKey(Schema.NullOr(Schema.Int))
  })
  it.prop("source defaults to api (also when empty), funnel to 0, name and comment to \"\"", [Optional], ([optional]) => {
    const request: Leads.CreateLeadRequest = { phone: "12345", ...optional }
    const lead = Leads.toNewLead(request)
    assert.strictEqual(lead.phone, request.phone)
    assert.strictEqual(lead.name, request.name ?? "")
    assert.strictEqual(lead.comment, request.comment ?? "")
    assert.strictEqual(lead.source, request.source === undefined || request.source === null || request.source === "" ? "api" : request.source)
    assert.strictEqual(lead.funnelId, request.funnel_id ?? 0)
  })
})

describe("text fields (docs/decisions.md \"Requests and responses\": trimmed, bounded; storable in PostgreSQL)", () => {
  it.prop("decoding trims, and accepts exactly the storable strings of at most max characters once trimmed", [
    AnyString
  ], ([raw]) => {
    const result = Schema.decodeUnknownResult(Text.Text(10))(raw)
    const trimmed = raw.trim()
    assert.strictEqual(Result.isSuccess(result), trimmed.length <= 10 && Text.isStorable(trimmed))
    if (Result.isSuccess(result)) assert.strictEqual(result.success, trimmed)
  })

  it("NUL and unpaired surrogates are not storable; paired ones are", () => {
    assert.isFalse(Text.isStorable("a\u0000"))
    assert.isFalse(Text.isStorable("\ud800"))
    assert.isFalse(Text.isStorable("x\udc00y"))
    assert.isTrue(Text.isStorable("😀 Привет"))
  })
})
