/**
 * The CLI's local webhook loop (docs/operations.md "Operator CLI";
 * docs/integrators.md "Receiving webhooks on your machine"), as real
 * processes against this file's database with the API serving it and a
 * real dispatcher running: `webhooks listen` prints its secret, delivers a
 * real event (a lead made through the API) to a receiver on 127.0.0.1 with
 * signatures that verify with that secret, one line per delivery, while the
 * dispatcher leaves the listener's deliveries alone; SIGINT removes the
 * listener and its deliveries. `--events` filters; `--json` has its exact
 * shapes. `webhooks trigger` sends a sample of every catalog event to its
 * one subscription only; bad arguments exit 2, an unknown subscription 1.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { Webhook } from "standardwebhooks"
import { EVENT_NAMES } from "@school/domain/Events"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { entryPoints, environment, lines, run, startDispatcher } from "../support/Processes.ts"
import { type Received, startReceiver } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const Opened = Schema.Struct({
  secret: Schema.String.check(Schema.isPattern(/^whsec_[A-Za-z0-9+/]{43}=$/u)),
  subscription_id: Schema.Int
})
const decodeOpened = Schema.decodeUnknownSync(Schema.fromJsonString(Opened))

const cli = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const database = yield* TestDatabase
    return yield* run(entryPoints.cli, args, { DATABASE_URL: database.url })
  })

interface Listening {
  /** stdout lines so far. */
  readonly lines: () => ReadonlyArray<string>
  readonly stderr: () => string
  /** Waits until stdout has at least `count` lines. */
  readonly waitForLines: (count: number, timeoutMs?: number) => Effect.Effect<ReadonlyArray<string>>
  /** Sends `signal` and waits for the exit code. */
  readonly stop: (signal: NodeJS.Signals) => Effect.Effect<number | null>
}

/** `webhooks listen …` running until stopped (SIGKILL at the scope's end if still running). */
const listen = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const database = yield* TestDatabase
    return yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(process.execPath, [entryPoints.cli, "webhooks", "listen", ...args], {
          env: environment({ DATABASE_URL: database.url, LOG_LEVEL: "Warning" })
        })
        let stdout = ""
        let stderr = ""
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
        const exited = Deferred.makeUnsafe<number | null>()
        child.once("close", (code) => Deferred.doneUnsafe(exited, Exit.succeed(code)))
        const listening: Listening = {
          lines: () => lines(stdout),
          stderr: () => stderr,
          waitForLines: (count, timeoutMs = 30_000) =>
            Effect.gen(function*() {
              const deadline = Date.now() + timeoutMs
              while (lines(stdout).length < count) {
                if (Date.now() > deadline || child.exitCode !== null) {
                  return yield* Effect.die(new Error(`expected ${count} lines; stdout: ${stdout}; stderr: ${stderr}`))
                }
                yield* Effect.sleep("50 millis")
              }
              return lines(stdout)
            }),
          stop: (signal) =>
            Effect.gen(function*() {
              child.kill(signal)
              return yield* Deferred.await(exited)
            })
        }
        return { child, listening }
      }),
      ({ child }) => Effect.sync(() => child.exitCode === null && child.kill("SIGKILL"))
    ).pipe(Effect.map(({ listening }) => listening))
  })

const verify = (secret: string, received: Received) =>
  new Webhook(secret).verify(received.body, {
    "webhook-id": String(received.headers["webhook-id"]),
    "webhook-timestamp": String(received.headers["webhook-timestamp"]),
    "webhook-signature": String(received.headers["webhook-signature"])
  })

/** A subscription of the back office (delivered by the dispatcher), its secret sealed with the development key. */
const subscription = (schoolId: number, url: string, events: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sealed = WebhookSecret.encrypt(WebhookSecret.DEVELOPMENT_KEY, WebhookSecret.generateSecret())
    const [row] = yield* sql<{ id: number }>`
      INSERT INTO webhook_subscriptions (school_id, url, events, secret_ciphertext)
      VALUES (${schoolId}, ${url}, ${events}::text[], ${sealed}) RETURNING id`
    if (row === undefined) return yield* Effect.die(new Error("no subscription"))
    return row.id
  }).pipe(Effect.orDie)

const countOf = (query: string, id: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql.unsafe<{ n: number }>(query, [id])
    return rows[0]?.n ?? -1
  }).pipe(Effect.orDie)

