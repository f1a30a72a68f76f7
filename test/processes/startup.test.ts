/**
 * Every connection a process accepts gets an answer, from its first moment
 * (docs/operations.md "Process endpoints"): the real API and the real
 * dispatcher are polled from the moment they are spawned, each request with
 * a client time-out, until they say they run. No request goes unanswered:
 * before the process listens the connection is refused; once it listens,
 * a request gets its real answer or, while the process starts, 503 (on
 * `/health/ready` `not_ready` "The process is starting." or the database's
 * state, elsewhere `service_unavailable` with `Retry-After`). Some request
 * is answered so before the process says it runs. The dispatcher starts in
 * a few milliseconds once its database is ready, so its database lacks the
 * last migration for its first two seconds: a start that waits.
 */
import { assert, layer } from "@effect/vitest"
import { migrations } from "@school/persistence/Migrations"
import { freePort } from "@school/runtime/Ports"
import { Effect } from "effect"
import { emptyDatabase, migrate, request, spawnProcess } from "../support/DatabaseStates.ts"
import { entryPoints } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

/**
 * A client time-out: a process that answers never would fail here, one that
 * answers late on a busy machine (its event loop builds the routes) does not.
 */
const TIMEOUT_MS = 5_000
const STARTING = { error: { code: "not_ready", message: "The process is starting." } }
/** The dispatcher's readiness between its loop's start and its loop's first step. */
const NOT_READY = { error: { code: "not_ready", message: "The database does not answer." } }
/** The readiness of a process whose database lacks the last migration. */
/** The database one migration behind the code: the newest is missing. */
const BEHIND = {
  error: {
    code: "migrations_missing",
    message: "The database lacks 1 migration: run npm run migrate.",
    missing: Object.keys(migrations).slice(-1)
  }
}

interface Tally {
  readonly noAnswer: ReadonlyArray<string>
  readonly starting: number
  readonly statuses: ReadonlyArray<number>
  readonly runningAt: number | undefined
}

/**
 * Polls `paths` in turn on 127.0.0.1:`port` from now on, every 20 ms, until
 * `running` holds of the process's output, then a few more times; at most
 * 25 s. What the answers were.
 */
const pollFromSpawn = (
  port: number,
  paths: ReadonlyArray<string>,
  output: () => string,
  running: (output: string) => boolean,
  onTick: (elapsedMs: number, starting: number) => Effect.Effect<void> = () => Effect.void
) =>
  Effect.gen(function*() {
    const started = Date.now()
    const noAnswer: Array<string> = []
    const statuses: Array<number> = []
    let starting = 0
    let runningAt: number | undefined
    let after = 0
    for (let index = 0; after < 5 && Date.now() - started < 25_000; index++) {
      yield* onTick(Date.now() - started, starting)
      if (runningAt === undefined && running(output())) runningAt = Date.now() - started
      const path = paths[index % paths.length] ?? "/"
      const answer = yield* request(`http://127.0.0.1:${port}${path}`, TIMEOUT_MS)
      if (answer === "no answer") noAnswer.push(`${path} at ${Date.now() - started - TIMEOUT_MS} ms`)
      else if (answer !== "refused") {
        statuses.push(answer.status)
        if (answer.status === 503 && path === "/health/ready") {
          const body: unknown = JSON.parse(answer.text)
          assert.deepInclude([STARTING, NOT_READY, BEHIND], body, answer.text)
          if (runningAt === undefined && JSON.stringify(body) !== JSON.stringify(NOT_READY)) starting++
        } else if (answer.status === 503) {
          assert.deepStrictEqual(JSON.parse(answer.text), {
            error: { code: "service_unavailable", message: "The database is unavailable. Try again later." }
          })
          assert.strictEqual(answer.headers.get("retry-after"), "2")
          if (runningAt === undefined) starting++
        }
      }
      if (runningAt !== undefined) after++
      yield* Effect.sleep("20 millis")
    }
    return { noAnswer, starting, statuses, runningAt } satisfies Tally
  })

layer(TestDatabase.layer, { excludeTestServices: true })("a process that starts answers every connection", (it) => {
  it.effect("the API: no request unanswered from spawn on; 503 while it starts, before it says it listens", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const port = yield* freePort
      const api = yield* spawnProcess(entryPoints.api, { DATABASE_URL: database.url, PORT: String(port), HOST: "127.0.0.1" })
      const tally = yield* pollFromSpawn(
        port,
        ["/health/ready", "/api/public/v1/students", "/health/live"],
        api.output,
        (output) => output.includes("Listening on")
      )
      assert.deepStrictEqual(tally.noAnswer, [], api.output())
      assert.isDefined(tally.runningAt, api.output())
      assert.isAbove(tally.starting, 0, `no 503 before "Listening on": ${JSON.stringify(tally)}`)
      for (const status of tally.statuses) assert.include([200, 401, 503], status)
      // Once it listens, the routes serve: ready.
      const ready = yield* request(`http://127.0.0.1:${port}/health/ready`, TIMEOUT_MS)
      assert.deepStrictEqual(typeof ready === "string" ? ready : [ready.status, ready.text], [200, `{"status":"ready"}`])
    }).pipe(Effect.scoped), 60_000)

  it.effect("the dispatcher: its health port answers every request from spawn on; 503 while it starts", () =>
    Effect.gen(function*() {
      const database = yield* emptyDatabase()
      yield* migrate(database.url, -1)
      const port = yield* freePort
      const dispatcher = yield* spawnProcess(entryPoints.dispatcher, {
        DATABASE_URL: database.url,
        DISPATCHER_PORT: String(port),
        HOST: "127.0.0.1"
      })
      let migrated = false
      const tally = yield* pollFromSpawn(
        port,
        ["/health/ready", "/health/live"],
        dispatcher.output,
        (output) => output.includes("dispatcher ready"),
        // Migrated once a 503 of the starting dispatcher was seen (however long it took to listen), or after 15 s.
        (elapsedMs, starting) => {
          if (migrated || (starting === 0 && elapsedMs < 15_000)) return Effect.void
          migrated = true
          return migrate(database.url)
        }
      )
      assert.deepStrictEqual(tally.noAnswer, [], dispatcher.output())
      assert.isDefined(tally.runningAt, dispatcher.output())
      assert.isAbove(tally.starting, 0, `no 503 before "dispatcher ready": ${JSON.stringify(tally)}`)
      for (const status of tally.statuses) assert.include([200, 503], status)
    }).pipe(Effect.scoped), 60_000)
})
