/**
 * Money (docs/integrators.md "Event catalog"; libs/domain/src/Money.ts): kopecks → roubles → the JSON
 * text → kopecks round-trips exactly for every amount a payment can have
 * (0 to 10^12), and the JSON text is the plain decimal (1500.5, 0.01, 1),
 * checked against an independent BigInt formatting; the request rule of a
 * payment's amount.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { Money } from "@school/domain"

/** The plain decimal of `kopecks` roubles, by BigInt arithmetic (independent of Money). */
const decimal = (kopecks: number): string => {
  const k = BigInt(kopecks)
  const cents = k % 100n
  if (cents === 0n) return (k / 100n).toString()
  return `${k / 100n}.${cents.toString().padStart(2, "0").replace(/0$/u, "")}`
}

const Amount = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: Money.MAX_PAYMENT_KOPECKS }))
/** Small amounts and the ones near the top, where floats would go wrong first. */
const Small = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 100_000 }))
const Top = Schema.Int.check(
  Schema.isBetween({ minimum: Money.MAX_PAYMENT_KOPECKS - 100_000, maximum: Money.MAX_PAYMENT_KOPECKS })
)

describe("kopecks → roubles → JSON → kopecks", () => {
  for (const [name, arbitrary] of [["0..10^12", Amount], ["small", Small], ["near 10^12", Top]] as const) {
    it.prop(`round-trips exactly, and the JSON text is the plain decimal (${name})`, [arbitrary], ([kopecks]) => {
      const text = JSON.stringify(Money.kopecksToRoubles(kopecks))
      assert.strictEqual(text, decimal(kopecks))
      assert.strictEqual(Money.roublesText(kopecks), text)
      const parsed = Schema.decodeUnknownSync(Schema.Finite)(JSON.parse(text))
      assert.strictEqual(Money.roublesToKopecks(parsed), kopecks)
      // Also inside an object, as a payload carries it.
      const body = JSON.stringify({ amount: Money.kopecksToRoubles(kopecks) })
      assert.strictEqual(body, `{"amount":${decimal(kopecks)}}`)
    }, { arbitrary: { runs: 2000 } })
  }

  it("the documented examples and the edges", () => {
    const cases: ReadonlyArray<readonly [number, string]> = [
      [150050, "1500.5"],
      [100, "1"],
      [1, "0.01"],
      [0, "0"],
      [10, "0.1"],
      [99, "0.99"],
      [123456, "1234.56"],
      [1_000_000_000_000, "10000000000"],
      [999_999_999_999, "9999999999.99"]
    ]
    for (const [kopecks, text] of cases) {
      assert.strictEqual(JSON.stringify(Money.kopecksToRoubles(kopecks)), text)
      assert.strictEqual(Money.roublesText(kopecks), text)
    }
    // The float product the rule avoids: 35 * 0.01 is 0.35000000000000003 in binary.
    assert.notStrictEqual(JSON.stringify(35 * 0.01), "0.35")
    assert.strictEqual(JSON.stringify(Money.kopecksToRoubles(35)), "0.35")
  })
})

describe("a payment's amount in a request", () => {
  const decode = Schema.decodeUnknownOption(Money.PaymentKopecks)
  it("a positive whole number of kopecks up to 10^12", () => {
    for (const ok of [1, 100, 150050, Money.MAX_PAYMENT_KOPECKS]) assert.isTrue(decode(ok)._tag === "Some", String(ok))
    for (const bad of [0, -1, 1.5, Money.MAX_PAYMENT_KOPECKS + 1, "100", null, Number.NaN, Infinity]) {
      assert.isTrue(decode(bad)._tag === "None", String(bad))
    }
  })
})
