/**
 * The rate limiter's tables without foreign keys (refines 0201). A foreign
 * key check on a key's first request took a KEY SHARE lock on its `api_keys`
 * row: a write, with WAL, to a logged table, on the hot path, measured at
 * about 15% of that request. The state is disposable (UNLOGGED) and keyed by
 * the key's own (school_id, id), so nothing needs the check; a deleted key's
 * rows go with it through a trigger instead of a cascade.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE rate_limit_slots DROP CONSTRAINT rate_limit_slots_school_id_key_id_fkey`,
  `ALTER TABLE rate_limits DROP CONSTRAINT rate_limits_school_id_key_id_fkey`,

  `CREATE FUNCTION rate_limit_forget() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     DELETE FROM rate_limit_slots WHERE school_id = OLD.school_id AND key_id = OLD.id;
     DELETE FROM rate_limits WHERE school_id = OLD.school_id AND key_id = OLD.id;
     RETURN NULL;
   END $$`,

  `CREATE TRIGGER api_keys_forget_rate_limit AFTER DELETE ON api_keys
     FOR EACH ROW EXECUTE FUNCTION rate_limit_forget()`
]
