/**
 * Two real API processes (apps/api/src/main.ts) on one database share every
 * key's budget exactly (docs/integrators.md "Limits", docs/decisions.md "Rate limits"): requests spread
 * over both, concurrently, get exactly the budget accepted; a 429 from either
 * carries a Retry-After after which either accepts; a plan change made with
 * the operator CLI (`schools set-plan`) applies in both at once, also where
 * the key was blocked locally. The window is shortened with
 * RATE_LIMIT_WINDOW, and the clock is the database's.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { freePort } from "@school/runtime/Ports"
import { rawClient, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { entryPoints, run, startApi } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const WINDOW_SECONDS = 8
const STUDENTS = `${V1}/students?per_page=1`

interface Reply {
  readonly status: number
  readonly retryAfter: string | null
}

const get = (base: string, key: string) =>
  rawClient(base).get(STUDENTS, key).pipe(
    Effect.map((reply): Reply => ({ status: reply.status, retryAfter: reply.headers.get("retry-after") })),
    Effect.orDie
  )

/** `count` requests of one key, alternating between the processes, 16 at a time. */
const spread = (bases: ReadonlyArray<string>, key: string, count: number) =>
  Effect.forEach(Array.from({ length: count }, (_, i) => bases[i % bases.length] ?? ""), (base) => get(base, key), {
    concurrency: 16
  })

const accepted = (replies: ReadonlyArray<Reply>) => replies.filter((reply) => reply.status === 200).length

layer(TestDatabase.layer, { timeout: 120_000, excludeTestServices: true })("rate limit shared by two API processes", (it) => {
  it.effect("one budget per key across processes; Retry-After holds in both; set-plan applies in both", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const ports = [yield* Effect.orDie(freePort), yield* Effect.orDie(freePort)]
      yield* Effect.scoped(Effect.gen(function*() {
        const bases = ports.map((port) => `http://127.0.0.1:${port}`)
        for (const port of ports) yield* startApi(database.url, port, { RATE_LIMIT_WINDOW: `${WINDOW_SECONDS}s` })
        const [a = "", b = ""] = bases

        // Exactly the budget, wherever the requests land.
        const { schoolId } = yield* Fixtures.school("basic", "Shared")
        const key = yield* Fixtures.key(schoolId)
        const started = Date.now()
        const burst = yield* spread(bases, key, 300)
        assert.isBelow(Date.now() - started, WINDOW_SECONDS * 1000, "the burst must fit in one window")
        assert.strictEqual(accepted(burst), 120)
        assert.isTrue(burst.every((reply) => reply.status === 200 || reply.status === 429))

        // A 429 from either process; waiting its Retry-After is enough for the other.
        const rejected = yield* get(b, key)
        assert.strictEqual(rejected.status, 429)
        const retryAfter = Number(rejected.retryAfter)
        assert.isTrue(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= WINDOW_SECONDS, `${retryAfter}`)
        assert.strictEqual((yield* get(a, key)).status, 429)
        yield* Effect.sleep(`${retryAfter} seconds`)
        assert.strictEqual((yield* get(a, key)).status, 200)

        // A key blocked in both processes; the operator raises the school's plan.
        const { schoolId: upgraded } = yield* Fixtures.school("basic", "Upgraded")
        const second = yield* Fixtures.key(upgraded)
        const before = Date.now()
        assert.strictEqual(accepted(yield* spread(bases, second, 130)), 120)
        assert.strictEqual((yield* get(a, second)).status, 429)
        assert.strictEqual((yield* get(b, second)).status, 429)
        const setPlan = yield* run(entryPoints.cli, ["schools", "set-plan", "--school", String(upgraded), "--plan", "pro"], {
          DATABASE_URL: database.url
        })
        assert.strictEqual(setPlan.code, 0, setPlan.stderr)
        assert.strictEqual((yield* get(a, second)).status, 200)
        assert.strictEqual((yield* get(b, second)).status, 200)
        // 122 of 600 used: 478 more, and not one more, over both processes.
        assert.strictEqual(accepted(yield* spread(bases, second, 500)), 478)
        assert.isBelow(Date.now() - before, WINDOW_SECONDS * 1000, "the scenario must fit in one window")
      }))
    }))
})
