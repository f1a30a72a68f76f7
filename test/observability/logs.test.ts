/**
 * The log lines of both real processes (docs/operations.md "Log lines"), with LOG_LEVEL=debug and LOG_FORMAT=json:
 * a full scenario issues API keys, signs back-office staff in with their
 * password, creates webhook subscriptions, makes requests that carry a key
 * in the path and the query, a sign-in with a wrong password, writes whose
 * events the dispatcher delivers (and fails to), and then every captured
 * line (stdout and stderr of both) is searched for each secret: whole keys
 * and their secret parts, session tokens, passwords, webhook secrets. The
 * search is shown to catch a planted line. Every line parses as JSON; the
 * access lines carry the request id, method, route template, status,
 * duration, and the school of an authenticated request; the dispatcher's
 * attempt lines carry the delivery, subscription, attempt and outcome.
 */
import { assert, layer } from "@effect/vitest"
import { freePort } from "@school/runtime/Ports"
import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { CRM, PASSWORD, staffSchool } from "../support/BackOffice.ts"
import { V1 } from "../support/Clients.ts"
import { entryPoints, lines, runUntil, startDispatcher } from "../support/Processes.ts"
import { ok, startReceiver, status } from "../support/Receivers.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "../dispatcher/support.ts"

const request = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    return { status: response.status, text, json: (): unknown => JSON.parse(text) }
  })

const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body)
})

const Token = Schema.Struct({ data: Schema.Struct({ token: Schema.String }) })
const Issued = Schema.Struct({ data: Schema.Struct({ key: Schema.String }) })
const Created = Schema.Struct({ data: Schema.Struct({ secret: Schema.String }) })

/** The secrets that appear in `text`, each named by its kind. */
const leaks = (text: string, secrets: ReadonlyArray<readonly [kind: string, secret: string]>) =>
  secrets.filter(([, secret]) => text.includes(secret)).map(([kind]) => kind)

const env = {
  LOG_FORMAT: "json",
  LOG_LEVEL: "debug",
  WEBHOOK_ALLOW_INSECURE_URLS: "true",
  WEBHOOK_RETRY_DELAYS: "100ms",
  WEBHOOK_TIMEOUT: "2s"
}

type Line = { readonly message?: unknown; readonly level?: unknown; readonly annotations?: Record<string, unknown> }

