/**
 * The API process's graceful stop (docs/operations.md "Shutdown";
 * libs/runtime/src/Shutdown.ts), with the real process:
 *
 * - SIGTERM with SHUTDOWN_DELAY: /health/ready answers 503 `shutting_down`
 *   at once while /health/live and data requests are still served; after
 *   the delay new connections are refused; a request in flight finishes
 *   with its normal answer; the process exits 0 at once after it (neither
 *   that request's kept-alive connection nor an idle one holds the exit).
 * - SHUTDOWN_TIMEOUT bounds what is left: a request whose body never
 *   finishes arriving is cut, and the process still exits 0.
 *
 * The request held in flight is an honest slow client: a POST whose body
 * arrives in two parts, the second only after the server stopped accepting.
 * The server has read its headers and waits for the rest, as it would for
 * any client on a slow link.
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Effect } from "effect"
import * as Http from "node:http"
import { rawClient, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { httpGet, pollUntil, startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

interface Answer {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
  readonly at: number
}

/**
 * A POST to `path` whose body is sent in two parts: `head` at once,
 * `finish()` sends the rest. `answer` resolves with the reply, or with the
 * error that ended the request.
 */
const slowUpload = (port: number, path: string, headers: Record<string, string>, body: string, head: number) => {
  const request = Http.request({
    host: "127.0.0.1",
    port,
    path,
    method: "POST",
    headers: { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
    agent: new Http.Agent({ keepAlive: true })
  })
  const answer = new Promise<Answer | Error>((resolve) => {
    request.once("response", (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (text += chunk))
      response.once("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text, at: Date.now() }))
      response.once("error", resolve)
    })
    request.once("error", resolve)
  })
  request.write(body.slice(0, head))
  return { answer, finish: () => request.end(body.slice(head)) }
}

/** A kept-alive connection that has served one request and now idles. */
const idleConnection = (port: number) =>
  Effect.promise(() =>
    new Promise<void>((resolve, reject) => {
      const agent = new Http.Agent({ keepAlive: true })
      Http.get({ host: "127.0.0.1", port, path: "/health/live", agent }, (response) => {
        response.resume()
        response.once("end", () => resolve())
      }).once("error", reject)
    })
  )

const SHUTTING_DOWN = { error: { code: "shutting_down", message: "The process is stopping." } }

layer(TestDatabase.layer, { excludeTestServices: true })("the API process on SIGTERM", (it) => {
  const writer = Effect.gen(function*() {
    const { schoolId } = yield* Fixtures.school("pro", "Shutdown school")
    yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
    return yield* Fixtures.key(schoolId, { scope: "write" })
  })

  it.effect("readiness 503 for SHUTDOWN_DELAY while requests are served; then refused; the request in flight answers; exit 0", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const key = yield* writer
      const port = yield* Effect.orDie(freePort)
      const base = `http://127.0.0.1:${port}`
      const api = yield* startApi(database.url, port, { SHUTDOWN_DELAY: "1500ms" })
      assert.deepStrictEqual(yield* httpGet(`${base}/health/ready`), { status: 200, body: `{"status":"ready"}` })

      yield* idleConnection(port)
      const body = JSON.stringify({ phone: "+7 900 111-22-33", name: "Slow upload" })
      const upload = slowUpload(port, `${V1}/leads`, { authorization: `Bearer ${key}`, "idempotency-key": "slow-1" }, body, 10)
      yield* Effect.sleep("300 millis")

      const signalled = Date.now()
      api.stop()
      // A second SIGTERM (an impatient operator) changes nothing.
      yield* Effect.sleep("50 millis")
      api.stop()
      const ready = yield* pollUntil(`${base}/health/ready`, (status) => status !== 200, 1_000, 25)
      assert.strictEqual(ready.status, 503, ready.body)
      assert.deepStrictEqual(JSON.parse(ready.body), SHUTTING_DOWN)
      assert.isBelow(Date.now() - signalled, 1_000, "readiness turns at once")
      // Everything else is still served during the delay.
      assert.deepStrictEqual(yield* httpGet(`${base}/health/live`), { status: 200, body: `{"status":"ok"}` })
      const students = yield* rawClient(base).get(`${V1}/students`, key)
      assert.strictEqual(students.status, 200, students.text)

      // After the delay: no new connections.
      const refused = yield* pollUntil(`${base}/health/live`, (status) => status === 0, 5_000, 25)
      assert.strictEqual(refused.status, 0, "new connections are refused after the delay")
      assert.isAtLeast(Date.now() - signalled, 1_400, "not before SHUTDOWN_DELAY")

      // The request in flight gets its normal answer.
      upload.finish()
      const answer = yield* Effect.promise(() => upload.answer)
      if (answer instanceof Error) return assert.fail(`the request in flight failed: ${answer.message}`)
      assert.strictEqual(answer.status, 201, answer.body)
      assert.strictEqual(JSON.parse(answer.body).data.name, "Slow upload")

      // Exit 0 at once: neither this connection nor the idle one waits out the keep-alive time-out (5 s).
      const code = yield* Effect.promise(() => api.exited)
      assert.strictEqual(code, 0, api.log())
      assert.isBelow(Date.now() - answer.at, 2_000, "the exit follows the last answer")
      assert.match(api.log(), /shutting_down/)
    }).pipe(Effect.scoped), 30_000)

  it.effect("SHUTDOWN_TIMEOUT cuts a request that does not finish; exit 0", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const key = yield* writer
      const port = yield* Effect.orDie(freePort)
      const api = yield* startApi(database.url, port, { SHUTDOWN_TIMEOUT: "1s" })
      const body = JSON.stringify({ phone: "+7 900 111-22-44", name: "Never finished" })
      const upload = slowUpload(port, `${V1}/leads`, { authorization: `Bearer ${key}`, "idempotency-key": "slow-2" }, body, 10)
      yield* Effect.sleep("300 millis")

      const signalled = Date.now()
      api.stop()
      const answer = yield* Effect.promise(() => upload.answer)
      assert.instanceOf(answer, Error, "the connection is cut")
      const code = yield* Effect.promise(() => api.exited)
      assert.strictEqual(code, 0, api.log())
      const took = Date.now() - signalled
      assert.isAtLeast(took, 900, "not before SHUTDOWN_TIMEOUT")
      assert.isBelow(took, 4_000, "bounded by SHUTDOWN_TIMEOUT")
    }).pipe(Effect.scoped), 30_000)
})