const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true, timeout: 180_000 })("cli webhooks", (it) => {
  it.effect("listen delivers a real event signed with its printed secret, one line each; the dispatcher leaves it; SIGINT removes it", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const server = yield* TestServer
      const { schoolId } = yield* Fixtures.school("pro", "Listen School")
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
      const writeKey = yield* Fixtures.key(schoolId, { scope: "write" })
      yield* startDispatcher(database.url, { WEBHOOK_ALLOW_INSECURE_URLS: "true" })
      const receiver = yield* startReceiver()
      const listening = yield* listen(["--school", String(schoolId), "--forward-to", `http://127.0.0.1:${receiver.port}/local-hook`, "--json"])
      const [first] = yield* listening.waitForLines(1)
      assert.deepStrictEqual(Object.keys(JSON.parse(first ?? "{}")), ["secret", "subscription_id"])
      const opened = decodeOpened(first ?? "")

      const reply = yield* Effect.orDie(
        server.raw.post(`${V1}/leads`, { key: writeKey, idempotencyKey: `listen-${Date.now()}`, body: { phone: "12345" } })
      )
      assert.strictEqual(reply.status, 201, reply.text)
      const [received] = yield* receiver.waitFor(1, 20_000)
      assert.isDefined(received)
      assert.strictEqual(received.path, "/local-hook")
      assert.strictEqual(received.headers["x-service-event"], "lead.created")
      const body = verify(opened.secret, received) as { event: string; account_id: number }
      assert.strictEqual(body.event, "lead.created")
      assert.strictEqual(body.account_id, schoolId)

      const lineOfDelivery = (yield* listening.waitForLines(2))[1] ?? ""
      const printed = JSON.parse(lineOfDelivery) as Record<string, unknown>
      assert.deepStrictEqual(Object.keys(printed), ["event", "delivery_id", "status", "error", "duration_ms"])
      assert.strictEqual(printed["event"], "lead.created")
      assert.strictEqual(printed["delivery_id"], received.headers["webhook-id"])
      assert.strictEqual(printed["status"], 204)

      // The journal has the attempt; nothing else reached the receiver (no dispatcher attempt).
      assert.strictEqual(
        yield* countOf(
          `SELECT count(*)::int AS n FROM webhook_attempts a JOIN webhook_deliveries d
             ON d.school_id = a.school_id AND d.id = a.delivery_id WHERE d.subscription_id = $1`,
          opened.subscription_id
        ),
        1
      )
      yield* Effect.sleep("1500 millis")
      assert.strictEqual(receiver.received.length, 1)

      assert.strictEqual(yield* listening.stop("SIGINT"), 0, listening.stderr())
      assert.strictEqual(yield* countOf(`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE id = $1`, opened.subscription_id), 0)
      assert.strictEqual(
        yield* countOf(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1`, opened.subscription_id),
        0
      )
    }).pipe(Effect.scoped))

  it.effect("listen without a dispatcher, --events filters, the person's lines, a dead listener removed; SIGTERM removes it too", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId } = yield* Fixtures.school("pro", "Filter School")
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
      const writeKey = yield* Fixtures.key(schoolId, { scope: "write" })
      const receiver = yield* startReceiver()
      // A listener whose CLI died 10 minutes ago (no Ctrl-C): the next listen removes it.
      const stale = yield* subscription(schoolId, receiver.url, ["lead.created"])
      yield* Effect.orDie(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE webhook_subscriptions SET listener_seen_at = now() - interval '10 minutes' WHERE id = ${stale}`
      }))
      const listening = yield* listen([
        "--school",
        String(schoolId),
        "--forward-to",
        receiver.url,
        "--events",
        "student.created"
      ])
      const [first] = yield* listening.waitForLines(1)
      const match = /subscription (\d+), secret (whsec_\S+) /u.exec(first ?? "")
      assert.isNotNull(match, first)
      const id = Number(match?.[1])
      assert.strictEqual(yield* countOf(`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE id = $1`, stale), 0)
      const reply = yield* Effect.orDie(
        server.raw.post(`${V1}/leads`, { key: writeKey, idempotencyKey: `filter-${Date.now()}`, body: { phone: "12345" } })
      )
      assert.strictEqual(reply.status, 201, reply.text)
      // A sample student.created through trigger arrives; the lead did not.
      const triggered = yield* cli(["webhooks", "trigger", "--subscription", String(id), "--event", "student.created"])
      assert.strictEqual(triggered.code, 0, triggered.stderr)
      const [received] = yield* receiver.waitFor(1, 20_000)
      assert.strictEqual(received?.headers["x-service-event"], "student.created")
      const body = verify(match?.[2] ?? "", received!) as { sample?: boolean }
      assert.strictEqual(body.sample, true)
      const delivery = (yield* listening.waitForLines(2))[1] ?? ""
      assert.match(delivery, /^student\.created msg_[0-9a-f]{32} → 204 \(\d+ ms\)$/u)
      yield* Effect.sleep("1000 millis")
      assert.strictEqual(receiver.received.length, 1)
      assert.strictEqual(yield* listening.stop("SIGTERM"), 0, listening.stderr())
      assert.strictEqual(yield* countOf(`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE id = $1`, id), 0)
    }).pipe(Effect.scoped))

  it.effect("trigger: a sample of every catalog event reaches its one subscription only, marked as a sample; the dispatcher removes a dead listener", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const { schoolId } = yield* Fixtures.school("pro", "Trigger School")
      // A listener whose CLI died 10 minutes ago: the dispatcher's purge removes it.
      const stale = yield* subscription(schoolId, "http://127.0.0.1:9/gone", ["lead.created"])
      yield* Effect.orDie(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE webhook_subscriptions SET listener_seen_at = now() - interval '10 minutes' WHERE id = ${stale}`
      }))
      yield* startDispatcher(database.url, { WEBHOOK_ALLOW_INSECURE_URLS: "true" })
      const target = yield* startReceiver()
      const other = yield* startReceiver()
      const all = EVENT_NAMES.filter((event) => event !== "webhook.test")
      const targetId = yield* subscription(schoolId, target.url, all)
      yield* subscription(schoolId, other.url, all)
      for (const [index, event] of EVENT_NAMES.entries()) {
        const result = yield* cli(["webhooks", "trigger", "--subscription", String(targetId), "--event", event, "--json"])
        assert.strictEqual(result.code, 0, result.stderr)
        const printed = JSON.parse(result.stdout) as Record<string, unknown>
        assert.deepStrictEqual(Object.keys(printed), ["subscription_id", "event", "event_id"])
        assert.deepStrictEqual([printed["subscription_id"], printed["event"]], [targetId, event])
        const received = (yield* target.waitFor(index + 1, 20_000))[index]
        const body = JSON.parse(received?.body ?? "{}") as { event: string; account_id: number; sample: boolean; payload: unknown }
        assert.deepStrictEqual([body.event, body.account_id, body.sample], [event, schoolId, true])
        assert.isObject(body.payload)
      }
      yield* Effect.sleep("1000 millis")
      assert.strictEqual(other.received.length, 0)
      assert.strictEqual(target.received.length, EVENT_NAMES.length)
      assert.strictEqual(yield* countOf(`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE id = $1`, stale), 0)
    }).pipe(Effect.scoped))

  it.effect("bad arguments: one line, exit 2; an unknown subscription or school: one line, exit 1", () =>
    Effect.gen(function*() {
      for (
        const args of [
          ["webhooks", "trigger", "--subscription", "0", "--event", "lead.created"],
          ["webhooks", "trigger", "--subscription", "1", "--event", "lead.nope"],
          ["webhooks", "trigger", "--event", "lead.created"],
          ["webhooks", "listen", "--school", "1", "--forward-to", "not a url"],
          ["webhooks", "listen", "--school", "1", "--forward-to", "http://127.0.0.1:1/", "--events", "lead.created,nope"],
          ["webhooks", "listen", "--school", "1", "--forward-to", "http://127.0.0.1:1/", "--events", "webhook.test"]
        ]
      ) {
        const result = yield* cli(args)
        assert.strictEqual(result.code, 2, `${args.join(" ")}: ${result.stderr}`)
        assert.strictEqual(lines(result.stderr).length, 1, result.stderr)
        assert.strictEqual(result.stdout, "")
      }
      const unknown = yield* cli(["webhooks", "trigger", "--subscription", "999999", "--event", "lead.created"])
      assert.strictEqual(unknown.code, 1, unknown.stderr)
      assert.deepStrictEqual(lines(unknown.stderr), ["error: no webhook subscription with id 999999"])
      const noSchool = yield* cli(["webhooks", "listen", "--school", "999999", "--forward-to", "http://127.0.0.1:1/"])
      assert.strictEqual(noSchool.code, 1, noSchool.stderr)
      assert.deepStrictEqual(lines(noSchool.stderr), ["error: no school with id 999999"])
    }))
})
