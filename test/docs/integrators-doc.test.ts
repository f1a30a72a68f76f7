/**
 * docs/integrators.md runs as written: its ```js blocks become the files they
 * name, then every ```sh block, in order, runs in one bash session against
 * the real API and dispatcher processes (as `WEBHOOK_ALLOW_INSECURE_URLS=true
 * npm start` runs them) on this file's database. The only changes are the
 * ports: the doc's API on 3000 and webhook receiver on 4000 become free
 * ones. A ```json block right after a ```sh block is what that block prints:
 * the same shape (keys at every level, value types) and the same values of
 * the keys that say what happened (code, reason, mode, event, status).
 *
 * The event catalog: one example per event of libs/domain/src/Events.ts, each
 * a whole delivery body whose payload decodes strictly with its event's schema.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Events } from "@school/domain"
import { freePort } from "@school/runtime/Ports"
import { startApi, startDispatcher } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { bash, compareOutputs, jsonExamples, MARK, printedJson, ROOT, shellBlocks, sourceFiles } from "./support.ts"

const DOC = readFileSync(join(ROOT, "docs/integrators.md"), "utf8")
/** Files the doc's commands write in the working directory, beside the js files. */
const LEFTOVERS = ["sync-state.json", "receiver.log"]
const EXACT = new Set(["code", "reason", "mode", "event", "status", "source"])

const Delivery = Schema.Struct({
  event: Events.EventName,
  account_id: Schema.Int,
  payload: Schema.Unknown,
  timestamp: Schema.String
})

layer(TestDatabase.layer, { excludeTestServices: true })("docs/integrators.md", (it) => {
  it.effect("every js file and sh block runs against the API and the dispatcher as written, and prints what the doc shows", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const apiPort = yield* Effect.orDie(freePort)
      const receiverPort = yield* Effect.orDie(freePort)
      const files = sourceFiles(DOC)
      assert.deepStrictEqual(files.map((file) => file.name), ["sync.mjs", "receiver.mjs"])
      const blocks = shellBlocks(DOC)
      assert.isAtLeast(blocks.length, 8, "the doc has its examples")
      const ports = (text: string) =>
        text.replaceAll("127.0.0.1:3000", `127.0.0.1:${apiPort}`)
          .replaceAll("127.0.0.1:4000", `127.0.0.1:${receiverPort}`)
          .replaceAll("PORT=4000", `PORT=${receiverPort}`)
      const script = [
        "set -euo pipefail",
        ...blocks.map((block) => `${ports(block.script)}\necho; echo '${MARK}'`)
      ].join("\n")
      const cleanUp = Effect.sync(() =>
        [...files.map((file) => file.name), ...LEFTOVERS].forEach((name) => rmSync(join(ROOT, name), { force: true }))
      )
      const insecure = { WEBHOOK_ALLOW_INSECURE_URLS: "true" }
      const result = yield* Effect.scoped(Effect.gen(function*() {
        for (const file of files) writeFileSync(join(ROOT, file.name), file.source)
        yield* startApi(database.url, apiPort, insecure)
        yield* startDispatcher(database.url, insecure)
        return yield* bash(script, { DATABASE_URL: database.url })
      })).pipe(Effect.ensuring(cleanUp))
      assert.strictEqual(result.code, 0, `${result.stdout}\n${result.stderr}`)
      const outputs = result.stdout.split(MARK)
      assert.strictEqual(outputs.length, blocks.length + 1, "every block ran")
      assert.isAtLeast(compareOutputs("docs/integrators.md", blocks, outputs, EXACT), 7, "the documented outputs were compared")
      // What the blocks without a json block print, and the two sync runs' counts.
      const printedBy = (fragment: string) => {
        const at = blocks.findIndex((block) => block.script.includes(fragment))
        assert.isAtLeast(at, 0, fragment)
        return (outputs[at] ?? "").trim()
      }
      assert.match(printedBy("Idempotent-Replayed".toLowerCase()), /^HTTP\/1\.1 201 Created\s+idempotent-replayed: true$/imu)
      const runs = blocks.flatMap((block, i) =>
        block.script.includes("node sync.mjs") ? [Schema.decodeUnknownSync(SyncRun)(printedJson((outputs[i] ?? "").trim()).pipe(Option.getOrThrow))] : []
      )
      assert.strictEqual(runs.length, 2)
      const [full, incremental] = runs as [typeof SyncRun.Type, typeof SyncRun.Type]
      assert.strictEqual(full.read.students, full.copy.students, "the full run read every student")
      assert.isAbove(full.copy.students, 100, "more than one page")
      assert.isAtLeast(incremental.read.students, 1, "the enrolled student's updated_at moved")
      assert.isBelow(incremental.read.students, full.read.students, "incremental reads less")
      assert.strictEqual(incremental.copy.enrollments, full.copy.enrollments + 1)
      assert.strictEqual(printedBy("| field data.status"), "active")
      assert.strictEqual(printedBy("X-Service-Signature: 00").split("\n")[0], "401", "a forged request is refused")
    }))

  it("the event catalog shows every event once, each a delivery body whose payload is exactly its event's", () => {
    const catalog = DOC.slice(DOC.indexOf("\n## Event catalog\n"), DOC.indexOf("\n## Versioning\n"))
    const examples = jsonExamples(catalog)
    assert.deepStrictEqual(examples.map((example) => example.heading), [...Events.EventName.literals])
    for (const example of examples) {
      const delivery = Schema.decodeUnknownSync(Delivery)(JSON.parse(example.body), { onExcessProperty: "error" })
      assert.strictEqual(delivery.event, example.heading)
      Schema.decodeUnknownSync(Events.payloads[delivery.event])(delivery.payload, Events.strict)
      assert.match(delivery.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u)
    }
  })
})

const SyncRun = Schema.Struct({
  mode: Schema.Literals(["full", "incremental"]),
  read: Schema.Struct({ students: Schema.Int, payments: Schema.Int }),
  copy: Schema.Struct({ students: Schema.Int, payments: Schema.Int, enrollments: Schema.Int }),
  next_since: Schema.String
})
