/**
 * New request ids (libs/domain/src/RequestId.ts `generate`): 22 base64url
 * characters of 16 random bytes, drawn from a pool refilled 4 KiB at a time;
 * ids drawn across many refills are all different and use the whole
 * alphabet.
 */
import { assert, describe, it } from "@effect/vitest"
import * as RequestId from "@school/domain/RequestId"

describe("request ids", () => {
  it("20 000 new ids (78 refills of the pool): each 22 base64url characters, no two alike", () => {
    const ids = Array.from({ length: 20_000 }, () => RequestId.generate())
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{22}$/)
    assert.strictEqual(new Set(ids).size, ids.length)
    // Every base64url character shows up (the last one of an id carries 4 random bits, the others 6).
    const seen = new Set(ids.join(""))
    assert.strictEqual(seen.size, 64)
  })

  it("a sane id sent by the client is kept; anything else gets a new one", () => {
    assert.strictEqual(RequestId.of("abc-123"), "abc-123")
    assert.match(RequestId.of("a b"), /^[A-Za-z0-9_-]{22}$/)
    assert.match(RequestId.of(undefined), /^[A-Za-z0-9_-]{22}$/)
  })
})
