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
 * The listener wakes on the outbox's NOTIFY: an event written after it sat
 * idle reaches the receiver well before its 5 s fallback poll. It sends
 * with the dispatcher's receiver client: a redirect is not followed and a
 * refused connection is the journal's `connection_refused`. Listeners have
 * their own bound per school (MAX_LISTENERS: the next `listen` is one line,
 * exit 1) and neither count against WEBHOOK_MAX_SUBSCRIPTIONS nor show in
 * the back office's list (what the panel's list shows) or by id.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { Webhook } from "standardwebhooks"
import { HostResolver, type Resolve } from "@school/api/http/backoffice/Webhooks"
import { EVENT_NAMES } from "@school/domain/Events"
import { MAX_LISTENERS } from "@school/persistence/Listeners"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { entryPoints, environment, lines, run, startDispatcher } from "../support/Processes.ts"
import * as BackOffice from "../support/BackOffice.ts"
import { redirect, type Received, startReceiver } from "../support/Receivers.ts"
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

const countOf = (query: string, ...values: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql.unsafe<{ n: number }>(query, values)
    return rows[0]?.n ?? -1
  }).pipe(Effect.orDie)

/** Listeners of the school opened in SQL, as `webhooks listen` opens them (seen now). */
const openListeners = (schoolId: number, count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sealed = WebhookSecret.encrypt(WebhookSecret.DEVELOPMENT_KEY, WebhookSecret.generateSecret())
    const rows = yield* sql<{ id: number }>`
      INSERT INTO webhook_subscriptions (school_id, url, events, secret_ciphertext, listener_seen_at)
      SELECT ${schoolId}, 'http://127.0.0.1:9/listener', ARRAY['student.created'], ${sealed}, now()
      FROM generate_series(1, ${count}) RETURNING id`
    return rows.map((row) => row.id)
  }).pipe(Effect.orDie)

const HOOK = "https://hooks.example.test/in"
const resolve: Resolve = (host) =>
  host === "hooks.example.test" ? Effect.succeed(["93.184.215.14"]) : Effect.fail(`${host} does not resolve`)
const WebhooksPage = Schema.Struct({
  data: Schema.Array(Schema.Struct({ id: Schema.Int })),
  meta: Schema.Struct({ total: Schema.Int })
})

