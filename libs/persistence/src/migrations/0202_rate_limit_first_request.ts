/**
 * A key's first request made cheap, and chunks of the ring made optional
 * (refines 0201). The benchmark showed the first request of each key, which
 * re-laid a whole ring (19 chunk rows on PRO) in `rate_limit_relayout`,
 * costing ten times a later one; integrators' keys, like the benchmark's
 * thousands, make many first requests.
 *
 * - A chunk row that does not exist holds 32 empty slots (0), and every chunk
 *   is 32 slots long (the last one padded). Readers `coalesce` to 0.
 * - A key's first request inserts its head row (`size` = budget, `head` 0)
 *   and the one chunk that holds its timestamp, in the ring's last slot:
 *   exactly the state `rate_limit_ring` makes of an empty ring, in two small
 *   inserts. A concurrent first request of the same key loses the insert and
 *   decides like any other request.
 * - An acceptance writes its slot, creating the chunk if it is missing (under
 *   the key's row lock, so never twice).
 * - `rate_limit_relayout` reads missing chunks as empty and writes every chunk.
 * - An acceptance first tries a compare-and-set on a new `version` column
 *   (bumped by every write) and takes the row lock only when it loses:
 *   three statements instead of five on the common path.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE rate_limits ADD COLUMN version bigint NOT NULL DEFAULT 0`,

  `CREATE OR REPLACE FUNCTION rate_limit_relayout(p_school integer, p_key integer, p_budget integer, p_at int8, p_window int8)
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

  `CREATE OR REPLACE FUNCTION rate_limit_take(p_school integer, p_key integer, p_budget integer, p_at int8, p_window int8)
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
   END $$`
]
