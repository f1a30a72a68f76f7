/**
 * `npm start` with a port of its processes taken (docs/operations.md "npm
 * start"): it checks PORT, DISPATCHER_PORT and METRICS_PORT before it starts
 * anything, so a second `npm start` while one runs is one error line naming
 * the ports in use and suggesting free ones (`PORT=… npm start`), exit 1,
 * no banner, and no embedded PostgreSQL started (its DATA_DIR is never
 * made). The test holds the ports itself: never a fixed port.
 */
import { assert, describe, it } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { entryPoints, heldPort, lines, run } from "../support/Processes.ts"


/** A DATA_DIR that does not exist: `npm start` would make it if it started the embedded PostgreSQL. */
const unusedDataDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "school-start-second-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => Path.join(dir, "postgres")))

/** Runs `npm start` (its entry point) with `env`, asserting what every refusal shares; its one line. */
const refused = (env: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const dataDir = yield* unusedDataDir
    const finished = yield* run(entryPoints.start, [], { HOST: "127.0.0.1", DATA_DIR: dataDir, ...env })
    assert.strictEqual(finished.code, 1, finished.stderr)
    assert.strictEqual(finished.stdout, "", "no banner")
    const errorLines = lines(finished.stderr)
    assert.strictEqual(errorLines.length, 1, finished.stderr)
    assert.isFalse(Fs.existsSync(dataDir), "nothing started: no embedded PostgreSQL")
    return errorLines[0] ?? ""
  })

/** A JSON log line: `message` is a string (docs/operations.md "Log lines"). */
const jsonLine = Schema.decodeUnknownSync(
  Schema.fromJsonString(Schema.Struct({ message: Schema.String, level: Schema.String, service: Schema.String }))
)

/** The port a `SETTING=port` suggestion of the line proposes. */
const suggested = (line: string, setting: string): number => Number(new RegExp(`\\b${setting}=(\\d+)\\b`).exec(line)?.[1])

describe("npm start with a port taken", () => {
  it.live.each(["json", "pretty"] as const)("PORT taken, LOG_FORMAT=%s: one line naming it and suggesting a free PORT, exit 1, no banner", (format) =>
    Effect.gen(function*() {
      const port = yield* heldPort
      const line = yield* refused({ PORT: String(port), DISPATCHER_PORT: "0", LOG_FORMAT: format })
      assert.include(line, `port ${port} (PORT) on 127.0.0.1 is already in use`)
      assert.include(line, "npm start")
      const proposal = suggested(line, "PORT")
      assert.isTrue(Number.isInteger(proposal) && proposal !== port, line)
      assert.match(line, new RegExp(`PORT=${proposal} npm start`))
      if (format === "json") {
        const entry = jsonLine(line)
        assert.strictEqual(entry.level, "ERROR")
        assert.strictEqual(entry.service, "cli")
      } else {
        assert.match(line, /ERROR/)
      }
    }).pipe(Effect.scoped), 60_000)

  it.live("PORT and DISPATCHER_PORT taken, as by a first npm start: one line naming both, a free port suggested for each", () =>
    Effect.gen(function*() {
      const port = yield* heldPort
      const dispatcherPort = yield* heldPort
      const line = yield* refused({ PORT: String(port), DISPATCHER_PORT: String(dispatcherPort), LOG_FORMAT: "json" })
      const { message } = jsonLine(line)
      assert.include(message, `ports ${port} (PORT) and ${dispatcherPort} (DISPATCHER_PORT) on 127.0.0.1 are already in use`)
      const proposals = [suggested(message, "PORT"), suggested(message, "DISPATCHER_PORT")]
      for (const proposal of proposals) {
        assert.isTrue(Number.isInteger(proposal) && proposal !== port && proposal !== dispatcherPort, message)
      }
      assert.notStrictEqual(proposals[0], proposals[1])
      assert.match(message, /PORT=\d+ DISPATCHER_PORT=\d+ npm start$/)
    }).pipe(Effect.scoped), 60_000)

  it.live("METRICS_PORT taken: one line naming it", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const metricsPort = yield* heldPort
      const line = yield* refused({ PORT: String(port), DISPATCHER_PORT: "0", METRICS_PORT: String(metricsPort), LOG_FORMAT: "json" })
      const { message } = jsonLine(line)
      assert.include(message, `port ${metricsPort} (METRICS_PORT) on 127.0.0.1 is already in use`)
      assert.notInclude(message, `(PORT)`)
      assert.isTrue(Number.isInteger(suggested(message, "METRICS_PORT")), message)
    }).pipe(Effect.scoped), 60_000)

  it.live("the same port for two listeners: one line naming both settings", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const line = yield* refused({ PORT: String(port), DISPATCHER_PORT: String(port), LOG_FORMAT: "json" })
      assert.strictEqual(jsonLine(line).message, `PORT and DISPATCHER_PORT are both ${port}: each listener needs a port of its own`)
    }).pipe(Effect.scoped), 60_000)
})
