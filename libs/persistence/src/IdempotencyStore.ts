/**
 * The idempotency store (docs/integrators.md "Writing"; docs/decisions.md
 * "Idempotency"): claims a (school, key, operation) for one attempt, replays
 * a completed one, waits for a running one up to IDEMPOTENCY_WAIT, takes
 * over an expired record or a claim whose attempt has ended without a
 * response, stores the response, releases a claim whose attempt failed, and
 * purges old records. What to do with a record found is `Idempotency.decide`
 * (libs/domain); rows are decoded here, at the edge.
 *
 * A claim is committed on its own, before the operation's transaction, so
 * every other request (in any API process) sees it at once; `complete` runs
 * inside the operation's transaction, so the response is stored exactly
 * when the operation commits. Take-overs compare the token they saw, so of
 * two requests taking over one record only one wins.
 *
 * An attempt's liveness is its database session's (docs/decisions.md "The
 * idempotency store"): the claim, the operation's transaction and the
 * statement that ends the attempt (`complete` or `release`) all run on ONE
 * connection, reserved for the attempt, and that session holds the claim's
 * `owner_lock` (a session-level advisory lock) from the claim on. A repeat
 * that finds the claim not completed asks PostgreSQL whether the lock is
 * still held. If the session has ended (the server stopped or restarted, the
 * connection was cut, the API process died), PostgreSQL has aborted the
 * attempt's transaction and dropped the lock: the claim could not be given
 * up, so it is taken over at once instead of holding the key for 60 s.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import type { SqlConnection } from "effect/sql"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as SqlSchema from "effect/sql/SqlSchema"
import { randomUUID } from "node:crypto"
import { Idempotency, Ids } from "@school/domain"

/** How often the API process purges expired records. */
const PURGE_EVERY = Duration.minutes(10)

/** Which operation a key names (docs/development.md "libs/persistence": every query takes the caller's school). */
export interface KeyScope {
  readonly schoolId: Ids.SchoolId
  readonly key: string
  /** `Idempotency.operationOf(method, path)`. */
  readonly operation: string
}

/** A response as stored and replayed: status and the exact body bytes (always JSON). */
export interface StoredResponse {
  readonly status: number
  readonly body: Uint8Array
}

export type Acquired =
  /** This request owns the key: run the operation with the attempt, which ends it with `complete` or `release`. */
  | { readonly _tag: "Claimed"; readonly attempt: Attempt }
  /** A first execution completed within the retention: return its response. */
  | { readonly _tag: "Replay"; readonly response: StoredResponse }
  /** The first attempt is still running after the wait: 409 idempotency_in_progress. */
  | { readonly _tag: "InProgress" }

/**
 * One attempt at a claimed key, bound to the database connection it claimed
 * on (reserved until the scope of `acquire` closes). Every statement of the
 * attempt runs on that connection, so its session is the attempt's.
 */
export interface Attempt {
  readonly token: string
  /**
   * Runs `effect` in one transaction on the attempt's connection: the
   * operation, and `complete` with it. A `withTransaction` inside it is a
   * savepoint, as usual.
   */
  transaction<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R>
  /**
   * Stores the response: in `transaction` (stored exactly when the operation
   * commits) or after it (a 4xx after the rollback). False when the claim
   * was taken over meanwhile (the caller must roll back). Ends the attempt.
   */
  complete(response: StoredResponse): Effect.Effect<boolean>
  /** Gives the key up after a failed attempt (a 5xx is not stored: a retry runs again). Ends the attempt. */
  readonly release: Effect.Effect<void>
}

/** What the claim statement finds: whether it claimed, else the record it collided with. */
const ClaimRow = Schema.Struct({
  claimed: Schema.Boolean,
  /** The existing record's token; null when there is none (or this statement inserted it). */
  token: Schema.NullOr(Schema.String),
  completed: Schema.NullOr(Schema.Boolean),
  status_code: Schema.NullOr(Schema.Int),
  response_body: Schema.NullOr(Schema.Uint8Array),
  age_ms: Schema.NullOr(Schema.Number),
  /** Whether a session holds the record's owner lock; null when not asked (completed, or no lock named). */
  owner_running: Schema.NullOr(Schema.Boolean)
})

/** A statement of one attempt: the key's scope and the attempt's token. */
const AttemptKey = Schema.Struct({
  schoolId: Ids.SchoolId,
  key: Schema.String,
  operation: Schema.String,
  token: Schema.String
})

const ownerOf = (running: boolean | null): Idempotency.Owner =>
  running === null ? "unknown" : running ? "running" : "gone"

/** What `complete` stores: the response of the attempt. */
const Completion = Schema.Struct({ ...AttemptKey.fields, status: Schema.Int, body: Schema.Uint8Array })

/** Rows deleted per purge statement, so one purge never holds a long lock. */
const PURGE_BATCH = 10_000

