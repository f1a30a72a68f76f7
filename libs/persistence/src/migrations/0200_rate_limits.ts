/**
 * The per-key rate limiter's shared state (spec 8, DECISIONS "Rate limits"):
 * one row per API key holding the ring of its last accepted request times,
 * and the transition of `@school/domain/RateLimit` written as SQL functions,
 * so every API process decides on the same state in the same statement that
 * authenticates the key (`RateLimits.ts`).
 *
 * Times are integer microseconds since the Unix epoch on the database's
 * clock; 0 is an empty slot. `head` is 0-based like the TypeScript twin; SQL
 * arrays are 1-based, hence the `+ 1` in subscripts.
 *
 * The table is UNLOGGED: a request costs no WAL, and the state is not
 * business data. A crash of PostgreSQL (or a fail-over to a replica) empties
 * it, which gives every key one fresh window once; nothing else is lost.
 * `toast_tuple_target` keeps a ring (at most 8 bytes per request of the
 * budget, 4.8 KB at 600) in the row instead of compressing or moving it out
 * of line on every write; `fillfactor` leaves room for HOT updates of the
 * small rings.
 *
 * Changes that must reach the API processes' local blocks at once (a plan
 * change, a key revoked, expired or deleted) NOTIFY `rate_limit_invalidate`
 * with the school id.
 */
export const statements: ReadonlyArray<string> = [
  `CREATE UNLOGGED TABLE rate_limits (
     school_id integer NOT NULL,
     key_id integer NOT NULL,
     ring int8[] NOT NULL,
     head integer NOT NULL,
     PRIMARY KEY (school_id, key_id),
     FOREIGN KEY (school_id, key_id) REFERENCES api_keys (school_id, id) ON DELETE CASCADE
   ) WITH (fillfactor = 50, toast_tuple_target = 8160)`,

  // The n-th newest accepted time (1 = newest); 0 for an empty ring.
  `CREATE FUNCTION rate_limit_nth_newest(ring int8[], head integer, n integer) RETURNS int8
     LANGUAGE sql IMMUTABLE PARALLEL SAFE
     RETURN coalesce(
       ring[((head - n) % nullif(cardinality(ring), 0) + cardinality(ring)) % nullif(cardinality(ring), 0) + 1],
       0)`,

  // The request's time as counted: never before the newest accepted one.
  `CREATE FUNCTION rate_limit_time(ring int8[], head integer, at_us int8) RETURNS int8
     LANGUAGE sql IMMUTABLE PARALLEL SAFE
     RETURN greatest(at_us, rate_limit_nth_newest(ring, head, 1))`,

  // Microseconds until a request would be accepted; 0: accepted now.
  `CREATE FUNCTION rate_limit_wait(ring int8[], head integer, at_us int8, budget integer, window_us int8) RETURNS int8
     LANGUAGE sql IMMUTABLE PARALLEL SAFE
     RETURN CASE
       WHEN budget > cardinality(ring) THEN 0
       ELSE greatest(0, rate_limit_nth_newest(ring, head, budget) + window_us - rate_limit_time(ring, head, at_us))
     END`,

  // The ring after accepting a request: one slot written under an unchanged
  // budget; re-laid to the new budget's size (newest budget - 1 kept) otherwise.
  `CREATE FUNCTION rate_limit_ring(ring int8[], head integer, at_us int8, budget integer) RETURNS int8[]
     LANGUAGE sql IMMUTABLE PARALLEL SAFE
     RETURN CASE
       WHEN cardinality(ring) = budget
         THEN ring[:head] || rate_limit_time(ring, head, at_us) || ring[head + 2:]
       ELSE array_append(
         ARRAY(
           SELECT CASE WHEN budget - g <= cardinality(ring) THEN rate_limit_nth_newest(ring, head, budget - g) ELSE 0 END
           FROM generate_series(1, budget - 1) AS g
           ORDER BY g),
         rate_limit_time(ring, head, at_us))
     END`,

  `CREATE FUNCTION rate_limit_head(ring int8[], head integer, budget integer) RETURNS integer
     LANGUAGE sql IMMUTABLE PARALLEL SAFE
     RETURN CASE WHEN cardinality(ring) = budget THEN (head + 1) % budget ELSE 0 END`,

  // TG_ARGV[0]: the column of OLD that holds the school id.
  `CREATE FUNCTION rate_limit_notify() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM pg_notify('rate_limit_invalidate', to_jsonb(OLD) ->> TG_ARGV[0]);
     RETURN NULL;
   END $$`,

  `CREATE TRIGGER schools_plan_rate_limit AFTER UPDATE OF plan ON schools
     FOR EACH ROW WHEN (OLD.plan IS DISTINCT FROM NEW.plan)
     EXECUTE FUNCTION rate_limit_notify('id')`,

  `CREATE TRIGGER api_keys_state_rate_limit AFTER UPDATE OF revoked_at, expires_at ON api_keys
     FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
     EXECUTE FUNCTION rate_limit_notify('school_id')`,

  `CREATE TRIGGER api_keys_delete_rate_limit AFTER DELETE ON api_keys
     FOR EACH ROW EXECUTE FUNCTION rate_limit_notify('school_id')`
]
