/**
 * The client kit (`@school/client`) against the real API (TestServer, a
 * real database), through its Promise face as a plain Node project uses it:
 *
 * - a 429 is repeated after its Retry-After and the call succeeds;
 * - a key that stays over budget: the client gives up after `maxAttempts`,
 *   with the service's `RateLimitExceeded`;
 * - a write whose answer is lost (a loopback proxy drops the connection
 *   after the service answered) is repeated with the same Idempotency-Key:
 *   one lead exists, the repeat is answered `Idempotent-Replayed: true`,
 *   and the call resolves with that lead; another logical write gets
 *   another key;
 * - an answer that is not transient (422 invalid_window) is not repeated;
 *   errors are `ApiError`s with `code`, `message`, `status` and `fields` on
 *   the instance, also for an answer the endpoint does not declare;
 * - the Effect face (`make`) fails with the same `ApiError`: `code`,
 *   `message`, `fields`, `status`, `headers` on the instance for a real 401,
 *   404, 422 and 429, and `Effect.catchTag` by its `_tag`;
 * - the base URL works with or without `/api/public/v1`, with or without a
 *   trailing slash;
 * - `enrollments.list`, and `all`, the async iterator that walks a list's
 *   cursor pages through 429s.
 *
 * The limiter runs on a clock the test can stop (RateLimitOptions.clock):
 * while stopped, the window never slides and a key over budget stays there.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Errors } from "@school/domain"
import { ApiError, make, makeClient, RetryPolicy } from "../../libs/client/src/index.ts"
import * as Http from "node:http"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const BUDGET = 3
let stoppedAt: number | undefined
const clock = Effect.sync(() => stoppedAt ?? Date.now() * 1000)

const Env = TestServer.layer({
  settings: { RATE_LIMIT_WINDOW: "1s" },
  rateLimit: {
    budgets: Option.some({ byPlan: {}, fallback: BUDGET }),
    clock: Option.some(clock)
  }
}).pipe(Layer.provideMerge(TestDatabase.layer))

interface Seen {
  readonly method: string
  readonly path: string
  readonly idempotencyKey: string | undefined
  readonly status: number
  readonly replayed: string | undefined
  readonly body: string
}

/**
 * An HTTP proxy on 127.0.0.1 in front of `upstream`: it forwards every
 * request, records it with the upstream's answer, and for the requests
 * `drop` picks, closes the client's connection instead of answering (the
 * answer existed, the client never sees it).
 */
