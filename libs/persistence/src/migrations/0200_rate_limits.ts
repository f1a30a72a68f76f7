/**
 * The per-key rate limiter's shared state (docs/integrators.md "Limits",
 * docs/decisions.md "Rate
 * limits"): the transition of `@school/domain/RateLimit` written as SQL over
 * tables laid out so that a request costs O(1) work in PostgreSQL too, so
 * every API process decides on the same state in the same statement that
 * authenticates the key (`RateLimits.ts`). One migration for what was
 * written as 0200-0203 on one day and never released; a database migrated
 * with those four has exactly this schema (docs/decisions.md "The schema",
 * on migration numbers).
 *
 * - `rate_limits`: one small row per key: `size` (the ring's length, the
 *   budget at its last acceptance), `head` (its oldest slot, 0-based, like
 *   the TypeScript twin) and `version` (bumped by every write). Its row lock
 *   serializes the acceptances of one key across every API process.
 * - `rate_limit_slots`: the ring in chunks of 32 timestamps (integer
 *   microseconds since the Unix epoch on the database's clock; 0 = empty),
 *   slot `s` at `chunk = s / 32`, position `s % 32 + 1` (SQL arrays are
 *   1-based). A chunk row that does not exist holds 32 empty slots, and
 *   every chunk is 32 slots long (the last one padded); readers `coalesce`
 *   to 0.
 *
 * `rate_limit_take` is the hot path. It reads the head row and one or two
 * slots in ONE statement; a rejection returns there (no write, no lock). An
 * acceptance records with a compare-and-set on `version` and writes one slot
 * (creating its chunk if missing): two small HOT updates. Only when the
 * compare-and-set loses does it take the key's row lock and decide again on
 * what committed meanwhile, so two processes never take the same slot. A
 * key's first request inserts its head row (`size` = budget, `head` 0) and
 * the one chunk that holds its timestamp, in the ring's last slot: the state
 * `rate_limit_ring` makes of an empty ring, in two small inserts. The first
 * acceptance after a plan change goes to `rate_limit_relayout`, which locks
 * the head row and re-lays the whole ring with the pure functions below
 * (`rate_limit_wait`, `rate_limit_ring`, `rate_limit_head`): O(budget), once
 * per key and plan change. Both return the microseconds to wait, 0 when the
 * request was accepted and recorded.
 *
 * Both tables are UNLOGGED: a request costs no WAL, and the state is not
 * business data. A crash of PostgreSQL (or a fail-over to a replica) empties
 * them, which gives every key one fresh window once; nothing else is lost.
 * `fillfactor` leaves room for HOT updates. They have no foreign keys: a
 * foreign key check on a key's first request took a KEY SHARE lock on its
 * `api_keys` row (a write, with WAL, to a logged table, on the hot path;
 * about 15% of that request). The rows are keyed by the key's own
 * (school_id, id), and a deleted key's rows go with it through a trigger.
 *
 * Changes that must reach the API processes' local blocks at once (a plan
 * change, a key revoked, expired or deleted) NOTIFY `rate_limit_invalidate`
 * with the school id.
 */
