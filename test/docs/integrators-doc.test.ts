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
 * a whole delivery body whose payload decodes strictly with its event's schema;
 * and the `webhook.test` example is what the service sends: the payload the
 * back office's `POST /webhooks/{id}/test` queues (libs/persistence/src/Webhooks.ts
 * `queueTest`, run here on this file's database) is the doc's, but for the
 * subscription's id. The lead-form recipe's code is a piece of
 * examples/lead-form/main.ts as it is (test/examples/lead-form.test.ts runs it).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Events, Ids } from "@school/domain"
import { WebhookId } from "@school/domain/WebhookSubscriptions"
import { Webhooks } from "@school/persistence/Webhooks"
import { freePort } from "@school/runtime/Ports"
import * as Fixtures from "../support/Fixtures.ts"
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
    }), 150_000) // Two processes and the whole page's commands: close to a minute on a loaded machine.

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

  it("the lead-form recipe's code is examples/lead-form/main.ts's, as it is", () => {
    const section = DOC.slice(DOC.indexOf("\n## A lead form on your site\n"), DOC.indexOf("\n## Limits\n"))
    const code = /^```ts\n([\s\S]*?)^```$/mu.exec(section)?.[1]
    assert.isDefined(code, "the recipe shows its code")
    const source = readFileSync(join(ROOT, "examples/lead-form/main.ts"), "utf8")
    // The doc shows the lines one level (two spaces) less indented than the function they come from.
    const indented = (code ?? "").split("\n").map((line) => (line === "" ? line : `  ${line}`)).join("\n")
    assert.include(source, indented)
  })

  it.effect("the webhook.test example is the payload the service queues, message and all", () =>
    Effect.gen(function*() {
      const catalog = DOC.slice(DOC.indexOf("\n## Event catalog\n"), DOC.indexOf("\n## Versioning\n"))
      const example = jsonExamples(catalog).find((one) => one.heading === Events.TEST_EVENT)
      assert.isDefined(example, "the catalog shows webhook.test")
      const documented = Schema.decodeUnknownSync(Delivery)(JSON.parse(example?.body ?? "null"))
      const { schoolId } = yield* Fixtures.school("pro", "Test event school")
      const school = Ids.SchoolId.make(schoolId)
      const webhooks = yield* Webhooks
      const creation = yield* webhooks.create(
        school,
        { url: "https://192.0.2.1/webhooks", events: ["lead.created"], secretCiphertext: new Uint8Array(32) },
        20
      )
      assert.strictEqual(creation._tag, "Created")
      const id = creation._tag === "Created" ? creation.value.id : WebhookId.make(1)
      const queued = yield* webhooks.queueTest(school, id, 10)
      assert.strictEqual(queued._tag, "Queued")
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ event: string; payload: string }>`
        SELECT event, payload::text AS payload FROM outbox_events
        WHERE school_id = ${schoolId} AND id = ${queued._tag === "Queued" ? queued.value : 0}`
      assert.strictEqual(rows.length, 1)
      const sent = JSON.parse(rows[0]?.payload ?? "null") as Record<string, unknown>
      assert.strictEqual(rows[0]?.event, documented.event)
      assert.deepStrictEqual(documented.payload, { ...sent, subscription_id: (documented.payload as { subscription_id: unknown }).subscription_id })
      assert.strictEqual(sent["subscription_id"], id)
    }).pipe(Effect.provide(Webhooks.layer)))
})

const SyncRun = Schema.Struct({
  mode: Schema.Literals(["full", "incremental"]),
  read: Schema.Struct({ students: Schema.Int, payments: Schema.Int }),
  copy: Schema.Struct({ students: Schema.Int, payments: Schema.Int, enrollments: Schema.Int }),
  next_since: Schema.String
})