// WEBHOOK_MAX_SUBSCRIPTIONS low, so the test of the bounds fills a school's subscriptions in two requests.
const Env = TestServer.layer({ settings: { WEBHOOK_MAX_SUBSCRIPTIONS: "2" } }).pipe(
  Layer.provide(Layer.succeed(HostResolver, resolve)),
  Layer.provideMerge(TestDatabase.layer)
)

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

  it.effect("an event reaches an idle listener within tens of ms (the outbox's NOTIFY, not the 5 s poll); production's client: no redirect, its error kinds", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId } = yield* Fixtures.school("pro", "Wake School")
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
      const writeKey = yield* Fixtures.key(schoolId, { scope: "write" })
      const receiver = yield* startReceiver()
      const listening = yield* listen(["--school", String(schoolId), "--forward-to", receiver.url, "--events", "lead.created", "--json"])
      yield* listening.waitForLines(1)
      const latencies: Array<number> = []
      for (let i = 1; i <= 3; i++) {
        // Idle first: a listener that polled would have its next look up to 5 s away.
        yield* Effect.sleep("700 millis")
        const started = Date.now()
        const reply = yield* Effect.orDie(
          server.raw.post(`${V1}/leads`, { key: writeKey, idempotencyKey: `wake-${i}-${Date.now()}`, body: { phone: "12345" } })
        )
        assert.strictEqual(reply.status, 201, reply.text)
        yield* receiver.waitFor(i, 10_000)
        latencies.push(Date.now() - started)
      }
      assert.isTrue(latencies.every((ms) => ms < 1_000), `each within a second: ${latencies.join(", ")} ms`)
      assert.strictEqual(yield* listening.stop("SIGINT"), 0, listening.stderr())

      // A redirect is a failure, not followed (the dispatcher's client); a refused connection has its own kind.
      const moved = yield* startReceiver(() => redirect(receiver.url))
      for (const [target, status, error] of [[moved.url, 302, null], ["http://127.0.0.1:9/closed", null, "connection_refused"]] as const) {
        const other = yield* listen(["--school", String(schoolId), "--forward-to", target, "--json"])
        const opened = decodeOpened((yield* other.waitForLines(1))[0] ?? "")
        const triggered = yield* cli(["webhooks", "trigger", "--subscription", String(opened.subscription_id), "--event", "lead.created"])
        assert.strictEqual(triggered.code, 0, triggered.stderr)
        const printed = JSON.parse((yield* other.waitForLines(2))[1] ?? "{}") as Record<string, unknown>
        assert.deepStrictEqual([printed["status"], printed["error"]], [status, error])
        assert.strictEqual(yield* other.stop("SIGINT"), 0, other.stderr())
      }
      assert.strictEqual(receiver.received.length, 3, "the redirect was not followed")
    }).pipe(Effect.scoped))

  it.effect("listeners have their own bound, do not count against WEBHOOK_MAX_SUBSCRIPTIONS and do not show in the back office", () =>
    Effect.gen(function*() {
      assert.strictEqual(MAX_LISTENERS, 10)
      const staff = yield* BackOffice.staffSchool()
      const owner = yield* BackOffice.crm(staff.emails.owner)
      const receiver = yield* startReceiver()
      const running = yield* listen(["--school", String(staff.schoolId), "--forward-to", receiver.url, "--json"])
      const opened = decodeOpened((yield* running.waitForLines(1))[0] ?? "")
      const others = yield* openListeners(staff.schoolId, MAX_LISTENERS - 1)
      const listenerIds = [opened.subscription_id, ...others]

      // The school's real subscriptions: WEBHOOK_MAX_SUBSCRIPTIONS (2 here) of them, whatever the listeners.
      const created: Array<number> = []
      for (let i = 0; i < 2; i++) {
        created.push(BackOffice.dataOf(BackOffice.CreatedWebhook, yield* owner.post("/webhooks", { url: HOOK, events: ["student.created"] }), 201).id)
      }
      BackOffice.expectError(yield* owner.post("/webhooks", { url: HOOK, events: ["student.created"] }), 409, "CONFLICT")

      // The list (what the panel shows) and a listener's id: no listener.
      const reply = yield* owner.get("/webhooks?per_page=100")
      assert.strictEqual(reply.status, 200, reply.text)
      const listed = Schema.decodeUnknownSync(WebhooksPage)(reply.json)
      assert.deepStrictEqual(listed.data.map((row) => row.id), created)
      assert.strictEqual(listed.meta.total, 2)
      for (const id of listenerIds.slice(0, 2)) BackOffice.expectError(yield* owner.get(`/webhooks/${id}`), 404, "NOT_FOUND")
      // No call on one id reaches a listener: every one is 404 and the listener is left as it was.
      const [one = 0] = listenerIds
      const calls = [
        owner.patch(`/webhooks/${one}`, { events: ["lead.created"] }),
        owner.post(`/webhooks/${one}/disable`),
        owner.post(`/webhooks/${one}/enable`),
        owner.post(`/webhooks/${one}/test`),
        owner.get(`/webhooks/${one}/deliveries`),
        owner.get(`/webhooks/${one}/deliveries/1`),
        owner.post(`/webhooks/${one}/deliveries/1/resend`),
        owner.post(`/webhooks/${one}/recover`, { since: "2026-01-01T00:00:00Z" }),
        owner.delete(`/webhooks/${one}`)
      ]
      for (const call of calls) BackOffice.expectError(yield* call, 404, "NOT_FOUND")
      assert.strictEqual(
        yield* countOf(
          `SELECT count(*)::int AS n FROM webhook_subscriptions
           WHERE school_id = $1 AND id = $2 AND status = 'active' AND listener_seen_at IS NOT NULL`,
          staff.schoolId,
          one
        ),
        1
      )

      // The bound: the next listen is refused in one line, exit 1, and opens nothing.
      const refused = yield* cli(["webhooks", "listen", "--school", String(staff.schoolId), "--forward-to", receiver.url])
      assert.strictEqual(refused.code, 1, refused.stderr)
      assert.deepStrictEqual(lines(refused.stderr), [
        `error: school ${staff.schoolId} has ${MAX_LISTENERS} listeners open already, the most it may have; stop one (Ctrl-C) first`
      ])
      assert.strictEqual(refused.stdout, "")
      assert.strictEqual(
        yield* countOf(`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE school_id = $1 AND listener_seen_at IS NOT NULL`, staff.schoolId),
        MAX_LISTENERS
      )
      // One stopped makes room.
      assert.strictEqual(yield* running.stop("SIGINT"), 0, running.stderr())
      const next = yield* listen(["--school", String(staff.schoolId), "--forward-to", receiver.url, "--json"])
      decodeOpened((yield* next.waitForLines(1))[0] ?? "")
      assert.strictEqual(yield* next.stop("SIGTERM"), 0, next.stderr())
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
