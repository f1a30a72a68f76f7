/**
 * The examples (examples/, docs/integrators.md "Client kit and examples")
 * as real child processes, started as the doc starts them (`npm run
 * example:sync`, `example:fetch`, `example:receiver`: the project's Node 24,
 * whatever Node is on the PATH), against the real API process and the real
 * dispatcher process on this file's database:
 *
 * - the sync client copies a school fully (every student id, the legacy
 *   ones included) while the key's budget runs out under it: it sees 429,
 *   waits, repeats the same page, and still has no gap; the next run is
 *   incremental (`updated_since` = the recorded start time) and picks up a
 *   change and a new student made after the first run, and only those;
 * - the webhook receiver gets a real delivery of `lead.created` (a lead
 *   created through the public API), verifies both signatures and
 *   processes it once; a forged signature and a stale Standard Webhooks
 *   timestamp are refused with 401; the same delivery sent again, and the
 *   back office's resend of it (a new delivery id, the same body), are
 *   answered 2xx and counted as duplicates, not processed again.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { freePort } from "@school/runtime/Ports"
import { spawn } from "node:child_process"
import { createHmac, randomUUID } from "node:crypto"
import { mkdtemp, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Webhook } from "standardwebhooks"
import * as BackOffice from "../support/BackOffice.ts"
import { rawClient, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { environment, type Finished, lines, startApi, startDispatcher } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** `npm run --silent <script>` in the project, as docs/integrators.md "Client kit and examples" runs the examples. */
const npmRun = (script: string, env: Readonly<Record<string, string>>) =>
  spawn("npm", ["run", "--silent", script], {
    cwd: ROOT,
    // npm's own settings of this test run (a loglevel, say) left out: they would change what npm prints.
    env: Object.fromEntries(Object.entries(environment(env)).filter(([name]) => !name.startsWith("npm_"))),
    stdio: ["ignore", "pipe", "pipe"]
  })

/** Runs an example's npm script to completion (killed after `timeout`); `onOutput` sees its stdout so far as it comes. */
const runExample = (
  script: string,
  env: Readonly<Record<string, string>>,
  timeout: number,
  onOutput: (stdout: string) => void = () => {}
) =>
  Effect.callback<Finished>((resume) => {
    const child = npmRun(script, env)
    const timer = setTimeout(() => child.kill("SIGKILL"), timeout)
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      onOutput(stdout)
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.once("close", (code, signal) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, signal, stdout, stderr }))
    })
  })
/** The rate limit's window: short, so the test waits little for a fresh budget. */
const WINDOW_SECONDS = 6

const jsonLines = (text: string): ReadonlyArray<Record<string, unknown>> =>
  lines(text).filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>)

const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "sync-client-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

/** The API and the dispatcher as processes; their origin. */
const service = Effect.gen(function*() {
  const database = yield* TestDatabase
  const port = yield* freePort
  yield* startApi(database.url, port, { RATE_LIMIT_WINDOW: `${WINDOW_SECONDS}s`, WEBHOOK_ALLOW_INSECURE_URLS: "true" })
  yield* startDispatcher(database.url, { WEBHOOK_ALLOW_INSECURE_URLS: "true", WEBHOOK_RETRY_DELAYS: "200ms,200ms,200ms" })
  return `http://127.0.0.1:${port}`
})

interface RunningReceiver {
  readonly url: string
  readonly output: () => ReadonlyArray<Record<string, unknown>>
}

/** examples/webhook-receiver as a process on a free port; stopped (SIGTERM) with the scope. */
const startReceiver = (port: number, secret: string) =>
  Effect.acquireRelease(
    Effect.callback<{ receiver: RunningReceiver; stop: () => Promise<void> }, Error>((resume) => {
      const child = npmRun("example:receiver", { PORT: String(port), WEBHOOK_SECRET: secret })
      const exited = new Promise<void>((done) => child.once("exit", () => done()))
      let stdout = ""
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString()
        if (stdout.includes(`"step":"listening"`)) {
          resume(Effect.succeed({
            receiver: { url: `http://127.0.0.1:${port}/webhooks`, output: () => jsonLines(stdout) },
            stop: async () => {
              child.kill("SIGTERM")
              await exited
            }
          }))
        }
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`receiver exited (${code}): ${stdout}${stderr}`))))
    }),
    ({ stop }) => Effect.promise(stop)
  ).pipe(Effect.map(({ receiver }) => receiver))

