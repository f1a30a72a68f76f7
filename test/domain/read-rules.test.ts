/**
 * Property tests of the pure rules behind the read side:
 * pagination arithmetic, the lesson window, key parsing, money conversion
 * and the updated_since format. Schemas are the arbitraries.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option, Result, Schema } from "effect"
import { ApiKey, Ids, LessonWindow, Money, Pagination, Timestamps } from "@school/domain"
import { createHash } from "node:crypto"

const Total = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 20_000 }))
const SmallPage = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 2_000 }))
/** Days since 1970-01-01, spanning 1970..2099. */
const DayNumber = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 47_480 }))
const toDate = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10)

describe("pagination (docs/decisions.md \"Lists\")", () => {
  it.prop("pages partition the list: every item on exactly one page, none past the end", [Total, Pagination.PerPage], ([total, perPage]) => {
    const pages = Math.ceil(total / perPage)
    let seen = 0
    for (let page = 1; page <= pages; page++) {
      const n = Pagination.itemsOnPage({ page, perPage }, total)
      assert.isTrue(n >= 1 && n <= perPage)
      if (page < pages) assert.strictEqual(n, perPage)
      seen += n
    }
    assert.strictEqual(seen, total)
    assert.strictEqual(Pagination.itemsOnPage({ page: pages + 1, perPage }, total), 0)
  })

  it.prop("the SQL window of a page starts where the previous one ended", [SmallPage, Pagination.PerPage], ([page, perPage]) => {
    const w = Pagination.toWindow({ page, perPage })
    assert.strictEqual(w.limit, perPage)
    assert.strictEqual(w.offset, (page - 1) * perPage)
    const next = Pagination.toWindow({ page: page + 1, perPage })
    assert.strictEqual(next.offset, w.offset + w.limit)
  })

  it.prop("defaults: page 1, per_page 20; meta echoes the request and the total", [
    Schema.optional(SmallPage),
    Schema.optional(Pagination.PerPage),
    Total
  ], ([page, perPage, total]) => {
    const request = Pagination.pageRequest({ page, per_page: perPage })
    assert.strictEqual(request.page, page ?? 1)
    assert.strictEqual(request.perPage, perPage ?? 20)
    assert.deepStrictEqual(Pagination.meta(request, total), { page: page ?? 1, per_page: perPage ?? 20, total })
  })

  it.prop("per_page accepts exactly 1..100", [Schema.Int.check(Schema.isBetween({ minimum: -1000, maximum: 1000 }))], ([n]) => {
    const ok = Schema.is(Pagination.PerPage)(n)
    assert.strictEqual(ok, n >= 1 && n <= 100)
  })
})

/** A school's ids: distinct, any order as generated (the model sorts them, as the index does). */
const IdSet = Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Ids.MAX_ID })))
  .check(Schema.isMaxLength(300))

/** What the cursor page's SQL does over `ids` (a sorted set): ids above the window's `after`, in order, `limit` of them. */
const readWindow = (ids: ReadonlyArray<number>, window: { readonly after: number; readonly limit: number }) =>
  ids.filter((id) => id > window.after).slice(0, window.limit)

