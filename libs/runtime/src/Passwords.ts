/**
 * Staff passwords (docs/operations.md "schools create": a slow hash): hashing
 * and checking them is CPU work, done here, outside persistence, which only
 * stores and reads the hash. Stored as `scrypt$N$r$p$salt$hash` (salt and
 * hash base64url), so the cost can be raised later without invalidating the
 * hashes already stored.
 */
import * as Effect from "effect/Effect"
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"

const N = 16384
const R = 8
const P = 1
const KEY_LENGTH = 32
const SALT_LENGTH = 16

const derive = (password: string, salt: Buffer, n: number, r: number, p: number, length: number) =>
  Effect.callback<Buffer, Error>((resume) => {
    scrypt(password.normalize("NFC"), salt, length, { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 }, (error, key) => {
      resume(error === null ? Effect.succeed(key) : Effect.fail(error))
    })
  })

/** `scrypt$16384$8$1$<salt>$<hash>`. */
export const hashPassword = (password: string): Effect.Effect<string> =>
  Effect.gen(function*() {
    const salt = randomBytes(SALT_LENGTH)
    const key = yield* derive(password, salt, N, R, P, KEY_LENGTH)
    return `scrypt$${N}$${R}$${P}$${salt.toString("base64url")}$${key.toString("base64url")}`
  }).pipe(Effect.orDie)

/** Whether `password` matches `stored`; a malformed or disabled hash (e.g. `!`) never matches. */
export const verifyPassword = (password: string, stored: string): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const parts = stored.split("$")
    if (parts.length !== 6 || parts[0] !== "scrypt") return false
    const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
    const salt = Buffer.from(parts[4] ?? "", "base64url")
    const expected = Buffer.from(parts[5] ?? "", "base64url")
    const sane = [n, r, p].every(Number.isSafeInteger) && n > 1 && n <= 1 << 20 && r > 0 && r <= 32 && p > 0 && p <= 16
    if (!sane || salt.length === 0 || expected.length === 0) return false
    const key = yield* derive(password, salt, n, r, p, expected.length)
    return timingSafeEqual(key, expected)
  }).pipe(Effect.orElseSucceed(() => false))