export const statements: ReadonlyArray<string> = [
  `CREATE UNLOGGED TABLE rate_limits (
     school_id integer NOT NULL,
     key_id integer NOT NULL,
     head integer NOT NULL,
     size integer NOT NULL,
     version bigint NOT NULL DEFAULT 0,
     PRIMARY KEY (school_id, key_id)
   ) WITH (fillfactor = 50)`,

  `CREATE UNLOGGED TABLE rate_limit_slots (
     school_id integer NOT NULL,
     key_id integer NOT NULL,
     chunk integer NOT NULL,
     slots int8[] NOT NULL,
     PRIMARY KEY (school_id, key_id, chunk)
   ) WITH (fillfactor = 80)`,

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

  `CREATE FUNCTION rate_limit_relayout(p_school integer, p_key integer, p_budget integer, p_at int8, p_window int8)
     RETURNS int8 LANGUAGE plpgsql AS $$
   DECLARE
     v_head integer;
     v_size integer;
     v_ring int8[];
     v_wait int8;
     v_new int8[];
   BEGIN
     INSERT INTO rate_limits (school_id, key_id, head, size) VALUES (p_school, p_key, 0, 0)
       ON CONFLICT DO NOTHING;
     SELECT head, size INTO v_head, v_size FROM rate_limits
       WHERE school_id = p_school AND key_id = p_key FOR UPDATE;
     SELECT coalesce(array_agg(coalesce(c.slots[g % 32 + 1], 0) ORDER BY g), '{}') INTO v_ring
       FROM generate_series(0, v_size - 1) AS g
       LEFT JOIN rate_limit_slots c ON c.school_id = p_school AND c.key_id = p_key AND c.chunk = g / 32;
     v_wait := rate_limit_wait(v_ring, v_head, p_at, p_budget, p_window);
     IF v_wait > 0 THEN
       RETURN v_wait;
     END IF;
     v_new := rate_limit_ring(v_ring, v_head, p_at, p_budget);
     DELETE FROM rate_limit_slots WHERE school_id = p_school AND key_id = p_key;
     INSERT INTO rate_limit_slots (school_id, key_id, chunk, slots)
       SELECT p_school, p_key, c, ARRAY(SELECT coalesce(v_new[c * 32 + i], 0) FROM generate_series(1, 32) AS i ORDER BY i)
       FROM generate_series(0, (p_budget - 1) / 32) AS c;
     UPDATE rate_limits
       SET head = rate_limit_head(v_ring, v_head, p_budget), size = p_budget, version = version + 1
       WHERE school_id = p_school AND key_id = p_key;
     RETURN 0;
   END $$`,

  `CREATE FUNCTION rate_limit_take(p_school integer, p_key integer, p_budget integer, p_at int8, p_window int8)
     RETURNS int8 LANGUAGE plpgsql AS $$
   DECLARE
     v_at int8 := coalesce(p_at, (extract(epoch FROM clock_timestamp()) * 1000000)::int8);
     v_head integer;
     v_size integer;
     v_version int8;
     v_newest int8;
     v_counting int8;
     v_time int8;
     v_chunk int8[];
   BEGIN
     -- First without a lock: a rejection ends here and writes nothing; an
     -- acceptance records with a compare-and-set on the version. Only when that
     -- loses to a concurrent write is the key's row lock taken, to decide
     -- again on what committed before it. The head and its slots are read in
     -- ONE statement (one snapshot): a head from before a concurrent
     -- acceptance with a slot from after it would look like a full window.
     FOR pass IN 0..2 LOOP
       IF pass > 0 THEN
         PERFORM FROM rate_limits WHERE school_id = p_school AND key_id = p_key FOR UPDATE;
       END IF;
       SELECT r.head, r.size, r.version,
              coalesce(n.slots[(r.head + r.size - 1) % r.size % 32 + 1], 0),
              coalesce(c.slots[(r.head + r.size - p_budget) % r.size % 32 + 1], 0)
         INTO v_head, v_size, v_version, v_newest, v_counting
         FROM rate_limits r
         LEFT JOIN rate_limit_slots n
           ON n.school_id = r.school_id AND n.key_id = r.key_id
          AND n.chunk = (r.head + r.size - 1) % nullif(r.size, 0) / 32
         LEFT JOIN rate_limit_slots c
           ON c.school_id = r.school_id AND c.key_id = r.key_id AND p_budget <= r.size
          AND c.chunk = (r.head + r.size - p_budget) % nullif(r.size, 0) / 32
         WHERE r.school_id = p_school AND r.key_id = p_key AND r.size > 0;
       IF NOT FOUND THEN
         -- The key's first request: budget empty slots, this one in the last.
         INSERT INTO rate_limits (school_id, key_id, head, size) VALUES (p_school, p_key, 0, p_budget)
           ON CONFLICT DO NOTHING;
         IF FOUND THEN
           v_chunk := array_fill(0::int8, ARRAY[32]);
           v_chunk[(p_budget - 1) % 32 + 1] := v_at;
           INSERT INTO rate_limit_slots (school_id, key_id, chunk, slots)
             VALUES (p_school, p_key, (p_budget - 1) / 32, v_chunk);
           RETURN 0;
         END IF;
         -- Another request created it meanwhile: decide on it, locked.
         CONTINUE;
       END IF;
       -- The request's time as counted: never before the newest accepted one.
       v_time := greatest(v_at, v_newest);
       -- Over budget while the budget-th newest accepted request is in the window.
       IF p_budget <= v_size AND v_counting + p_window - v_time > 0 THEN
         RETURN v_counting + p_window - v_time;
       END IF;
       IF p_budget <> v_size THEN
         RETURN rate_limit_relayout(p_school, p_key, p_budget, v_at, p_window);
       END IF;
       -- Record: a compare-and-set on the version read above, or (lost, or
       -- on the locked pass) an update under the row lock.
       IF pass = 0 THEN
         UPDATE rate_limits SET head = (v_head + 1) % v_size, version = version + 1
           WHERE school_id = p_school AND key_id = p_key AND version = v_version;
       ELSE
         UPDATE rate_limits SET head = (v_head + 1) % v_size, version = version + 1
           WHERE school_id = p_school AND key_id = p_key;
       END IF;
       IF FOUND THEN
         UPDATE rate_limit_slots SET slots[v_head % 32 + 1] = v_time
           WHERE school_id = p_school AND key_id = p_key AND chunk = v_head / 32;
         IF NOT FOUND THEN
           v_chunk := array_fill(0::int8, ARRAY[32]);
           v_chunk[v_head % 32 + 1] := v_time;
           INSERT INTO rate_limit_slots (school_id, key_id, chunk, slots)
             VALUES (p_school, p_key, v_head / 32, v_chunk);
         END IF;
         RETURN 0;
       END IF;
     END LOOP;
     -- Not reached: the locked pass always decides.
     RETURN 1000000;
   END $$`,

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
     FOR EACH ROW EXECUTE FUNCTION rate_limit_notify('school_id')`,

  `CREATE FUNCTION rate_limit_forget() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     DELETE FROM rate_limit_slots WHERE school_id = OLD.school_id AND key_id = OLD.id;
     DELETE FROM rate_limits WHERE school_id = OLD.school_id AND key_id = OLD.id;
     RETURN NULL;
   END $$`,

  `CREATE TRIGGER api_keys_forget_rate_limit AFTER DELETE ON api_keys
     FOR EACH ROW EXECUTE FUNCTION rate_limit_forget()`
]