describe("cursor pagination (docs/decisions.md \"Cursor pagination\")", () => {
  it.prop("a walk from starting_after=0 returns every id once, in order, in ceil(n/per_page) pages", [IdSet, Pagination.PerPage], ([raw, perPage]) => {
    const ids = [...new Set(raw)].sort((a, b) => a - b)
    const seen: Array<number> = []
    let pages = 0
    let request: Pagination.CursorRequest = { startingAfter: 0, perPage }
    for (;;) {
      pages++
      const page = Pagination.cursorPage(request, readWindow(ids, Pagination.toCursorWindow(request)))
      const meta = Pagination.cursorMeta(request, { items: page.items.map((id) => ({ id })), hasMore: page.hasMore })
      assert.strictEqual(meta.starting_after, request.startingAfter)
      assert.strictEqual(meta.per_page, perPage)
      assert.isAtMost(page.items.length, perPage)
      seen.push(...page.items)
      if (!meta.has_more) {
        assert.isNull(meta.next_starting_after)
        break
      }
      assert.strictEqual(page.items.length, perPage)
      assert.strictEqual(meta.next_starting_after, page.items[page.items.length - 1])
      request = { startingAfter: meta.next_starting_after!, perPage }
    }
    assert.deepStrictEqual(seen, ids)
    assert.strictEqual(pages, Math.max(1, Math.ceil(ids.length / perPage)))
  })

  it.prop("has_more is true exactly when an id above the page's last exists", [IdSet, Pagination.PerPage, Pagination.StartingAfter], ([raw, perPage, after]) => {
    const ids = [...new Set(raw)].sort((a, b) => a - b)
    const request = Pagination.listRequest({ starting_after: after, per_page: perPage })
    assert.isTrue(Pagination.isCursor(request))
    if (!Pagination.isCursor(request)) return
    const window = Pagination.toCursorWindow(request)
    assert.strictEqual(window.limit, perPage + 1)
    const page = Pagination.cursorPage(request, readWindow(ids, window))
    const above = ids.filter((id) => id > after)
    assert.deepStrictEqual(page.items, above.slice(0, perPage))
    assert.strictEqual(page.hasMore, above.length > perPage)
  })

  it.prop("starting_after accepts exactly the decimals of 0..2147483647", [Schema.Int.check(Schema.isBetween({ minimum: -3_000_000_000, maximum: 3_000_000_000 }))], ([n]) => {
    const decoded = Schema.decodeUnknownOption(Pagination.StartingAfter)(String(n))
    assert.deepStrictEqual(decoded, n >= 0 && n <= Ids.MAX_ID ? Option.some(n) : Option.none())
  })

  it.prop("starting_after refuses every other spelling", [Schema.String], ([s]) => {
    const decoded = Schema.decodeUnknownOption(Pagination.StartingAfter)(s)
    if (Option.isSome(decoded)) assert.strictEqual(String(decoded.value), s)
  })

  it.prop("the mode: starting_after selects the cursor; page above 1 beside it is refused, on page", [
    Schema.optional(Pagination.Page),
    Schema.optional(Pagination.PerPage),
    Schema.optional(Pagination.StartingAfter)
  ], ([page, perPage, after]) => {
    const request = Pagination.listRequest({ page, per_page: perPage, starting_after: after })
    assert.strictEqual(Pagination.isCursor(request), after !== undefined)
    assert.strictEqual(request.perPage, perPage ?? 20)
    const Query = Schema.Struct({
      page: Schema.optional(Schema.Number),
      starting_after: Schema.optional(Schema.Number)
    }).check(Pagination.pageWithCursorRule)
    const result = Schema.decodeUnknownResult(Query)({ ...(page === undefined ? {} : { page }), ...(after === undefined ? {} : { starting_after: after }) })
    const refused = after !== undefined && page !== undefined && page > 1
    assert.strictEqual(Result.isFailure(result), refused)
  })

  it.prop("listBody: a page answer has {page, per_page, total}; a cursor answer has no total", [IdSet, Pagination.PerPage, Total], ([raw, perPage, total]) => {
    const items = [...new Set(raw)].sort((a, b) => a - b).slice(0, perPage).map((id) => ({ id }))
    const paged = Pagination.listBody({ _tag: "Page", request: { page: 1, perPage }, items, total })
    assert.deepStrictEqual(paged.meta, { page: 1, per_page: perPage, total })
    const cursor = Pagination.listBody({ _tag: "Cursor", request: { startingAfter: 0, perPage }, items, hasMore: false })
    assert.deepStrictEqual(cursor.meta, { per_page: perPage, starting_after: 0, has_more: false, next_starting_after: null })
    assert.isTrue(Schema.is(Pagination.ListMeta)(paged.meta) && Schema.is(Pagination.ListMeta)(cursor.meta))
  })
})

describe("lesson window (invalid_window, window_too_large)", () => {
  it.prop("to < from is invalid_window; more than 92 days is window_too_large; otherwise a half-open UTC range", [DayNumber, DayNumber], ([a, b]) => {
    const from = toDate(a)
    const to = toDate(b)
    const result = LessonWindow.validateWindow(from, to)
    const days = b - a
    if (days < 0) {
      assert.isTrue(Result.isFailure(result) && result.failure._tag === "InvalidWindow")
    } else if (days > 92) {
      assert.isTrue(Result.isFailure(result) && result.failure._tag === "WindowTooLarge")
    } else {
      assert.isTrue(Result.isSuccess(result))
      if (Result.isSuccess(result)) {
        assert.strictEqual(result.success.startsFrom, `${from}T00:00:00Z`)
        assert.strictEqual(Date.parse(result.success.startsBefore) - Date.parse(result.success.startsFrom), (days + 1) * 86_400_000)
      }
    }
  })

  it.prop("the boundary: 92 days accepted, 93 rejected, from any start", [DayNumber], ([a]) => {
    assert.isTrue(Result.isSuccess(LessonWindow.validateWindow(toDate(a), toDate(a + 92))))
    assert.isTrue(Result.isFailure(LessonWindow.validateWindow(toDate(a), toDate(a + 93))))
  })

  it.prop("IsoDate accepts exactly the real calendar days", [Schema.String], ([s]) => {
    const ok = Schema.is(LessonWindow.IsoDate)(s)
    const real = /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) &&
      new Date(`${s}T00:00:00Z`).toISOString().startsWith(s)
    assert.strictEqual(ok, real)
  })

  it.prop("every formatted day is an IsoDate", [DayNumber], ([a]) => {
    assert.isTrue(Schema.is(LessonWindow.IsoDate)(toDate(a)))
  })
})

