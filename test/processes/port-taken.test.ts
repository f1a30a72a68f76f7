/**
 * `start:api` on an address it cannot listen on (docs/operations.md
 * "Settings": PORT, HOST; docs/development.md "Runtime"): no "listening"
 * line, one error line in the configured log format on stderr naming the
 * address and EADDRINUSE, nothing on stdout, exit 1. A real process on a
 * port the test holds.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { entryPoints, heldPort, lines, run } from "../support/Processes.ts"


describe("start:api with its port taken", () => {
  it.live.each(["json", "pretty"] as const)("LOG_FORMAT=%s: one error line on stderr, no listening line, exit 1", (format) =>
    Effect.gen(function*() {
      const port = yield* heldPort
      const finished = yield* run(entryPoints.api, [], {
        DATABASE_URL: "postgres://school:secret@127.0.0.1:1/school",
        PORT: String(port),
        HOST: "127.0.0.1",
        LOG_FORMAT: format,
        // A real key: without one the API also warns about the development key.
        WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString("base64")
      })
      assert.strictEqual(finished.code, 1, finished.stderr)
      assert.strictEqual(finished.stdout, "")
      const errorLines = lines(finished.stderr)
      assert.strictEqual(errorLines.length, 1, finished.stderr)
      const line = errorLines[0] ?? ""
      assert.notMatch(line, /listening/i)
      assert.include(line, `cannot listen on 127.0.0.1:${port}`)
      assert.include(line, "EADDRINUSE")
      if (format === "json") {
        const entry: unknown = JSON.parse(line)
        assert.deepInclude(entry, { level: "ERROR" })
      } else {
        assert.match(line, /ERROR/)
      }
    }).pipe(Effect.scoped), 60_000)
})
