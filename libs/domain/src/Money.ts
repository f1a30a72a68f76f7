/**
 * Money (docs/integrators.md "Reading", "Event catalog"): the public API speaks whole kopecks (integers);
 * the payment.received webhook speaks roubles with kopecks after a point,
 * the same value as stored. Conversion never goes through a float product:
 * roubles are written as decimal text from the integer's digits, and that
 * text is the number (JSON.stringify of the number gives the same text back).
 */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

/** Whole kopecks, within the range JSON numbers carry exactly. */
export const Kopecks = Schema.Int.check(
  Schema.isBetween({ minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER })
)

/** An `int8` column as the driver returns it (bigint) to kopecks, refusing what JSON cannot carry. */
export const KopecksFromBigInt = Schema.BigInt.pipe(
  Schema.decodeTo(
    Kopecks,
    SchemaTransformation.transform({
      decode: (n: bigint) => Number(n),
      encode: (n: number) => BigInt(n)
    })
  )
)

/**
 * Kopecks as the plain decimal text of roubles: no exponent, no trailing
 * zero after the point, no point for whole roubles (150050 → "1500.5",
 * 100 → "1", 1 → "0.01", 0 → "0"). Built from the integer's digits alone.
 */
export const roublesText = (kopecks: number): string => {
  const sign = kopecks < 0 ? "-" : ""
  const abs = Math.abs(kopecks)
  const whole = Math.trunc(abs / 100)
  const cents = abs % 100
  if (cents === 0) return `${sign}${whole}`
  const fraction = String(cents).padStart(2, "0").replace(/0$/u, "")
  return `${sign}${whole}.${fraction}`
}

/**
 * Kopecks as roubles, e.g. 123456 → 1234.56: the number that decimal text
 * denotes (one parse, no arithmetic), so `JSON.stringify` writes that same
 * text for every amount a payment can have (up to MAX_PAYMENT_KOPECKS).
 */
export const kopecksToRoubles = (kopecks: number): number => Number(roublesText(kopecks))

/** Roubles as kopecks, rounded to the nearest kopeck (what docs/integrators.md "Event catalog" tells a client to do). */
export const roublesToKopecks = (roubles: number): number => Math.round(Number((roubles * 100).toFixed(4)))

/**
 * The largest single payment the back office accepts: 10^12 kopecks (ten
 * billion roubles), far above any school fee and far below where a rouble
 * amount stops being exact in a JSON number (docs/decisions.md "Writes").
 */
export const MAX_PAYMENT_KOPECKS = 1_000_000_000_000

/** A payment's amount in a request: a positive whole number of kopecks, at most MAX_PAYMENT_KOPECKS. */
export const PaymentKopecks = Schema.Number.annotate({ message: "Expected an integer number of kopecks" }).check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1, maximum: MAX_PAYMENT_KOPECKS }, {
    message: `Expected a positive whole number of kopecks, at most ${MAX_PAYMENT_KOPECKS}`
  })
)