layer(TestDatabase.layer, { excludeTestServices: true })("log lines", (it) => {
  it.effect("a full scenario at debug: no secret in any line; JSON lines with the access and attempt fields", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const school = yield* staffSchool("pro")
      const port = yield* Effect.orDie(freePort)
      const api = `http://127.0.0.1:${port}`
      const good = yield* startReceiver(() => ok)
      const bad = yield* startReceiver(() => status(500))
      const secrets: Array<readonly [string, string]> = [["password", PASSWORD]]
      const wrongPassword = "not the password, but secret too"
      secrets.push(["wrong password", wrongPassword])
      let dispatcherLog = ""
      const sql = yield* SqlClient.SqlClient

      const finished = yield* runUntil(
        entryPoints.api,
        { ...env, DATABASE_URL: database.url, PORT: String(port), HOST: "127.0.0.1" },
        "listening on http",
        "SIGTERM",
        () =>
          Effect.scoped(Effect.gen(function*() {
            const dispatcher = yield* startDispatcher(database.url, env)
            // Sign-ins: a wrong password, then the owner's and the administrator's.
            const refused = yield* request(`${api}${CRM}/sessions`, json({ email: school.emails.owner, password: wrongPassword }))
            assert.strictEqual(refused.status, 401, refused.text)
            const tokens: Array<string> = []
            for (const email of [school.emails.owner, school.emails.administrator]) {
              const signed = yield* request(`${api}${CRM}/sessions`, json({ email, password: PASSWORD }))
              assert.strictEqual(signed.status, 201, signed.text)
              tokens.push(Schema.decodeUnknownSync(Token)(signed.json()).data.token)
            }
            for (const token of tokens) secrets.push(["session token", token])
            const session = { authorization: `Session ${tokens[0]}` }
            // Keys issued in the back office.
            const keys: Array<string> = []
            for (const scope of ["write", "read"]) {
              const issued = yield* request(`${api}${CRM}/api-keys`, json({ name: `log ${scope}`, scope }, session))
              assert.strictEqual(issued.status, 201, issued.text)
              keys.push(Schema.decodeUnknownSync(Issued)(issued.json()).data.key)
            }
            for (const key of keys) {
              secrets.push(["API key", key])
              secrets.push(["API key secret", key.slice(key.lastIndexOf("_") + 1)])
            }
            // Subscriptions created in the back office, each with its secret.
            for (const receiver of [good, bad]) {
              const created = yield* request(`${api}${CRM}/webhooks`, json({ url: receiver.url, events: ["lead.created"] }, session))
              assert.strictEqual(created.status, 201, created.text)
              secrets.push(["webhook secret", Schema.decodeUnknownSync(Created)(created.json()).data.secret])
            }
            const [writeKey = "", readKey = ""] = keys
            const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
            // Keys where they do not belong: in the path, in the query, as an unknown key.
            assert.strictEqual((yield* request(`${api}${V1}/students/${writeKey}`, { headers: bearer(readKey) })).status, 422)
            assert.strictEqual((yield* request(`${api}${V1}/${readKey}`, { headers: bearer(readKey) })).status, 404)
            assert.strictEqual((yield* request(`${api}${V1}/students?key=${writeKey}`, { headers: bearer(readKey) })).status, 200)
            const forged = `${writeKey.slice(0, -4)}AAAA`
            secrets.push(["forged key", forged])
            assert.strictEqual((yield* request(`${api}${V1}/students`, { headers: bearer(forged) })).status, 401)
            // A write (its event goes to both receivers) and its replay; a back-office read.
            const write = json({ name: "Logged Lead", phone: "+79001234567" }, { ...bearer(writeKey), "idempotency-key": `idem-${writeKey}` })
            assert.strictEqual((yield* request(`${api}${V1}/leads`, write)).status, 201)
            assert.strictEqual((yield* request(`${api}${V1}/leads`, write)).status, 201)
            assert.strictEqual((yield* request(`${api}${CRM}/webhooks`, { headers: session })).status, 200)
            // The deliveries: one delivered, one failed twice (finally).
            yield* good.waitFor(1, 15_000)
            yield* bad.waitFor(2, 15_000)
            yield* T.eventually(
              "both deliveries finished",
              T.deliveries(school.schoolId),
              (rows) => rows.length === 2 && rows.every((row) => row.status !== "pending"),
              15_000
            )
            // Let the last lines reach the pipes.
            yield* Effect.sleep("300 millis")
            dispatcherLog = dispatcher.log()
          })).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
      )
      assert.isTrue(Option.isSome(finished.result), finished.stderr)
      const everything = [finished.stdout, finished.stderr, dispatcherLog].join("\n")

      // The search catches a planted line (so its silence below means something) ...
      for (const [kind, secret] of secrets) {
        assert.deepStrictEqual(leaks(`{"message":"planted ${secret}"}`, [[kind, secret]]), [kind])
      }
      // ... and finds no secret in any line of either process.
      assert.strictEqual(secrets.length, 2 + 2 + 4 + 2 + 1)
      assert.deepStrictEqual(leaks(everything, secrets), [])
      assert.notInclude(everything, "whsec_")

      // Every line is a JSON object.
      const apiLines = lines(finished.stdout + finished.stderr).map((line): Line => JSON.parse(line))
      const attemptLines = lines(dispatcherLog).map((line): Line => JSON.parse(line))
      const access = apiLines.filter((line) => line.annotations?.["http.route"] !== undefined)
      assert.isAtLeast(access.length, 13)
      for (const line of access) {
        const a = line.annotations ?? {}
        assert.isString(a["request_id"])
        assert.isString(a["http.method"])
        assert.isNumber(a["http.status"])
        assert.isNumber(a["http.duration_ms"])
      }
      const schoolOf = (method: string, route: string, status: number) =>
        access.filter((line) =>
          line.annotations?.["http.method"] === method && line.annotations["http.route"] === route &&
          line.annotations["http.status"] === status
        ).map((line) => line.annotations?.["school_id"])
      // Authenticated by a key, by a session, by signing in: the school; not authenticated: none.
      assert.deepStrictEqual(schoolOf("GET", `${V1}/students`, 200), [school.schoolId])
      assert.deepStrictEqual(schoolOf("POST", `${V1}/leads`, 201), [school.schoolId, school.schoolId])
      assert.deepStrictEqual(schoolOf("GET", `${CRM}/webhooks`, 200), [school.schoolId])
      assert.deepStrictEqual(schoolOf("POST", `${CRM}/sessions`, 201), [school.schoolId, school.schoolId])
      assert.deepStrictEqual(schoolOf("POST", `${CRM}/sessions`, 401), [undefined])
      assert.deepStrictEqual(schoolOf("GET", `${V1}/students`, 401), [undefined])
      assert.deepStrictEqual(schoolOf("GET", "(no route)", 404), [undefined])

      // The dispatcher's attempt lines: failures at Info, the delivery at Debug.
      const attempts = attemptLines.filter((line) =>
        typeof line.message === "string" && line.message.startsWith("dispatcher: attempt ")
      )
      const fields = attempts.map((line) => {
        const a = line.annotations ?? {}
        return [line.level, a["outcome"], a["attempt"], a["result"], typeof a["delivery_id"], typeof a["subscription_id"]]
      })
      assert.sameDeepMembers(fields, [
        ["DEBUG", "delivered", 1, "2xx", "number", "number"],
        ["INFO", "retrying", 1, "5xx", "number", "number"],
        ["INFO", "failed", 2, "5xx", "number", "number"]
      ])
    }), { timeout: 90_000 })
})
