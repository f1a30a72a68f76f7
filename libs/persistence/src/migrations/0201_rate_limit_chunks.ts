/**
 * The rate limiter's state, laid out so that a request costs O(1) work in
 * PostgreSQL too (replaces the single-row ring of 0200, whose 4.8 KB row on
 * PRO was copied on every accepted request, could not be updated HOT and
 * bloated the table by a page per request until vacuum).
 *
 * - `rate_limits`: one small row per key: `size` (the ring's length, the
 *   budget at its last acceptance) and `head` (its oldest slot, 0-based). Its
 *   row lock serializes the acceptances of one key across every API process.
 * - `rate_limit_slots`: the ring itself in chunks of 32 timestamps (µs since
 *   the epoch on the database's clock; 0 = empty), slot `s` at
 *   `chunk = s / 32`, position `s % 32 + 1`.
 *
 * `rate_limit_take` is the hot path, the transition of
 * `@school/domain/RateLimit` on this layout: it reads the head row and one or
 * two slots; a rejection returns there (no write, no lock). An acceptance
 * takes the head row's lock, decides again on what committed meanwhile (so
 * two processes never take the same slot), moves `head` and writes one slot:
 * two small HOT updates. Everything else (a key's first request, the first
 * acceptance after a plan change) goes to `rate_limit_relayout`, which locks
 * the head row and re-lays the whole ring with the pure functions of 0200
 * (`rate_limit_wait`, `rate_limit_ring`, `rate_limit_head`): O(budget), once
 * per key and plan change. Both return the microseconds to wait, 0 when the
 * request was accepted and recorded.
 *
 * Both tables are UNLOGGED (see 0200); rows cascade with their key.
 */
export const statements: ReadonlyArray<string> = [
  `DROP TABLE rate_limits`,

  `CREATE UNLOGGED TABLE rate_limits (
     school_id integer NOT NULL,
     key_id integer NOT NULL,
     head integer NOT NULL,
     size integer NOT NULL,
     PRIMARY KEY (school_id, key_id),
     FOREIGN KEY (school_id, key_id) REFERENCES api_keys (school_id, id) ON DELETE CASCADE
   ) WITH (fillfactor = 50)`,

  `CREATE UNLOGGED TABLE rate_limit_slots (
     school_id integer NOT NULL,
     key_id integer NOT NULL,
     chunk integer NOT NULL,
     slots int8[] NOT NULL,
     PRIMARY KEY (school_id, key_id, chunk),
     FOREIGN KEY (school_id, key_id) REFERENCES rate_limits (school_id, key_id) ON DELETE CASCADE
   ) WITH (fillfactor = 80)`,

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
     SELECT coalesce(array_agg(u.slot ORDER BY c.chunk, u.i), '{}') INTO v_ring
       FROM rate_limit_slots c, unnest(c.slots) WITH ORDINALITY AS u (slot, i)
       WHERE c.school_id = p_school AND c.key_id = p_key;
     v_ring := coalesce(v_ring[1:v_size], '{}');
     v_wait := rate_limit_wait(v_ring, v_head, p_at, p_budget, p_window);
     IF v_wait > 0 THEN
       RETURN v_wait;
     END IF;
     v_new := rate_limit_ring(v_ring, v_head, p_at, p_budget);
     DELETE FROM rate_limit_slots WHERE school_id = p_school AND key_id = p_key;
     INSERT INTO rate_limit_slots (school_id, key_id, chunk, slots)
       SELECT p_school, p_key, c, v_new[c * 32 + 1 : least((c + 1) * 32, p_budget)]
       FROM generate_series(0, (p_budget - 1) / 32) AS c;
     UPDATE rate_limits
       SET head = rate_limit_head(v_ring, v_head, p_budget), size = p_budget
       WHERE school_id = p_school AND key_id = p_key;
     RETURN 0;
   END $$`,

  `CREATE FUNCTION rate_limit_take(p_school integer, p_key integer, p_budget integer, p_at int8, p_window int8)
     RETURNS int8 LANGUAGE plpgsql AS $$
   DECLARE
     v_at int8 := coalesce(p_at, (extract(epoch FROM clock_timestamp()) * 1000000)::int8);
     v_head integer;
     v_size integer;
     v_newest int8;
     v_counting int8;
     v_time int8;
   BEGIN
     -- First without a lock: a rejection ends here and writes nothing. An
     -- acceptance takes the key's row lock and decides again on what
     -- committed before it. The head and its slots are read in ONE statement
     -- (one snapshot): a head from before a concurrent acceptance with a slot
     -- from after it would look like a full window.
     FOR locked IN 0..1 LOOP
       IF locked = 1 THEN
         PERFORM FROM rate_limits WHERE school_id = p_school AND key_id = p_key FOR UPDATE;
       END IF;
       SELECT r.head, r.size,
              n.slots[(r.head + r.size - 1) % r.size % 32 + 1],
              c.slots[(r.head + r.size - p_budget) % r.size % 32 + 1]
         INTO v_head, v_size, v_newest, v_counting
         FROM rate_limits r
         LEFT JOIN rate_limit_slots n
           ON n.school_id = r.school_id AND n.key_id = r.key_id
          AND n.chunk = (r.head + r.size - 1) % nullif(r.size, 0) / 32
         LEFT JOIN rate_limit_slots c
           ON c.school_id = r.school_id AND c.key_id = r.key_id AND p_budget <= r.size
          AND c.chunk = (r.head + r.size - p_budget) % nullif(r.size, 0) / 32
         WHERE r.school_id = p_school AND r.key_id = p_key AND r.size > 0;
       IF NOT FOUND THEN
         RETURN rate_limit_relayout(p_school, p_key, p_budget, v_at, p_window);
       END IF;
       -- The request's time as counted: never before the newest accepted one.
       v_time := greatest(v_at, coalesce(v_newest, 0));
       -- Over budget while the budget-th newest accepted request is in the window.
       IF p_budget <= v_size AND coalesce(v_counting, 0) + p_window - v_time > 0 THEN
         RETURN coalesce(v_counting, 0) + p_window - v_time;
       END IF;
       IF p_budget <> v_size THEN
         RETURN rate_limit_relayout(p_school, p_key, p_budget, v_at, p_window);
       END IF;
     END LOOP;
     UPDATE rate_limits SET head = (v_head + 1) % v_size WHERE school_id = p_school AND key_id = p_key;
     UPDATE rate_limit_slots SET slots[v_head % 32 + 1] = v_time
       WHERE school_id = p_school AND key_id = p_key AND chunk = v_head / 32;
     RETURN 0;
   END $$`
]