describe("API key format", () => {
  it.prop("any string either parses to prefix+secret that format back to it, or is malformed; never a crash", [Schema.String], ([s]) => {
    const parsed = ApiKey.parseApiKey(s)
    if (Option.isSome(parsed)) {
      assert.strictEqual(ApiKey.formatApiKey(parsed.value), s)
      assert.strictEqual(parsed.value.prefix.length, 8)
      assert.strictEqual(parsed.value.secret.length, 32)
    } else {
      assert.isFalse(/^svc_[a-z0-9]{8}_[A-Za-z0-9]{32}$/.test(s))
    }
  })

  it.prop("strings that look almost like keys are handled too", [
    Schema.String.check(Schema.isMaxLength(10)),
    Schema.String.check(Schema.isMaxLength(40))
  ], ([prefix, secret]) => {
    const candidate = `svc_${prefix}_${secret}`
    const parsed = ApiKey.parseApiKey(candidate)
    const valid = /^[a-z0-9]{8}$/.test(prefix) && /^[A-Za-z0-9]{32}$/.test(secret)
    assert.strictEqual(Option.isSome(parsed), valid)
  })

  it.prop("generated keys always parse back, from any random bytes", [Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 255 }))).check(Schema.isMinLength(1))], ([bytes]) => {
    let i = 0
    const source = (n: number) => Uint8Array.from({ length: n }, () => bytes[i++ % bytes.length]!)
    // Rejection sampling needs some usable bytes: a source that only ever yields bytes
    // rejected for the secret alphabet (>= 248) would never finish, by design.
    if (bytes.every((b) => b >= 248)) return
    const key = ApiKey.generateApiKey(source)
    const parsed = ApiKey.parseApiKey(ApiKey.formatApiKey(key))
    assert.deepStrictEqual(Option.getOrUndefined(parsed), key)
  })

  // Well-formed strings: lone surrogates encode to the same UTF-8 replacement character.
  const Text = Schema.String.check(Schema.makeFilter((s: string) => s.isWellFormed()))
  it.prop("a secret matches its own hash and no other secret's", [Text, Text], ([a, b]) => {
    assert.isTrue(ApiKey.secretMatches(a, ApiKey.hashSecret(a)))
    assert.strictEqual(ApiKey.secretMatches(b, ApiKey.hashSecret(a)), a === b)
  })
  it.prop("the stored hash is the SHA-256 of the secret's UTF-8, as keys issued before hold it", [Text], ([a]) => {
    assert.deepStrictEqual(
      Buffer.from(ApiKey.hashSecret(a)),
      createHash("sha256").update(Buffer.from(a, "utf8")).digest()
    )
  })
})

describe("money", () => {
  const Kop = Schema.Int.check(Schema.isBetween({ minimum: -1e13, maximum: 1e13 }))
  it.prop("kopecks → roubles → kopecks is the identity", [Kop], ([k]) => {
    assert.strictEqual(Money.roublesToKopecks(Money.kopecksToRoubles(k)), k)
  })
  it.prop("roubles have at most two decimals and are the kopecks divided by 100", [Kop], ([k]) => {
    const r = Money.kopecksToRoubles(k)
    assert.isAtMost((String(r).split(".")[1] ?? "").length, 2)
    assert.isBelow(Math.abs(r * 100 - k), 0.01 * Math.max(1, Math.abs(k)) * 1e-9 + 1e-6 + Math.abs(k) * 1e-15)
  })
  it.prop("int8 values beyond what JSON carries exactly are refused, the rest decode", [Schema.BigInt], ([n]) => {
    const decoded = Schema.decodeUnknownOption(Money.KopecksFromBigInt)(n)
    const safe = n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER)
    assert.strictEqual(Option.isSome(decoded), safe)
    if (Option.isSome(decoded)) assert.strictEqual(BigInt(decoded.value), n)
  })
})

describe("updated_since (ISO 8601 with an offset)", () => {
  const Millis = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4_102_444_800_000 }))
  const Offset = Schema.Int.check(Schema.isBetween({ minimum: -14 * 60, maximum: 14 * 60 }))
  it.prop("any instant written with Z or ±HH:MM is accepted and means that instant", [Millis, Offset], ([ms, offset]) => {
    const z = new Date(ms).toISOString()
    assert.isTrue(Timestamps.isIsoInstantWithOffset(z))
    const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23)
    const sign = offset < 0 ? "-" : "+"
    const abs = Math.abs(offset)
    const withOffset = `${local}${sign}${String(Math.trunc(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`
    assert.isTrue(Timestamps.isIsoInstantWithOffset(withOffset))
    assert.strictEqual(Date.parse(withOffset), ms)
  })
  it.prop("without an offset it is refused", [Millis], ([ms]) => {
    assert.isFalse(Timestamps.isIsoInstantWithOffset(new Date(ms).toISOString().slice(0, 23)))
  })
  it.prop("never a crash, and nothing accepted that Date cannot read", [Schema.String], ([s]) => {
    if (Timestamps.isIsoInstantWithOffset(s)) assert.isFalse(Number.isNaN(Date.parse(s)))
  })
})
