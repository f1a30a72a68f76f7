/**
 * A failure on our side is reported as ours (libs/runtime/src/Receiver.ts
 * `Outcome.ours`): the receiver client in a child process under a low
 * descriptor limit (`prlimit --nofile`), with every descriptor taken
 * (test/dispatcher/descriptors-child.ts). An attempt to a receiver by
 * address fails with EMFILE when it opens its socket, one by name when the
 * system resolver cannot read /etc/hosts (which `getaddrinfo` reports as a
 * name that does not exist): both are ours, and no connection reaches the
 * receiver. With the descriptors given back, the next attempt is delivered.
 * And the socket bound: the concurrency plus a margin, under what the
 * descriptor limit leaves (`boundUnder`), read from the limit itself.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { boundUnder, descriptorLimit, RESERVED_DESCRIPTORS, SOCKET_MARGIN, socketBound } from "../../libs/runtime/src/Receiver.ts"
import { startReceiver } from "../support/Receivers.ts"

const CHILD = fileURLToPath(new URL("./descriptors-child.ts", import.meta.url))
/** Enough for Node to start and load the client; the child takes the rest. */
const DESCRIPTORS = 256

const Outcome = Schema.Struct({
  ok: Schema.Boolean,
  responseCode: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  detail: Schema.NullOr(Schema.String),
  ours: Schema.Boolean
})
const Report = Schema.Struct({
  bound: Schema.Number,
  held: Schema.Number,
  starved: Outcome,
  starvedByName: Outcome,
  after: Outcome
})

const hasPrlimit = spawnSync("prlimit", ["--version"]).status === 0

/** Runs the child under the limit: its report, or its output when it failed. */
const runChild = (args: ReadonlyArray<string>) =>
  Effect.callback<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resume) => {
    const child = hasPrlimit
      ? spawn("prlimit", [`--nofile=${DESCRIPTORS}:${DESCRIPTORS}`, process.execPath, CHILD, ...args], { timeout: 30_000 })
      : spawn(process.execPath, [CHILD, ...args], { timeout: 30_000 })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.once("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
  })

describe("the receiver client's socket bound and the descriptor limit", () => {
  it("the concurrency plus a margin, never more than the limit leaves beside the reserve", () => {
    assert.strictEqual(socketBound(32), 32 + SOCKET_MARGIN)
    assert.strictEqual(boundUnder(socketBound(32), 300), 36)
    assert.strictEqual(boundUnder(socketBound(500), 300), 300 - RESERVED_DESCRIPTORS)
    assert.strictEqual(boundUnder(36, RESERVED_DESCRIPTORS), 1)
    assert.strictEqual(boundUnder(36, undefined), 36)
  })

  it("descriptorLimit is this process's `ulimit -n`", () => {
    const shell = spawnSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" })
    const expected = shell.stdout.trim()
    assert.strictEqual(String(descriptorLimit() ?? "unlimited"), expected)
  })
})

describe("the receiver client out of descriptors", () => {
  it.live("an attempt that meets EMFILE is ours; none reaches the receiver; the next one is delivered", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      const byName = `http://localhost:${receiver.port}/hook`
      const finished = yield* runChild([receiver.url, byName])
      assert.strictEqual(finished.code, 0, finished.stderr)
      const report = Schema.decodeUnknownSync(Schema.fromJsonString(Report))(finished.stdout.trim())
      if (hasPrlimit) {
        assert.isBelow(report.held, DESCRIPTORS)
        // 400 attempts asked for; the limit leaves room for fewer sockets.
        assert.strictEqual(report.bound, DESCRIPTORS - RESERVED_DESCRIPTORS)
      }

      assert.strictEqual(report.starved.ok, false)
      assert.strictEqual(report.starved.error, "connection_error")
      assert.include(report.starved.detail ?? "", "EMFILE")
      assert.isTrue(report.starved.ours)

      assert.strictEqual(report.starvedByName.ok, false)
      assert.strictEqual(report.starvedByName.error, "dns_error")
      assert.include(report.starvedByName.detail ?? "", "EMFILE")
      assert.isTrue(report.starvedByName.ours)

      assert.deepStrictEqual(
        [report.after.ok, report.after.responseCode, report.after.ours],
        [true, 204, false]
      )
      assert.strictEqual(receiver.received.length, 1)
      assert.strictEqual(receiver.connections(), 1)
    }), 40_000)
})