export class IdempotencyStore extends Context.Service<IdempotencyStore, {
  /**
   * Claims the key, or finds what to replay, waiting up to `wait` for a
   * running attempt (IDEMPOTENCY_WAIT, which the API's idempotency
   * middleware reads). A claimed attempt keeps its connection until the
   * scope closes.
   */
  acquire(scope: KeyScope, wait: Duration.Duration): Effect.Effect<Acquired, never, Scope.Scope>
  /** Deletes records older than the retention; returns how many. */
  readonly purge: Effect.Effect<number>
}>()("school/persistence/IdempotencyStore") {
  static readonly layer = Layer.effect(
    IdempotencyStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const policy = Idempotency.DEFAULT_POLICY
      const retentionSeconds = policy.retentionMs / 1000

      /**
       * Runs `effect`'s statements on `connection`: the client's transaction
       * context one level above a transaction (depth -1), so a statement
       * runs on the connection as it is, and a `withTransaction` begins a
       * top-level transaction on it (BEGIN … COMMIT) instead of taking
       * another connection from the pool.
       */
      const pinned = (connection: SqlConnection.Connection) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.provideService(effect, sql.transactionService, [connection, -1])

      // One round trip: insert the claim (and take its owner lock in this
      // session), or read the record it collided with and, for a claim not
      // completed, ask whether a session still holds that claim's lock (a
      // try-lock for this statement only: it never waits). The claim commits
      // asynchronously (no WAL flush of its own): losing it in a database
      // crash only frees the key, and the operation's own commit, which is
      // synchronous, flushes it anyway. A fresh write then waits for one
      // flush, not two.
      // The statement selects from `VALUES (1)`, so there is always one row.
      const claimKey = SqlSchema.findOne({
        Request: AttemptKey,
        Result: ClaimRow,
        execute: ({ key, operation, schoolId, token }) =>
          sql`
            WITH claimed AS (
              INSERT INTO idempotency_keys (school_id, key, operation, token, owner_lock)
              VALUES (${schoolId}, ${key}, ${operation}, ${token}::uuid, hashtextextended(${token}, 0))
              ON CONFLICT (school_id, key, operation) DO NOTHING
              RETURNING pg_try_advisory_lock(owner_lock) AS locked
            )
            SELECT EXISTS (SELECT 1 FROM claimed) AS claimed,
                   k.token::text AS token, k.completed_at IS NOT NULL AS completed,
                   k.status_code::int AS status_code, k.response_body,
                   (extract(epoch FROM now() - k.claimed_at) * 1000)::float8 AS age_ms,
                   CASE WHEN k.completed_at IS NULL AND k.owner_lock IS NOT NULL
                        THEN NOT pg_try_advisory_xact_lock(k.owner_lock) END AS owner_running,
                   set_config('synchronous_commit', 'off', true) AS async_commit
            FROM (VALUES (1)) AS one (x)
            LEFT JOIN idempotency_keys k
              ON k.school_id = ${schoolId} AND k.key = ${key} AND k.operation = ${operation}`
      })
      const claim = (scope: KeyScope, token: string) => claimKey({ ...scope, token }).pipe(Effect.orDie)

      // Compare-and-set on the token (and the completion state) that was seen;
      // the winner takes the new claim's owner lock in its session.
      const takeOver = (scope: KeyScope, seen: string, seenCompleted: boolean, token: string) =>
        sql`
          UPDATE idempotency_keys
          SET token = ${token}::uuid, owner_lock = hashtextextended(${token}, 0), claimed_at = now(),
              completed_at = NULL, status_code = NULL, response_body = NULL
          WHERE school_id = ${scope.schoolId} AND key = ${scope.key} AND operation = ${scope.operation}
            AND token = ${seen}::uuid AND (completed_at IS NOT NULL) = ${seenCompleted}
          RETURNING pg_try_advisory_lock(owner_lock) AS locked`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

      // Both end the attempt, so both drop its owner lock, in the same statement
      // (after the row's own statement: `FROM` is read before the select list).
      // In `complete` that is before the COMMIT: a repeat that sees the lock
      // free then either finds the record completed or, should the COMMIT fail,
      // rightly takes the key over; its take-over compares the token and the
      // completion state on the row it waited for, so it cannot undo a commit.
      // One row: whether it stored the response.
      const completeKey = SqlSchema.findOne({
        Request: Completion,
        Result: Schema.Struct({ completed: Schema.Boolean }),
        execute: ({ body, key, operation, schoolId, status, token }) =>
          sql`
            WITH done AS (
              UPDATE idempotency_keys
              SET completed_at = now(), status_code = ${status}, response_body = ${body}
              WHERE school_id = ${schoolId} AND key = ${key} AND operation = ${operation}
                AND token = ${token}::uuid AND completed_at IS NULL
              RETURNING 1
            )
            SELECT d.n = 1 AS completed, pg_advisory_unlock(hashtextextended(${token}, 0)) AS unlocked
            FROM (SELECT count(*)::int AS n FROM done) AS d`
      })
      const complete = (scope: KeyScope, token: string, response: StoredResponse) =>
        completeKey({ ...scope, token, status: response.status, body: response.body }).pipe(
          Effect.map((row) => row.completed),
          Effect.orDie
        )

      const release = (scope: KeyScope, token: string) =>
        sql`
          WITH gone AS (
            DELETE FROM idempotency_keys
            WHERE school_id = ${scope.schoolId} AND key = ${scope.key} AND operation = ${scope.operation}
              AND token = ${token}::uuid AND completed_at IS NULL
            RETURNING 1
          )
          SELECT pg_advisory_unlock(hashtextextended(${token}, 0)) AS unlocked
          FROM (SELECT count(*) FROM gone) AS g`.pipe(Effect.asVoid, Effect.orDie)

      const attemptOn = (connection: SqlConnection.Connection, scope: KeyScope, token: string): Attempt => {
        const pin = pinned(connection)
        return {
          token,
          transaction: (effect) => pin(sql.withTransaction(effect)),
          complete: (response) => pin(complete(scope, token, response)),
          release: pin(release(scope, token))
        }
      }

      const acquire = Effect.fn("IdempotencyStore.acquire")(function*(
        scope: KeyScope,
        wait: Duration.Duration
      ): Effect.fn.Return<Acquired, never, Scope.Scope> {
        const attempts = yield* Scope.Scope
        const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(wait)
        let polls = 0
        while (true) {
          // A connection per look; kept (until `attempts` closes) only by the look that claims.
          const lease = yield* Scope.fork(attempts)
          const connection = yield* sql.reserve.pipe(Scope.provide(lease), Effect.orDie)
          const pin = pinned(connection)
          const token = randomUUID()
          const row = yield* pin(claim(scope, token))
          if (row.claimed) return { _tag: "Claimed", attempt: attemptOn(connection, scope, token) }
          if (row.token !== null && row.completed !== null && row.age_ms !== null) {
            const found = { completed: row.completed, ageMs: row.age_ms, owner: ownerOf(row.owner_running) }
            const decision = Idempotency.decide(found, policy)
            if (decision === "replay" && row.status_code !== null && row.response_body !== null) {
              yield* Scope.close(lease, Exit.void)
              return { _tag: "Replay", response: { status: row.status_code, body: row.response_body } }
            }
            if (decision === "take-over" && (yield* pin(takeOver(scope, row.token, row.completed, token)))) {
              return { _tag: "Claimed", attempt: attemptOn(connection, scope, token) }
            }
          }
          yield* Scope.close(lease, Exit.void)
          // Waiting for the running first attempt, or the record changed under us: look again until the deadline.
          const now = yield* Clock.currentTimeMillis
          if (now >= deadline) return { _tag: "InProgress" }
          yield* Effect.sleep(Duration.millis(Math.min(Idempotency.pollDelayMs(polls++), deadline - now)))
        }
      })

      // One row: the count of deleted rows.
      const purgeOnce = SqlSchema.findOne({
        Request: Schema.Void,
        Result: Schema.Struct({ n: Schema.Int }),
        execute: () =>
          sql`
            WITH gone AS (
              DELETE FROM idempotency_keys
              WHERE ctid = ANY (ARRAY(
                SELECT ctid FROM idempotency_keys
                WHERE claimed_at < now() - make_interval(secs => ${retentionSeconds})
                LIMIT ${PURGE_BATCH}
              ))
              RETURNING 1
            )
            SELECT count(*)::int AS n FROM gone`
      })
      const purgeBatch = purgeOnce().pipe(Effect.map(({ n }) => n), Effect.orDie)

      const purge = Effect.gen(function*() {
        let total = 0
        while (true) {
          const n = yield* purgeBatch
          total += n
          if (n < PURGE_BATCH) return total
        }
      }).pipe(Effect.withSpan("IdempotencyStore.purge"))

      return IdempotencyStore.of({ acquire, purge })
    })
  )
}

/**
 * The API process's purge job (docs/decisions.md "Idempotency": records
 * older than 24 hours are purged): at start and then every PURGE_EVERY. A
 * failed run is logged and the next one tries again.
 */
export const IdempotencyPurge = Layer.effectDiscard(Effect.gen(function*() {
  const store = yield* IdempotencyStore
  const run = store.purge.pipe(
    Effect.tap((n) => n > 0 ? Effect.logInfo("purged expired idempotency records", { count: n }) : Effect.void),
    Effect.catchCause((cause) => Effect.logWarning("idempotency purge failed", cause))
  )
  yield* Effect.forkScoped(Effect.repeat(run, Schedule.spaced(PURGE_EVERY)))
})).pipe(Layer.provide(IdempotencyStore.layer))
