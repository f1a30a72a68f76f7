/**
 * docs/back-office.md runs as written: every ```sh block, in order, in one
 * bash session (`set -euo pipefail`) against the real API and dispatcher
 * processes on this file's database, run as the doc says `npm start` runs
 * them (`WEBHOOK_ALLOW_INSECURE_URLS=true`: its webhook goes to a receiver
 * on loopback), with one substitution: the ports, the doc's
 * `http://127.0.0.1:3000` (what `npm start` listens on) and its receiver's
 * 4000 become free ones. What the doc starts in the background (the
 * receiver) is stopped when the script ends, however it ends: its jobs get
 * SIGTERM on exit, and `bash` kills the script's process group after it;
 * the receiver's port is free again afterwards. A ```json block
 * right after a ```sh block is what that block prints: the reply must have
 * the same shape (keys at every level, value types) and the same `success`,
 * `code`, `status`, `role`, `scope` and `event(s)` values.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { freePort } from "@school/runtime/Ports"
import { startApi, startDispatcher } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { bash, compareOutputs, MARK, ROOT, shellBlocks } from "./support.ts"

const DOC = join(ROOT, "docs/back-office.md")
const DOC_ORIGIN = "http://127.0.0.1:3000"
/** Files the doc's commands leave in the working directory (cookie jars, the receiver's log). */
const LEFTOVERS = ["crm.cookies", "receiver.log"]
/** The doc's receiver port, as it appears in its commands. */
const DOC_RECEIVER = ["127.0.0.1:4000", "PORT=4000"] as const
/**
 * Run before the doc's blocks: on exit, however the script ends, its
 * background jobs (the receiver the doc starts) get SIGTERM.
 */
const STOP_JOBS = "trap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT"

/** Whether `port` can be listened on on 127.0.0.1 now (nothing the doc started still holds it). */
const portFree = (port: number) =>
  Effect.callback<boolean>((resume) => {
    const server = createServer()
    server.once("error", () => resume(Effect.succeed(false)))
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () => server.close(() => resume(Effect.succeed(true))))
  })

const EXACT = new Set(["success", "code", "status", "role", "scope", "event", "events"])

layer(TestDatabase.layer, { excludeTestServices: true })("docs/back-office.md", (it) => {
  it.effect("every sh block runs against the API as written, and prints what the doc shows", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* Effect.orDie(freePort)
      const receiverPort = yield* Effect.orDie(freePort)
      const markdown = readFileSync(DOC, "utf8")
      const blocks = shellBlocks(markdown)
      assert.isAtLeast(blocks.length, 8, "the doc has its examples")
      assert.notInclude(markdown, "93.184.215.14", "no webhook goes to a public host")
      assert.notMatch(markdown, /"url":\s*"https?:\/\/(?!127\.0\.0\.1[:/])/u, "every webhook URL is the local receiver's")
      const ports = (text: string) =>
        text.replaceAll(DOC_ORIGIN, `http://127.0.0.1:${port}`)
          .replaceAll(DOC_RECEIVER[0], `127.0.0.1:${receiverPort}`)
          .replaceAll(DOC_RECEIVER[1], `PORT=${receiverPort}`)
      const script = [
        "set -euo pipefail",
        STOP_JOBS,
        ...blocks.map((block) => `${ports(block.script)}\necho; echo '${MARK}'`)
      ].join("\n")
      // As `WEBHOOK_ALLOW_INSECURE_URLS=true npm start` runs them (docs/back-office.md "Getting started").
      const insecure = { WEBHOOK_ALLOW_INSECURE_URLS: "true" }
      // The API and dispatcher processes are stopped (SIGTERM, waited for) when the scope closes.
      const result = yield* Effect.scoped(Effect.gen(function*() {
        yield* startApi(database.url, port, insecure)
        yield* startDispatcher(database.url, insecure)
        return yield* bash(script, { DATABASE_URL: database.url }, 120_000)
      })).pipe(
        Effect.ensuring(Effect.sync(() => LEFTOVERS.forEach((file) => rmSync(join(ROOT, file), { force: true }))))
      )
      assert.strictEqual(result.code, 0, `${result.stdout}\n${result.stderr}`)
      assert.isTrue(yield* portFree(receiverPort), "the receiver the doc started is stopped")
      const outputs = result.stdout.split(MARK)
      assert.isAtLeast(compareOutputs("docs/back-office.md", blocks, outputs, EXACT), 8, "the documented outputs were compared")
    }), 150_000) // The doc starts a receiver and waits for its deliveries: about 30 s of commands, more on a loaded machine.
})
