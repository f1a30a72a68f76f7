/**
 * The page-number `updated_since` total without counting every match
 * (docs/decisions.md "Lists" and "Cursor pagination"). `updated_day_counts` keeps,
 * per school and UTC day, how many students and payments were last modified
 * that day (NULL, the legacy placeholder, is not counted). The total of
 * `updated_at >= since` is then the sum of the days after since's day plus a
 * count of the matches within that one day (libs/persistence/src/Paging.ts
 * `updatedSinceTotal`).
 *
 * Statement-level triggers with transition tables keep it exact in the
 * writing transaction, as migration 0300 keeps `row_counts`:
 * - a statement's changes become one signed delta per (school, day), days
 *   whose changes cancel out are not written at all: a student modified
 *   again the same day (the usual update) writes nothing here;
 * - the deltas are upserted in (school, day) order, so two statements lock
 *   the rows they share in the same order; a day back at 0 is deleted in the
 *   same statement, so the table holds at most one row per school, table and
 *   day that has rows, never more than the rows themselves;
 * - TRUNCATE forgets the table's days.
 *
 * A day's row is written by the first change of a row that day (one row
 * lock per school, table and day, held to the writer's commit): the writes
 * that move `updated_at` (a payment, an enrollment) are single statements,
 * each taking its rows in that order.
 */
const countedDays = (rows: string, sign: "" | "-") =>
  `SELECT school_id, (updated_at AT TIME ZONE 'UTC')::date AS day, ${sign}1 AS n FROM ${rows} WHERE updated_at IS NOT NULL`

/** Upserts the deltas of `moved` (school_id, day, n) in key order, then deletes the days left at 0. */
const applyDeltas = (moved: string) => `
     WITH upserted AS (
       INSERT INTO updated_day_counts AS c (school_id, table_name, day, n)
       SELECT school_id, TG_TABLE_NAME, day, sum(n) FROM (${moved}) m
       GROUP BY school_id, day HAVING sum(n) <> 0
       ORDER BY school_id, day
       ON CONFLICT (school_id, table_name, day) DO UPDATE SET n = c.n + EXCLUDED.n
       RETURNING c.school_id, c.day, c.n
     )
     SELECT array_agg(school_id), array_agg(day) INTO emptied_schools, emptied_days FROM upserted WHERE n = 0;
     IF emptied_schools IS NOT NULL THEN
       DELETE FROM updated_day_counts c
       USING unnest(emptied_schools, emptied_days) AS e (school_id, day)
       WHERE c.school_id = e.school_id AND c.table_name = TG_TABLE_NAME AND c.day = e.day AND c.n = 0;
     END IF;`

const countingFunction = (name: string, moved: string) =>
  `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE
     emptied_schools integer[];
     emptied_days date[];
   BEGIN${applyDeltas(moved)}
     RETURN NULL;
   END $$`

export const statements: ReadonlyArray<string> = [
  `CREATE TABLE updated_day_counts (
     school_id integer NOT NULL REFERENCES schools (id),
     table_name text NOT NULL,
     day date NOT NULL,
     n bigint NOT NULL,
     PRIMARY KEY (school_id, table_name, day)
   )`,

  countingFunction("count_inserted_days", countedDays("inserted_rows", "")),
  countingFunction("count_deleted_days", countedDays("deleted_rows", "-")),
  countingFunction("count_updated_days", `${countedDays("new_rows", "")} UNION ALL ${countedDays("old_rows", "-")}`),

  `CREATE FUNCTION forget_truncated_days() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     DELETE FROM updated_day_counts WHERE table_name = TG_TABLE_NAME;
     RETURN NULL;
   END $$`,

  // The kept days' part of the total, in a function whose plan PL/pgSQL keeps per connection; inline, the list's
  // statement plans it on every request (the two cost the same at 10k students, ~0.1 ms more than the old count:
  // docs/performance.md "Scale"). STABLE: it reads under the snapshot of the list's statement that calls it, as
  // the page does.
  `CREATE FUNCTION updated_days_after(p_school integer, p_table text, p_day date)
     RETURNS bigint LANGUAGE plpgsql STABLE AS $$
   BEGIN
     RETURN (SELECT coalesce(sum(n), 0) FROM updated_day_counts
             WHERE school_id = p_school AND table_name = p_table AND day > p_day);
   END $$`,

  ...["students", "payments"].flatMap((table) => [
    `CREATE TRIGGER ${table}_days_inserted AFTER INSERT ON ${table}
       REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION count_inserted_days()`,
    `CREATE TRIGGER ${table}_days_deleted AFTER DELETE ON ${table}
       REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION count_deleted_days()`,
    `CREATE TRIGGER ${table}_days_updated AFTER UPDATE ON ${table}
       REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_updated_days()`,
    `CREATE TRIGGER ${table}_days_truncated AFTER TRUNCATE ON ${table}
       FOR EACH STATEMENT EXECUTE FUNCTION forget_truncated_days()`,
    `INSERT INTO updated_day_counts (school_id, table_name, day, n)
       SELECT school_id, '${table}', (updated_at AT TIME ZONE 'UTC')::date AS day, count(*) FROM ${table}
       WHERE updated_at IS NOT NULL GROUP BY school_id, day`
  ])
]
