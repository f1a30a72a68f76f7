/**
 * An Idempotency-Key after its attempt died with the database session that
 * ran it (docs/decisions.md "Idempotency"; docs/integrators.md "Writing"): a 5xx is not
 * stored, so a retry with the same key runs again (or replays) within
 * IDEMPOTENCY_WAIT; it is never held off with 409 idempotency_in_progress
 * because the failed attempt could not give its claim up. Exactly one lead
 * exists in the end.
 *
 * Each case blocks the write on a locked table, then takes its attempt's
 * database session away: PostgreSQL stopped (fast shutdown) and started
 * again; the session terminated while PostgreSQL stays up; the API process
 * killed. The file runs the real API process against its own embedded
 * PostgreSQL (never the run's shared server), which it stops and restarts.
 */
import { assert, describe, it } from "@effect/vitest"
import { runMigrations } from "@school/persistence/Migrations"
import * as Sql from "@school/persistence/Sql"
import { freePort } from "@school/runtime/Ports"
import { Deferred, Duration, Effect, Fiber, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { type RawReply, rawClient, V1 } from "../support/Clients.ts"
import * as Fixtures from "../support/Fixtures.ts"
import { entryPoints } from "../support/Processes.ts"
import { restartableDatabase } from "../support/RestartableDatabase.ts"

/** IDEMPOTENCY_WAIT of the API processes in this file. */
const WAIT_MS = 1000

/** The test's own connections to its server (a fresh pool per use, so a restart leaves none stale). */
const withDatabase = <A, E>(url: string, effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(effect, Sql.layer({ url, maxConnections: 2 })).pipe(Effect.orDie)

const scalar = (query: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<{ n: number }>(query)).pipe(
    Effect.map((rows) => rows[0]?.n ?? 0),
    Effect.orDie
  )

/** Waits until a session of the API is blocked on a lock (its write reached the locked table); its pid. */
const blockedSession = Effect.gen(function*() {
  for (let i = 0; i < 500; i++) {
    const pid = yield* scalar(`SELECT pid AS n FROM pg_stat_activity
                               WHERE datname = current_database() AND wait_event_type = 'Lock' LIMIT 1`)
    if (pid !== 0) return pid
    yield* Effect.sleep(Duration.millis(10))
  }
  return yield* Effect.die(new Error("no request blocked on the lock"))
})

/**
 * Holds `LOCK TABLE leads IN EXCLUSIVE MODE` on its own connection until
 * `release` completes or the connection dies (the database stopped).
 */
const holdLeadsLock = (url: string, release: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    const locked = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkChild(withDatabase(
      url,
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql.unsafe("LOCK TABLE leads IN EXCLUSIVE MODE")
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(release)
        })))
    ).pipe(Effect.exit))
    yield* Deferred.await(locked)
    return fiber
  })

/**
 * The real API process on `port`, listening; `kill` is SIGKILL (the process
 * dies with a request in flight, as in a crash). Killed when the scope closes.
 */
const spawnApi = (databaseUrl: string, port: number) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly kill: Effect.Effect<void> }, Error>((resume) => {
      const child = spawn(process.execPath, [entryPoints.api], {
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          PORT: String(port),
          HOST: "127.0.0.1",
          LOG_FORMAT: "json",
          IDEMPOTENCY_WAIT: `${WAIT_MS}ms`,
          // The write stays blocked on the lock for as long as a case needs.
          DATABASE_STATEMENT_TIMEOUT: "60s",
          DATABASE_ACQUIRE_TIMEOUT: "2s"
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      const exited = new Promise<void>((done) => child.once("exit", () => done()))
      const kill = Effect.promise(() => {
        child.kill("SIGKILL")
        return exited
      })
      let log = ""
      const onData = (chunk: Buffer) => {
        log += chunk.toString()
        if (log.includes("Listening on")) resume(Effect.succeed({ kill }))
      }
      child.stdout.on("data", onData)
      child.stderr.on("data", onData)
      child.once("exit", (code) => resume(Effect.fail(new Error(`API exited early (${code}): ${log}`))))
      return kill
    }),
    (api) => api.kill
  )

/**
 * The same write again until the API reaches the database: every answer is
 * 503 (the database not back yet) until the first other one, which it
 * returns with how long the retries took once the database answered.
 */
const retryUntilServed = (send: Effect.Effect<RawReply, unknown>) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (true) {
      const sentAt = Date.now()
      const reply = yield* Effect.orDie(send)
      if (reply.status !== 503) return { reply, took: Date.now() - sentAt }
      assert.isBelow(Date.now() - started, 30_000, `still 503 after 30 s: ${reply.text}`)
      yield* Effect.sleep(Duration.millis(100))
    }
  })

