/**
 * The idempotency store ties a claim to the database session of its attempt
 * (docs/decisions.md "Idempotency", "The idempotency store"): the attempt's
 * session holds the session-level advisory lock `owner_lock` for as long as
 * the attempt runs, so a repeat can ask PostgreSQL whether the attempt still
 * runs instead of presuming it alive for 60 s. When the session ends (the
 * server stopped, the connection cut, the API process gone) the lock goes
 * with it, as does the attempt's transaction. NULL: a claim written without
 * a lock (before this column), judged by its age alone.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE idempotency_keys ADD COLUMN owner_lock bigint`
]