/** The `data` of a back-office success, only the fields named (the strict check is the back office's own tests'). */
const dataOf = <A>(schema: Schema.Codec<A, unknown>, reply: { readonly status: number; readonly json: unknown; readonly text: string }, status = 200): A => {
  assert.strictEqual(reply.status, status, reply.text)
  return Schema.decodeUnknownSync(Schema.Struct({ data: schema }))(reply.json).data
}

const waitUntil = <A>(what: string, get: () => A, check: (value: A) => boolean, timeoutMs = 15_000) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (!check(get())) {
      if (Date.now() - started > timeoutMs) return yield* Effect.die(new Error(`not within ${timeoutMs} ms: ${what}`))
      yield* Effect.sleep("25 millis")
    }
    return get()
  })

layer(TestDatabase.layer, { timeout: 120_000, excludeTestServices: true })("the examples against the real service", (it) => {
  it.effect("sync client: full copy through 429s without a gap, then incremental from the recorded start", () =>
    Effect.scoped(Effect.gen(function*() {
      const origin = yield* service
      const sql = yield* SqlClient.SqlClient
      const { schoolId, filialId } = yield* Fixtures.school("basic", "Sync school")
      const ids = yield* Fixtures.students(schoolId, filialId, 245, "Student")
      // Five legacy students: no last-modified time; only a full sync sees them.
      const legacy = yield* Fixtures.students(schoolId, filialId, 5, "Legacy")
      yield* sql`UPDATE students SET updated_at = NULL WHERE school_id = ${schoolId} AND id IN ${sql.in(legacy)}`
      const key = yield* Fixtures.key(schoolId)
      const dir = yield* tempDir
      const env = { API_URL: `${origin}${V1}`, API_KEY: key, STATE_DIR: dir, PER_PAGE: "10", SKEW_MARGIN_SECONDS: "0" }

      // Another user of the key keeps its budget (120 a window) spent until the sync has met a 429 and said so:
      // however long `npm run` takes to start the example, its requests find the window full. Twenty at a time,
      // so the window fills faster than its requests leave it even on a loaded machine (one at a time, 50 ms
      // each, is exactly the 20 a second that leave a 6 s window of 120).
      const raw = rawClient(origin)
      let output = ""
      const metA429 = () => output.includes('"step":"retry"')
      const burner = yield* Effect.forkChild(Effect.gen(function*() {
        while (!metA429()) {
          const replies = yield* Effect.forEach(
            Array.from({ length: 20 }),
            () => Effect.orDie(raw.get(`${V1}/groups`, key)),
            { concurrency: 20 }
          )
          if (replies.every((reply) => reply.status === 429)) yield* Effect.sleep("100 millis")
        }
      }))
      const before = new Date().toISOString()
      const first = yield* runExample("example:sync", env, 60_000, (stdout) => (output = stdout))
      yield* Fiber.interrupt(burner)
      assert.strictEqual(first.code, 0, first.stdout + first.stderr)
      const steps = jsonLines(first.stdout)
      const retries = steps.filter((s) => s["step"] === "retry")
      assert.isAtLeast(retries.length, 1, "it met a 429")
      assert.isTrue(retries.every((r) => r["status"] === 429 && Number(r["pause_ms"]) >= Number(r["retry_after"]) * 1000))
      const pages = steps.filter((s) => s["step"] === "page").map((s) => s["page"])
      // 250 students, 10 a page: 25 cursor pages, the 25th saying has_more false (no empty page after it).
      assert.deepStrictEqual(pages, Array.from({ length: 25 }, (_, i) => i + 1), "every page once, in order: none skipped")
      // Each page's cursor is the previous page's last id (a 429 repeated the same cursor, not the next).
      const all = [...ids, ...legacy].sort((a, b) => a - b)
      assert.deepStrictEqual(
        steps.filter((s) => s["step"] === "page").map((s) => s["starting_after"]),
        Array.from({ length: 25 }, (_, i) => (i === 0 ? 0 : all[i * 10 - 1]))
      )
      assert.strictEqual(steps[0]?.["step"], "start", "the start time is recorded before the first page")
      assert.strictEqual(steps[0]?.["mode"], "full")
      assert.strictEqual(steps[0]?.["updated_since"], null)

      const copy = JSON.parse(yield* Effect.promise(() => readFile(join(dir, "students.json"), "utf8"))) as Record<string, { fio: string }>
      assert.deepStrictEqual(Object.keys(copy).map(Number).sort((a, b) => a - b), [...ids, ...legacy], "every student, the legacy ones too")
      const checkpoint = JSON.parse(yield* Effect.promise(() => readFile(join(dir, "checkpoint.json"), "utf8"))) as { started_at: string }
      assert.strictEqual(checkpoint.started_at, steps[0]?.["started_at"])
      assert.isTrue(checkpoint.started_at >= before, "the run's own start")

      // After the run: one student changes, one is new.
      const changed = ids[17] ?? 0
      yield* sql`UPDATE students SET fio = 'Changed Name' WHERE school_id = ${schoolId} AND id = ${changed}`
      const [added = 0] = yield* Fixtures.students(schoolId, filialId, 1, "Newcomer")
      yield* Effect.sleep(`${WINDOW_SECONDS} seconds`) // a fresh budget window, to keep this run's count readable

      const second = yield* runExample("example:sync", env, 60_000)
      assert.strictEqual(second.code, 0, second.stdout + second.stderr)
      const again = jsonLines(second.stdout)
      assert.strictEqual(again[0]?.["mode"], "incremental")
      assert.strictEqual(again[0]?.["updated_since"], checkpoint.started_at)
      const done = again.find((s) => s["step"] === "done")
      assert.strictEqual(done?.["fetched"], 2, "only what changed since the recorded start")
      assert.strictEqual(done?.["students"], 251)
      const updated = JSON.parse(yield* Effect.promise(() => readFile(join(dir, "students.json"), "utf8"))) as Record<string, { fio: string }>
      assert.strictEqual(updated[String(changed)]?.fio, "Changed Name")
      assert.strictEqual(updated[String(added)]?.fio, "Newcomer 1")
    })), 120_000)

  it.effect("fetch client: pages through every student and creates one lead with an Idempotency-Key", () =>
    Effect.scoped(Effect.gen(function*() {
      const origin = yield* service
      const { schoolId, filialId } = yield* Fixtures.school("pro", "Fetch school")
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
      yield* Fixtures.students(schoolId, filialId, 130, "Student")
      const key = yield* Fixtures.key(schoolId, { scope: "write" })
      const result = yield* runExample("example:fetch", { API_URL: origin, API_KEY: key }, 60_000)
      assert.strictEqual(result.code, 0, result.stdout + result.stderr)
      assert.deepStrictEqual(lines(result.stdout).slice(0, 3), [
        "page 1: 100 students (more follow)",
        "page 2: 30 students (the last page)",
        "130 students"
      ])
      const sql = yield* SqlClient.SqlClient
      const leads = yield* sql<{ id: number; name: string; source: string }>`SELECT id, name, source FROM leads WHERE school_id = ${schoolId}`
      assert.strictEqual(leads.length, 1)
      assert.strictEqual(lines(result.stdout)[3], `lead ${leads[0]?.id} created`)
      assert.deepStrictEqual([leads[0]?.name, leads[0]?.source], ["From fetch-client.ts", "example"])
      assert.strictEqual(yield* Fixtures.count("idempotency_keys", schoolId), 1, "the write carried an Idempotency-Key")
    })), 120_000)

  it.effect("webhook receiver: verifies real deliveries, refuses forged and stale ones, counts a redelivery once", () =>
    Effect.scoped(Effect.gen(function*() {
      const origin = yield* service
      const school = yield* BackOffice.staffSchool("pro")
      const raw = rawClient(origin)
      const crm = (method: string, path: string, body?: unknown) =>
        Effect.gen(function*() {
          const session = yield* Effect.orDie(raw.post(`${BackOffice.CRM}/sessions`, { body: { email: school.emails.owner, password: BackOffice.PASSWORD } }))
          const { token } = Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Struct({ token: Schema.String }) }))(session.json).data
          return yield* Effect.orDie(raw.request(`${BackOffice.CRM}${path}`, {
            method,
            headers: { authorization: `Session ${token}`, "content-type": "application/json" },
            ...(body === undefined ? {} : { body })
          }))
        })

      const port = yield* freePort
      const created = yield* crm("POST", "/webhooks", { url: `http://127.0.0.1:${port}/webhooks`, events: ["lead.created"] })
      const subscription = dataOf(Schema.Struct({ id: Schema.Number, secret: Schema.String }), created, 201)
      const receiver = yield* startReceiver(port, subscription.secret)
      const processed = () => receiver.output().filter((s) => s["step"] === "processed")
      const duplicates = () => receiver.output().filter((s) => s["step"] === "duplicate")

      // A real event: a lead through the public API.
      const writeKey = yield* Fixtures.key(school.schoolId, { scope: "write" })
      const lead = yield* Effect.orDie(raw.post(`${V1}/leads`, { key: writeKey, idempotencyKey: randomUUID(), body: { phone: "+7 900 555-00-11", name: "Hook" } }))
      assert.strictEqual(lead.status, 201, lead.text)
      const [event] = yield* waitUntil("the delivery is processed", processed, (p) => p.length === 1)
      assert.strictEqual(event?.["event"], "lead.created")
      assert.deepStrictEqual((event?.["payload"] as { name: string }).name, "Hook")

      // The delivery as the service sent it (its body, from the journal).
      const journal = yield* crm("GET", `/webhooks/${subscription.id}/deliveries`)
      const [delivery] = dataOf(Schema.Array(Schema.Struct({ id: Schema.Number, status: Schema.String })), journal)
      assert.strictEqual(delivery?.status, "delivered", "the receiver answered 2xx")
      const detail = yield* crm("GET", `/webhooks/${subscription.id}/deliveries/${delivery?.id}`)
      const { body } = dataOf(Schema.Struct({ body: Schema.String }), detail)
      const webhookId = String(event?.["webhook_id"])

      const post = (headers: Record<string, string>) =>
        Effect.orDie(rawClient(`http://127.0.0.1:${port}`).post("/webhooks", { body, headers: { "content-type": "application/json", ...headers } }))
      const serviceSignature = createHmac("sha256", Buffer.from(subscription.secret, "utf8")).update(body).digest("hex")
      const standardHeaders = (id: string, at: Date) => {
        const signature = new Webhook(subscription.secret).sign(id, at, body)
        return { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signature }
      }

      // Forged: a signature made with another secret.
      const forged = createHmac("sha256", "whsec_not-the-secret").update(body).digest("hex")
      const forgedReply = yield* post({ "x-service-signature": forged, ...standardHeaders(webhookId, new Date()) })
      assert.strictEqual(forgedReply.status, 401)
      // A body changed after signing.
      const tampered = yield* Effect.orDie(rawClient(`http://127.0.0.1:${port}`).post("/webhooks", {
        body: body.replace("Hook", "Hack"),
        headers: { "content-type": "application/json", "x-service-signature": serviceSignature, ...standardHeaders(webhookId, new Date()) }
      }))
      assert.strictEqual(tampered.status, 401)
      // Stale: signed correctly, but 10 minutes ago (a replayed capture).
      const stale = yield* post({ "x-service-signature": serviceSignature, ...standardHeaders(webhookId, new Date(Date.now() - 600_000)) })
      assert.strictEqual(stale.status, 401)
      // No signature at all.
      assert.strictEqual((yield* post({})).status, 400)
      const rejected = receiver.output().filter((s) => s["step"] === "rejected")
      assert.strictEqual(rejected.length, 4)

      // The same delivery again (a duplicate delivery): 2xx, not processed again.
      const repeat = yield* post({ "x-service-signature": serviceSignature, ...standardHeaders(webhookId, new Date()) })
      assert.strictEqual(repeat.status, 204)
      yield* waitUntil("the repeat is a duplicate", duplicates, (d) => d.length === 1)

      // The back office's resend: a new delivery id, the same body, from the dispatcher.
      const resend = yield* crm("POST", `/webhooks/${subscription.id}/deliveries/${delivery?.id}/resend`)
      assert.strictEqual(resend.status, 202, resend.text)
      const [, second] = yield* waitUntil("the resend is a duplicate", duplicates, (d) => d.length === 2)
      assert.notStrictEqual(second?.["webhook_id"], webhookId, "a new delivery id")
      assert.strictEqual(processed().length, 1, "the event was processed once")
    })), 120_000)
})
