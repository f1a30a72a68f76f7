/**
 * Money (spec 2.3, 2.4, 6.4): the public API speaks whole kopecks (integers);
 * the payment.received webhook speaks roubles with kopecks after a point,
 * the same value as stored. Conversion never goes through a float product.
 */
import { Schema, SchemaTransformation } from "effect"

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

/** Kopecks as roubles, e.g. 123456 → 1234.56 (exact: one division of an integer by 100). */
export const kopecksToRoubles = (kopecks: number): number => {
  const sign = kopecks < 0 ? "-" : ""
  const abs = Math.abs(kopecks)
  return Number(`${sign}${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, "0")}`)
}

/** Roubles as kopecks, rounded to the nearest kopeck (what spec 6.4 asks a client to do). */
export const roublesToKopecks = (roubles: number): number => Math.round(Number((roubles * 100).toFixed(4)))
