/**
 * `meta.total` without counting (docs/development.md "Performance habits": a
 * count(*) over a million rows is not free). `row_counts` keeps, per school,
 * how many students and payments exist; statement-level triggers with
 * transition tables keep it exact in the same transaction as the rows, so an
 * unfiltered list reads its total in O(1) under the same snapshot.
 */
export const statements: ReadonlyArray<string> = [
  `CREATE TABLE row_counts (
     school_id integer NOT NULL REFERENCES schools (id),
     table_name text NOT NULL,
     n bigint NOT NULL CHECK (n >= 0),
     PRIMARY KEY (school_id, table_name)
   )`,

  `CREATE FUNCTION count_inserted_rows() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO row_counts (school_id, table_name, n)
     SELECT school_id, TG_TABLE_NAME, count(*) FROM inserted_rows GROUP BY school_id
     ON CONFLICT (school_id, table_name) DO UPDATE SET n = row_counts.n + EXCLUDED.n;
     RETURN NULL;
   END $$`,

  `CREATE FUNCTION count_deleted_rows() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE row_counts c SET n = c.n - d.n
     FROM (SELECT school_id, count(*) AS n FROM deleted_rows GROUP BY school_id) d
     WHERE c.school_id = d.school_id AND c.table_name = TG_TABLE_NAME;
     RETURN NULL;
   END $$`,

  ...["students", "payments"].flatMap((table) => [
    `CREATE TRIGGER ${table}_count_inserted AFTER INSERT ON ${table}
       REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION count_inserted_rows()`,
    `CREATE TRIGGER ${table}_count_deleted AFTER DELETE ON ${table}
       REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION count_deleted_rows()`,
    `INSERT INTO row_counts (school_id, table_name, n)
       SELECT school_id, '${table}', count(*) FROM ${table} GROUP BY school_id`
  ])
]