describe("an Idempotency-Key whose attempt lost its database session", () => {
  it.live("runs again at once: PostgreSQL stopped during the write, the session killed, the API process killed", () =>
    Effect.gen(function*() {
      const { start: startDatabase } = yield* restartableDatabase("school-idem-outage-")
      const outer = yield* Scope.Scope
      /** A real API process in a scope of its own, so the test can kill it. */
      const startApiProcess = (url: string) =>
        Effect.gen(function*() {
          const scope = yield* Scope.fork(outer)
          const port = yield* freePort
          const api = yield* spawnApi(url, port).pipe(Scope.provide(scope), Effect.orDie)
          return { client: rawClient(`http://127.0.0.1:${port}`), kill: api.kill }
        })

      let database = yield* startDatabase
      const url = database.url
      const { key, schoolId } = yield* withDatabase(
        url,
        Effect.gen(function*() {
          yield* Effect.orDie(runMigrations)
          const { schoolId } = yield* Fixtures.school("pro", "Outage school")
          yield* Fixtures.funnel(schoolId, "Main", true, [["Incoming", 10]])
          return { key: yield* Fixtures.key(schoolId, { scope: "write" }), schoolId }
        })
      )
      const leads = withDatabase(url, Fixtures.count("leads", schoolId))
      const records = (idempotencyKey: string) =>
        withDatabase(
          url,
          Effect.flatMap(SqlClient.SqlClient, (sql) =>
            sql<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = ${idempotencyKey}`).pipe(
              Effect.map((rows) => rows[0]?.n ?? 0)
            )
        )

      let server = yield* startApiProcess(url)
      const write = (idempotencyKey: string, phone: string) =>
        server.client.post(`${V1}/leads`, { key, idempotencyKey, body: { phone } })

      /** The write after its attempt died: it runs (201, not replayed) at once, then replays; one lead more. */
      const expectRunsAgain = Effect.fnUntraced(function*(idempotencyKey: string, phone: string, before: number) {
        const { reply, took } = yield* retryUntilServed(write(idempotencyKey, phone))
        assert.strictEqual(reply.status, 201, `a retry after the failure: ${reply.text}`)
        assert.isNull(reply.headers.get("idempotent-replayed"))
        assert.isBelow(took, WAIT_MS, "the retry did not wait for the dead attempt")
        const replay = yield* write(idempotencyKey, phone)
        assert.strictEqual(replay.status, 201, replay.text)
        assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
        assert.strictEqual(Buffer.compare(replay.bytes, reply.bytes), 0)
        assert.strictEqual(yield* leads, before + 1)
        assert.strictEqual(yield* records(idempotencyKey), 1)
      })

      // 1. PostgreSQL stops (fast shutdown) while the write waits on the lock, then starts again.
      {
        const before = yield* leads
        const release = yield* Deferred.make<void>()
        const lock = yield* holdLeadsLock(url, release)
        const first = yield* Effect.forkChild(write("outage-1", "11111"))
        yield* withDatabase(url, blockedSession)
        yield* database.stop
        const failed = yield* Fiber.join(first).pipe(Effect.orDie)
        assert.strictEqual(failed.status, 503, failed.text)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(lock)
        database = yield* startDatabase
        yield* expectRunsAgain("outage-1", "11111", before)
      }

      // 2. The attempt's session is terminated; PostgreSQL stays up.
      {
        const before = yield* leads
        const release = yield* Deferred.make<void>()
        const lock = yield* holdLeadsLock(url, release)
        const first = yield* Effect.forkChild(write("terminated-1", "22222"))
        const pid = yield* withDatabase(url, blockedSession)
        yield* withDatabase(url, scalar(`SELECT pg_terminate_backend(${pid})::int AS n`))
        const failed = yield* Fiber.join(first).pipe(Effect.orDie)
        assert.strictEqual(failed.status, 503, failed.text)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(lock)
        yield* expectRunsAgain("terminated-1", "22222", before)
      }

      // 3. The API process is killed while its write waits on the lock; another one takes the retry.
      {
        const before = yield* leads
        const release = yield* Deferred.make<void>()
        const lock = yield* holdLeadsLock(url, release)
        const first = yield* Effect.forkChild(Effect.exit(write("killed-1", "33333")))
        yield* withDatabase(url, blockedSession)
        yield* server.kill
        yield* Fiber.join(first)
        // The dead process's session ends once it stops waiting and finds its client gone.
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(lock)
        server = yield* startApiProcess(url)
        yield* expectRunsAgain("killed-1", "33333", before)
      }
    }).pipe(Effect.scoped), 180_000)
})
