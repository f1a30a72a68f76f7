/**
 * Every kind of failed attempt (docs/integrators.md "Receiving webhooks"; docs/decisions.md
 * "Webhooks"), each recorded in the journal and retried by the plan: a
 * time-out, a 3xx (a redirect to the metadata address is not followed), 410,
 * 429, 500, a refused connection, a connection closed mid-response; a
 * response body kept to 4 KiB; and, with WEBHOOK_ALLOW_INSECURE_URLS off, a
 * host that resolves to a loopback address (and literal internal
 * addresses): refused as `blocked_address` before any connection is made.
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Effect } from "effect"
import { closeMidResponse, hang, redirect, startReceiver, status } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

/** The plan's first pause is long: each test sees first attempts only. */
const firstOnly = { WEBHOOK_RETRY_DELAYS: "10m", WEBHOOK_TIMEOUT: "500ms" }

layer(TestDatabase.layer, { excludeTestServices: true })("failed attempts", (it) => {
  it.effect("time-out, 3xx, 410, 429, 500, refused, closed mid-response: each a failure in the journal, retry planned", () =>
    Effect.gen(function*() {
      const { schoolId } = yield* T.school("Failures school")
      const cases = [
        { name: "hang", receiver: yield* startReceiver(() => hang) },
        { name: "redirect", receiver: yield* startReceiver(() => redirect("http://169.254.169.254/latest/meta-data/")) },
        { name: "gone", receiver: yield* startReceiver(() => status(410)) },
        { name: "throttled", receiver: yield* startReceiver(() => status(429)) },
        { name: "broken", receiver: yield* startReceiver(() => status(500, "x".repeat(10_000))) },
        { name: "closes", receiver: yield* startReceiver(() => closeMidResponse) }
      ]
      const subs = new Map<string, number>()
      for (const c of cases) subs.set(c.name, (yield* T.subscription(schoolId, c.receiver.url)).id)
      const refusedPort = yield* freePort
      subs.set("refused", (yield* T.subscription(schoolId, `http://127.0.0.1:${refusedPort}/hook`)).id)

      yield* T.runDispatcher(firstOnly)
      const started = Date.now()
      yield* T.leads(schoolId, 1)
      const attempts = yield* T.eventually("one attempt each", T.attempts(schoolId), (rows) => rows.length === subs.size)
      const rows = yield* T.deliveries(schoolId)
      const bySubscription = new Map(rows.map((row) => [row.subscription_id, row]))
      const attemptOf = (name: string) => {
        const delivery = bySubscription.get(subs.get(name) ?? 0)
        return attempts.find((a) => a.delivery_id === delivery?.id)
      }
      assert.deepStrictEqual(
        [...subs.keys()].map((name) => [name, attemptOf(name)?.response_code ?? null, attemptOf(name)?.error ?? null]),
        [
          ["hang", null, "timeout"],
          ["redirect", 302, null],
          ["gone", 410, null],
          ["throttled", 429, null],
          ["broken", 500, null],
          // The status line arrived, the body did not: a failure, its code kept for the journal.
          ["closes", 200, "connection_closed"],
          ["refused", null, "connection_refused"]
        ]
      )
      // Every one is pending for its next attempt (failed, not delivered).
      assert.isTrue(rows.every((row) => row.status === "pending" && row.attempts === 1))
      // The time-out bounds the hanging attempt.
      const hung = attemptOf("hang")?.duration_ms ?? 0
      assert.isAtLeast(hung, 450)
      assert.isBelow(hung, 1_500)
      assert.isBelow(Date.now() - started, 5_000)
      // 4 KiB of the answer for the journal.
      assert.strictEqual(attemptOf("broken")?.response_body, "x".repeat(4096))
      // The redirect was not followed: one request at the receiver, nothing else attempted.
      const redirecting = cases.find((c) => c.name === "redirect")?.receiver
      assert.strictEqual(redirecting?.received.length, 1)
      for (const id of subs.values()) yield* T.setStatus(schoolId, id, "disabled")
    }))

  it.effect("insecure URLs off: a host resolving to loopback and internal literals are refused, no connection made", () =>
    Effect.gen(function*() {
      const { schoolId } = yield* T.school("Blocked school")
      const receiver = yield* startReceiver()
      const urls = [
        `https://localhost:${receiver.port}/hook`,
        `https://127.0.0.1:${receiver.port}/hook`,
        `https://[::ffff:127.0.0.1]:${receiver.port}/hook`,
        `https://169.254.169.254/latest/meta-data/`,
        // http is refused too when insecure URLs are off.
        `http://example.com/hook`
      ]
      for (const url of urls) yield* T.subscription(schoolId, url)
      yield* T.runDispatcher({ ...firstOnly, WEBHOOK_ALLOW_INSECURE_URLS: "false" })
      yield* T.leads(schoolId, 1)
      const attempts = yield* T.eventually("one attempt each", T.attempts(schoolId), (rows) => rows.length === urls.length)
      assert.deepStrictEqual(attempts.map((a) => a.error), [
        "blocked_address",
        "blocked_address",
        "blocked_address",
        "blocked_address",
        "invalid_url"
      ])
      assert.isTrue(attempts.every((a) => a.response_code === null))
      assert.strictEqual(receiver.connections(), 0, "no connection to the loopback receiver")
      assert.strictEqual(receiver.received.length, 0)
    }))

  it.effect("insecure URLs on: a host name resolved once, its checked addresses tried in turn (localhost → ::1, 127.0.0.1)", () =>
    Effect.gen(function*() {
      const { schoolId } = yield* T.school("Localhost school")
      // Listens on 127.0.0.1 only; localhost may resolve to ::1 first.
      const receiver = yield* startReceiver()
      yield* T.subscription(schoolId, `http://localhost:${receiver.port}/hook`)
      yield* T.runDispatcher(firstOnly)
      yield* T.leads(schoolId, 1)
      const [request] = yield* receiver.waitFor(1)
      assert.strictEqual(request?.headers["host"], `localhost:${receiver.port}`)
      yield* T.eventually("delivered", T.deliveries(schoolId), (rows) => rows[0]?.status === "delivered")
    }))
})
