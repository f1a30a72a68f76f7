/**
 * A key revoked in the back office answers `revoked_key` at once on every
 * API process (docs/back-office.md "API keys"), also on a process that had
 * blocked the key locally after a flood (the rate limiter's local block
 * list is told by NOTIFY): two real API processes on one database; the key
 * is flooded on B, revoked through A's back office, and B's next answer is
 * 401 `revoked_key`, not 429.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { freePort } from "@school/runtime/Ports"
import { createSchool } from "@school/persistence/Schools"
import { hashPassword } from "@school/runtime/Passwords"
import { SqlClient } from "effect/sql"
import { errorOf, rawClient, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const CRM = "/api/crm/v1"
const PASSWORD = "correct horse battery"

layer(TestDatabase.layer, { timeout: 120_000, excludeTestServices: true })("revocation across API processes", (it) => {
  it.effect("flooded and blocked on B, revoked through A's back office: B answers revoked_key at once", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const ports = [yield* Effect.orDie(freePort), yield* Effect.orDie(freePort)]
      yield* Effect.scoped(Effect.gen(function*() {
        for (const port of ports) yield* startApi(database.url, port)
        const [a, b] = ports.map((port) => rawClient(`http://127.0.0.1:${port}`))
        if (a === undefined || b === undefined) return assert.fail("two processes")

        const school = yield* Effect.orDie(createSchool({
          name: "Revoking School",
          plan: "basic",
          owner: { name: "Olga", email: "owner@revoking.test", passwordHash: yield* hashPassword(PASSWORD) }
        }))
        const key = yield* Fixtures.key(school.school_id)
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* Effect.orDie(sql<{ id: number }>`
          SELECT id FROM api_keys WHERE school_id = ${school.school_id} ORDER BY id DESC LIMIT 1`)
        if (row === undefined) return assert.fail("the key's row")

        // The basic plan's budget is 120 a minute: 160 requests leave the key blocked on B.
        const flood = yield* Effect.forEach(
          Array.from({ length: 160 }, () => 0),
          () => Effect.orDie(b.get(`${V1}/students?per_page=1`, key)),
          { concurrency: 16 }
        )
        assert.strictEqual(flood.filter((reply) => reply.status === 429).length, 40)

        const signIn = yield* Effect.orDie(a.post(`${CRM}/sessions`, { body: { email: "owner@revoking.test", password: PASSWORD } }))
        assert.strictEqual(signIn.status, 201, signIn.text)
        const token = Schema.decodeUnknownSync(Schema.Struct({ data: Schema.Struct({ token: Schema.String }) }))(signIn.json).data.token
        const revoked = yield* Effect.orDie(a.request(`${CRM}/api-keys/${row.id}`, {
          method: "DELETE",
          headers: { authorization: `Session ${token}` }
        }))
        assert.strictEqual(revoked.status, 200, revoked.text)

        // NOTIFY reaches B's listener within moments; until then B may still say 429, never 200.
        const deadline = Date.now() + 2_000
        let reply = yield* Effect.orDie(b.get(`${V1}/students?per_page=1`, key))
        while (reply.status === 429 && Date.now() < deadline) {
          yield* Effect.sleep("20 millis")
          reply = yield* Effect.orDie(b.get(`${V1}/students?per_page=1`, key))
        }
        assert.strictEqual(reply.status, 401, reply.text)
        assert.deepStrictEqual(errorOf(reply).fields, { reason: "revoked_key" })
        // A, which never blocked it, says the same.
        const onA = yield* Effect.orDie(a.get(`${V1}/students?per_page=1`, key))
        assert.deepStrictEqual(errorOf(onA).fields, { reason: "revoked_key" })
      }))
    }))
})
