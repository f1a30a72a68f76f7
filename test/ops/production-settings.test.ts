/**
 * What NODE_ENV=production (the container image's, test/ops/image.test.ts)
 * changes in the settings (docs/operations.md "Settings"): WEBHOOK_SECRET_KEY
 * unset or empty is a start-up failure, one line naming it, instead of the
 * development key; in development (NODE_ENV unset, or anything but
 * `production`) it stays None, the built-in key with its warning. Read from
 * an environment, as the processes read theirs.
 */
import { assert, describe, it } from "@effect/vitest"
import { ApiSettings } from "@school/api/ApiSettings"
import { DispatcherSettings } from "@school/dispatcher/DispatcherSettings"
import { checkAll, type InvalidSetting } from "@school/runtime/SettingKinds"
import { WEBHOOK_SECRET_KEY } from "@school/runtime/Settings"
import { ConfigProvider, Effect, Option } from "effect"
import { randomBytes } from "node:crypto"

const withEnv = (env: Record<string, string>) => <A, E>(self: Effect.Effect<A, E>) =>
  self.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

const MISSING =
  `invalid setting WEBHOOK_SECRET_KEY: expected the base64 of 32 bytes, e.g. from openssl rand -base64 32 (required when NODE_ENV=production), got ""`

const failure = (exit: { readonly _tag: string }, error: InvalidSetting | undefined) => {
  assert.strictEqual(exit._tag, "Failure")
  return error?.message
}

describe("NODE_ENV=production", () => {
  it.effect("WEBHOOK_SECRET_KEY unset or empty: one line naming it; set: the key", () =>
    Effect.gen(function*() {
      for (const env of [{ NODE_ENV: "production" }, { NODE_ENV: "production", WEBHOOK_SECRET_KEY: "" }, { NODE_ENV: " production ", WEBHOOK_SECRET_KEY: "  " }]) {
        const error = yield* Effect.flip(WEBHOOK_SECRET_KEY.asEffect().pipe(withEnv(env)))
        assert.strictEqual(error._tag, "InvalidSetting", JSON.stringify(env))
        assert.strictEqual(error.message, MISSING, JSON.stringify(env))
      }
      const key = randomBytes(32)
      const read = yield* WEBHOOK_SECRET_KEY.asEffect().pipe(withEnv({ NODE_ENV: "production", WEBHOOK_SECRET_KEY: key.toString("base64") }))
      assert.isTrue(Option.isSome(read) && Buffer.from(read.value).equals(key))
      // A malformed key is still reported as malformed, without its text.
      const malformed = yield* Effect.flip(WEBHOOK_SECRET_KEY.asEffect().pipe(withEnv({ NODE_ENV: "production", WEBHOOK_SECRET_KEY: "abc" })))
      assert.strictEqual(malformed.message, `invalid setting WEBHOOK_SECRET_KEY: expected the base64 of 32 bytes, e.g. from openssl rand -base64 32, got "(3 characters, not shown)"`)
    }))

  it.effect("the API's and the dispatcher's start-up check stops at it", () =>
    Effect.gen(function*() {
      for (const settings of [ApiSettings, DispatcherSettings]) {
        const exit = yield* Effect.exit(checkAll(settings).pipe(withEnv({ NODE_ENV: "production" })))
        const error = exit._tag === "Failure" ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined
        assert.strictEqual(failure(exit, error), MISSING)
      }
    }))

  it.effect("in development (NODE_ENV unset, development, test, Production…) no key is the development key: None", () =>
    Effect.gen(function*() {
      for (const env of [{}, { NODE_ENV: "" }, { NODE_ENV: "development" }, { NODE_ENV: "test" }, { NODE_ENV: "Production" }]) {
        assert.isTrue(Option.isNone(yield* WEBHOOK_SECRET_KEY.asEffect().pipe(withEnv(env))), JSON.stringify(env))
        yield* checkAll(ApiSettings).pipe(withEnv(env))
      }
    }))
})