const droppingProxy = (upstream: string, drop: (index: number, request: Http.IncomingMessage) => boolean) =>
  Effect.acquireRelease(
    Effect.callback<{ server: Http.Server; url: string; seen: Array<Seen> }>((resume) => {
      const seen: Array<Seen> = []
      const server = Http.createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const index = seen.length
          const headers = new Headers()
          for (const [name, value] of Object.entries(request.headers)) {
            if (typeof value === "string" && name !== "host" && name !== "connection") headers.set(name, value)
          }
          const body = Buffer.concat(chunks)
          void fetch(`${upstream}${request.url ?? ""}`, {
            method: request.method ?? "GET",
            headers,
            ...(body.length > 0 ? { body } : {})
          }).then(async (answer) => {
            const text = await answer.text()
            seen.push({
              method: request.method ?? "",
              path: request.url ?? "",
              idempotencyKey: request.headers["idempotency-key"] as string | undefined,
              status: answer.status,
              replayed: answer.headers.get("idempotent-replayed") ?? undefined,
              body: text
            })
            if (drop(index, request)) {
              request.socket.destroy()
              return
            }
            const out: Record<string, string> = {}
            answer.headers.forEach((value, name) => {
              if (name !== "content-length" && name !== "transfer-encoding" && name !== "connection") out[name] = value
            })
            response.writeHead(answer.status, out)
            response.end(text)
          })
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = address !== null && typeof address === "object" ? address.port : 0
        resume(Effect.succeed({ server, url: `http://127.0.0.1:${port}`, seen }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )

const promise = <A>(run: () => Promise<A>) => Effect.promise(() => run().then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error })))

layer(Env, { excludeTestServices: true, timeout: 60_000 })("@school/client against the API", (it) => {
  it.effect("a 429 is repeated after Retry-After, and the call succeeds", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId, filialId } = yield* Fixtures.school("pro", "Client 429")
      yield* Fixtures.students(schoolId, filialId, 3, "Student")
      const key = yield* Fixtures.key(schoolId)
      const retries: Array<RetryPolicy.RetryEvent> = []
      const client = makeClient({ baseUrl: server.baseUrl, apiKey: key, retry: { baseDelay: "50 millis", onRetry: (e) => retries.push(e) } })

      for (let i = 0; i < BUDGET; i++) assert.strictEqual((yield* server.raw.get("/api/public/v1/students", key)).status, 200)
      const started = Date.now()
      const page = yield* promise(() => client.students.list({ per_page: 100 }))
      const elapsed = Date.now() - started

      assert.isTrue(page.ok, JSON.stringify(page))
      if (page.ok) assert.strictEqual(page.value.data.length, 3)
      const first = retries[0]
      assert.isDefined(first, "the client saw a 429 and repeated")
      assert.strictEqual(first?.status, 429)
      assert.strictEqual(first?.attempt, 2)
      assert.isAtLeast(first?.retryAfterMs ?? 0, 1_000, "Retry-After: whole seconds, at least 1")
      assert.isAtLeast(first?.pauseMs ?? 0, first?.retryAfterMs ?? Infinity, "waited at least Retry-After")
      assert.isAtLeast(elapsed, first?.pauseMs ?? Infinity)
      assert.match(first?.url ?? "", /\/api\/public\/v1\/students$/)
    }))

  it.effect("a key that stays over budget: bounded attempts, then the service's RateLimitExceeded", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId } = yield* Fixtures.school("pro", "Client give-up")
      const key = yield* Fixtures.key(schoolId)
      const retries: Array<RetryPolicy.RetryEvent> = []
      const client = makeClient({
        baseUrl: server.baseUrl,
        apiKey: key,
        retry: { maxAttempts: 3, baseDelay: "50 millis", maxDelay: "100 millis", onRetry: (e) => retries.push(e) }
      })
      stoppedAt = Date.now() * 1000
      try {
        for (let i = 0; i < BUDGET; i++) assert.strictEqual((yield* server.raw.get("/api/public/v1/groups", key)).status, 200)
        const result = yield* promise(() => client.groups.list())
        assert.isFalse(result.ok)
        if (!result.ok) {
          assert.instanceOf(result.error, ApiError, String(result.error))
          const error = result.error as ApiError
          assert.strictEqual(error.code, "rate_limit_exceeded")
          assert.strictEqual(error._tag, "RateLimitExceeded")
          assert.strictEqual(error.status, 429)
          assert.strictEqual(error.name, "ApiError")
          assert.isAtLeast(error.retryAfterSeconds ?? 0, 1)
          assert.strictEqual(error.headers["retry-after"], String(error.retryAfterSeconds))
        }
        assert.deepStrictEqual(retries.map((e) => [e.attempt, e.status]), [[2, 429], [3, 429]])
        // Retry-After (1 s) is above maxDelay: the server's word wins, the bound does not cut it.
        for (const e of retries) assert.isAtLeast(e.pauseMs, e.retryAfterMs ?? Infinity)
      } finally {
        stoppedAt = undefined
      }
    }))

  it.effect("a write whose answer was lost is repeated with the same Idempotency-Key: one lead, replayed", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId } = yield* Fixtures.school("pro", "Client idempotency")
      yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
      const key = yield* Fixtures.key(schoolId, { scope: "write" })
      const proxy = yield* droppingProxy(server.baseUrl, (index, request) => index === 0 && request.method === "POST")
      const retries: Array<RetryPolicy.RetryEvent> = []
      const client = makeClient({ baseUrl: proxy.url, apiKey: key, retry: { baseDelay: "50 millis", onRetry: (e) => retries.push(e) } })

      const created = yield* promise(() => client.leads.create({ phone: "+7 900 123-45-67", name: "Lost answer" }))
      assert.isTrue(created.ok, JSON.stringify(created))
      assert.deepStrictEqual(retries.map((e) => [e.attempt, e.status]), [[2, undefined]], "one repeat, after no answer")

      const [first, second] = proxy.seen
      assert.strictEqual(proxy.seen.length, 2)
      assert.strictEqual(first?.status, 201, "the service created the lead; the client never saw it")
      assert.strictEqual(first?.replayed, undefined)
      assert.match(first?.idempotencyKey ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      assert.strictEqual(second?.idempotencyKey, first?.idempotencyKey, "the same key on the repeat")
      assert.strictEqual(second?.status, 201)
      assert.strictEqual(second?.replayed, "true")
      assert.strictEqual(second?.body, first?.body, "the stored answer, byte for byte")
      assert.strictEqual(yield* Fixtures.count("leads", schoolId), 1)
      if (created.ok) {
        assert.strictEqual(created.value.data.id, (JSON.parse(first?.body ?? "{}") as { data: { id: number } }).data.id)
        assert.strictEqual(created.value.data.name, "Lost answer")
      }

      // Another logical write: another key, another lead.
      const again = yield* promise(() => client.leads.create({ phone: "+7 900 123-45-67", name: "Lost answer" }))
      assert.isTrue(again.ok)
      assert.strictEqual(proxy.seen.length, 3)
      assert.notStrictEqual(proxy.seen[2]?.idempotencyKey, first?.idempotencyKey)
      assert.strictEqual(yield* Fixtures.count("leads", schoolId), 2)

      // A key given by the caller is the one sent, and repeating the call replays.
      const mine = "order-2026-0001"
      const one = yield* promise(() => client.leads.create({ phone: "+7 900 000-00-01" }, { idempotencyKey: mine }))
      const two = yield* promise(() => client.leads.create({ phone: "+7 900 000-00-01" }, { idempotencyKey: mine }))
      assert.isTrue(one.ok && two.ok)
      if (one.ok && two.ok) assert.strictEqual(two.value.data.id, one.value.data.id)
      // (The budget here is 3 a second: a 429 on the way is repeated with the same key too.)
      const mineSeen = proxy.seen.slice(3)
      assert.isTrue(mineSeen.every((s) => s.idempotencyKey === mine))
      assert.deepStrictEqual(mineSeen.filter((s) => s.status !== 429).map((s) => [s.status, s.replayed]), [[201, undefined], [201, "true"]])
      assert.strictEqual(yield* Fixtures.count("leads", schoolId), 3)
    }))

  it.effect("an answer that is not transient is not repeated: 422 invalid_window as its class", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId } = yield* Fixtures.school("pro", "Client 422")
      const key = yield* Fixtures.key(schoolId)
      const retries: Array<RetryPolicy.RetryEvent> = []
      const client = makeClient({ baseUrl: server.baseUrl, apiKey: key, retry: { onRetry: (e) => retries.push(e) } })
      const result = yield* promise(() => client.lessons.list({ from: "2026-02-01", to: "2026-01-01" }))
      assert.isFalse(result.ok)
      if (!result.ok) {
        assert.instanceOf(result.error, ApiError)
        assert.instanceOf(result.error, Error)
        const error = result.error as ApiError
        assert.strictEqual(error.code, Errors.InvalidWindow.code)
        assert.strictEqual(error.code, "invalid_window")
        assert.strictEqual(error.status, 422)
        assert.strictEqual(error._tag, "InvalidWindow")
        assert.match(error.message, /.+/)
        assert.strictEqual(error.fields, undefined)
      }
      assert.deepStrictEqual(retries, [])
    }))

  it.effect("the base URL with or without /api/public/v1 and a trailing slash; errors carry their fields and code", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId, filialId } = yield* Fixtures.school("pro", "Client base URL")
      yield* Fixtures.students(schoolId, filialId, 2, "Student")
      const key = yield* Fixtures.key(schoolId)
      for (const baseUrl of [server.baseUrl, `${server.baseUrl}/`, `${server.baseUrl}/api/public/v1`, `${server.baseUrl}/api/public/v1/`]) {
        // (The budget here is 3 a second: the 4th list is repeated after its 429.)
        const client = makeClient({ baseUrl, apiKey: key, retry: { baseDelay: "50 millis" } })
        const page = yield* promise(() => client.students.list())
        assert.isTrue(page.ok, `${baseUrl}: ${JSON.stringify(page)}`)
        if (page.ok) assert.strictEqual(page.value.data.length, 2)
      }
      const client = makeClient({ baseUrl: `${server.baseUrl}/api/public/v1/`, apiKey: key, retry: { baseDelay: "50 millis" } })
      const missing = yield* promise(() => client.students.get(2_000_000_000))
      assert.isFalse(missing.ok)
      if (!missing.ok) {
        assert.instanceOf(missing.error, ApiError)
        assert.deepStrictEqual([(missing.error as ApiError).code, (missing.error as ApiError).status], ["not_found", 404])
      }
      // A read key on a write: 403 insufficient_scope.
      const scope = yield* promise(() => client.leads.create({ phone: "+7 900 111-22-33" }))
      assert.isFalse(scope.ok)
      if (!scope.ok) assert.strictEqual((scope.error as ApiError).code, "insufficient_scope")
      // A wrong key: 401 with fields.reason.
      const stranger = makeClient({ baseUrl: server.baseUrl, apiKey: "svc_abcdefgh_" + "A".repeat(32), retry: { maxAttempts: 1 } })
      const refused = yield* promise(() => stranger.groups.list())
      assert.isFalse(refused.ok)
      if (!refused.ok) {
        const error = refused.error as ApiError
        assert.deepStrictEqual([error.code, error.status, error.fields], ["unauthorized", 401, { reason: "unknown_key" }])
      }
    }))

  it.effect("the Effect face fails with ApiError: code, message, fields on the instance for a 401, 404, 422 and 429", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId } = yield* Fixtures.school("pro", "Client Effect face")
      const key = yield* Fixtures.key(schoolId)
      const client = yield* make({ baseUrl: server.baseUrl, apiKey: key, retry: { baseDelay: "50 millis" } })
      const own = (error: unknown) => {
        assert.instanceOf(error, ApiError, String(error))
        assert.instanceOf(error, Error)
        const e = error as ApiError
        assert.strictEqual(e.name, "ApiError")
        assert.strictEqual(e.constructor.name, "ApiError")
        assert.isTrue(Object.hasOwn(e, "code") && Object.hasOwn(e, "fields") && Object.hasOwn(e, "message"), "on the instance")
        return e
      }

      const notFound = own(yield* Effect.flip(client.students.get({ params: { id: 2_000_000_000 } })))
      assert.deepStrictEqual([notFound._tag, notFound.code, notFound.status, notFound.fields], ["NotFound", "not_found", 404, undefined])
      assert.match(notFound.message, /.+/)
      const caught = yield* client.students.get({ params: { id: 2_000_000_000 } }).pipe(
        Effect.map(() => "found"),
        Effect.catchTag("NotFound", (error) => Effect.succeed(`${error.code} ${error.status}`))
      )
      assert.strictEqual(caught, "not_found 404")

      const window = own(yield* Effect.flip(client.lessons.list({ query: { from: "2026-02-01", to: "2026-01-01" } })))
      assert.deepStrictEqual([window._tag, window.code, window.status, window.fields], ["InvalidWindow", "invalid_window", 422, undefined])
      assert.match(window.message, /.+/)

      const stranger = yield* make({ baseUrl: server.baseUrl, apiKey: "svc_abcdefgh_" + "A".repeat(32), retry: { maxAttempts: 1 } })
      const unauthorized = own(yield* Effect.flip(stranger.groups.list({ query: {} })))
      assert.deepStrictEqual(
        [unauthorized._tag, unauthorized.code, unauthorized.status, unauthorized.fields],
        ["Unauthorized", "unauthorized", 401, { reason: "unknown_key" }]
      )
      assert.strictEqual(unauthorized.message, "The API key is not known.")

      const limited = yield* Fixtures.key(schoolId)
      const once = yield* make({ baseUrl: server.baseUrl, apiKey: limited, retry: { maxAttempts: 1 } })
      stoppedAt = Date.now() * 1000
      try {
        for (let i = 0; i < BUDGET; i++) assert.strictEqual((yield* server.raw.get("/api/public/v1/groups", limited)).status, 200)
        const over = own(yield* Effect.flip(once.groups.list({ query: {} })))
        assert.deepStrictEqual([over._tag, over.code, over.status, over.fields], ["RateLimitExceeded", "rate_limit_exceeded", 429, undefined])
        assert.match(over.message, /.+/)
        assert.isAtLeast(over.retryAfterSeconds ?? 0, 1)
        assert.strictEqual(over.headers["retry-after"], String(over.retryAfterSeconds))
      } finally {
        stoppedAt = undefined
      }
    }))

  it.effect("enrollments.list, and all(): every item of a list through its cursor pages, 429s waited out", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId, filialId } = yield* Fixtures.school("pro", "Client walk")
      const ids = yield* Fixtures.students(schoolId, filialId, 7, "Student")
      const key = yield* Fixtures.key(schoolId)
      const retries: Array<RetryPolicy.RetryEvent> = []
      const client = makeClient({ baseUrl: server.baseUrl, apiKey: key, retry: { baseDelay: "50 millis", onRetry: (e) => retries.push(e) } })
      const groupId = yield* Fixtures.group(schoolId, filialId, "Walk group", 10)
      for (const id of ids.slice(0, 3)) yield* Fixtures.enroll(schoolId, id, groupId)
      const collect = <A>(iterable: AsyncIterable<A>) =>
        Effect.promise(async () => {
          const items: Array<A> = []
          for await (const item of iterable) items.push(item)
          return items
        })
      // 2 a page, 4 pages, a budget of 3 a second: the 4th page meets a 429 and is asked again.
      const seen = (yield* collect(client.students.all({ per_page: 2 }))).map((student) => student.id)
      assert.deepStrictEqual(seen, [...ids].sort((a, b) => a - b), "every student once, in id order")
      assert.isAtLeast(retries.length, 1, "a 429 on the way")
      assert.isTrue(retries.every((r) => r.status === 429))
      const enrollments = yield* promise(() => client.enrollments.list({ per_page: 2 }))
      assert.isTrue(enrollments.ok, JSON.stringify(enrollments))
      if (enrollments.ok) {
        assert.strictEqual(enrollments.value.data.length, 2)
        assert.deepStrictEqual(enrollments.value.meta, { page: 1, per_page: 2, total: 3 })
      }
      const walked = yield* collect(client.enrollments.all({ per_page: 2 }))
      assert.deepStrictEqual(walked.map((e) => e.student_id).sort((a, b) => a - b), [...ids.slice(0, 3)].sort((a, b) => a - b))
      assert.isTrue(walked.every((e) => e.group_id === groupId))
    }))
})
