/**
 * The outbox's wake-up (docs/development.md "apps/dispatcher"): a listener
 * on `outbox_events` is notified when a write that appended an event
 * commits, and not at all for a write that was refused or rolled back (the
 * NOTIFY is sent inside the transaction). A real LISTEN connection.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { OUTBOX_CHANNEL } from "@school/persistence/Outbox"
import { V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { count, funnel } from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

class World extends Context.Service<World, { readonly schoolId: number; readonly writeKey: string }>()(
  "test/api/outbox/World"
) {
  static readonly layer = Layer.effect(
    World,
    Effect.gen(function*() {
      const a = yield* Fixtures.school("pro", "School A")
      yield* funnel(a.schoolId, "Main", true, [["Incoming", 10]])
      return World.of({ schoolId: a.schoolId, writeKey: yield* Fixtures.key(a.schoolId, { scope: "write" }) })
    })
  )
}

const Env = World.layer.pipe(Layer.provideMerge(TestServer.layer()), Layer.provideMerge(TestDatabase.layer))

let n = 0
const postLead = (body: unknown) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const world = yield* World
    return yield* server.raw.post(`${V1}/leads`, { key: world.writeKey, idempotencyKey: `outbox-${++n}-${Math.random()}`, body })
  })

/** None when no notification arrives within 300 ms. */
const nothingWithin = <A, E>(queue: Queue.Dequeue<A, E>) =>
  Queue.take(queue).pipe(Effect.timeoutOption(Duration.millis(300)), Effect.orDie)

layer(Env, { excludeTestServices: true })("outbox NOTIFY", (it) => {
  it.effect("a committed lead wakes a listener on outbox_events; a refused or rolled-back one does not", () =>
    Effect.scoped(Effect.gen(function*() {
      const pg = yield* PgClient.PgClient
      const sql = yield* SqlClient.SqlClient
      const world = yield* World
      const queue = yield* Effect.orDie(pg.listen(OUTBOX_CHANNEL))

      // Refused before any write.
      assert.strictEqual((yield* postLead({ phone: "12345", funnel_id: 424242 })).status, 422)
      assert.isTrue(Option.isNone(yield* nothingWithin(queue)))

      // Written, then rolled back at the last statement: the NOTIFY goes with it.
      yield* sql`ALTER TABLE idempotency_keys ADD CONSTRAINT test_refuse_completion CHECK (completed_at IS NULL) NOT VALID`
      const server = yield* TestServer
      const [failed, logged] = yield* server.expectingLogs(postLead({ phone: "12345" })).pipe(
        Effect.ensuring(sql`ALTER TABLE idempotency_keys DROP CONSTRAINT test_refuse_completion`.pipe(Effect.orDie))
      )
      assert.strictEqual(failed.status, 500)
      assert.deepStrictEqual(logged.map((entry) => entry.message), ["request failed"])
      assert.isTrue(Option.isNone(yield* nothingWithin(queue)))
      assert.strictEqual(yield* count("outbox_events", world.schoolId), 0)

      // Committed: one notification.
      assert.strictEqual((yield* postLead({ phone: "12345" })).status, 201)
      const note = yield* Queue.take(queue).pipe(Effect.timeout(Duration.seconds(5)), Effect.orDie)
      assert.strictEqual(note.channel, OUTBOX_CHANNEL)
      assert.strictEqual(yield* count("outbox_events", world.schoolId), 1)
    })))
})
