/**
 * Attendance remembers when a mark first became "attended"
 * (docs/integrators.md "lesson.completed";
 * docs/decisions.md "Writes"): `lesson.completed` fires once per lesson and
 * student, the first time the mark is 1, and never again for that pair,
 * whatever the mark does afterwards (1 → 2 → 1 raises nothing new).
 *
 * `first_attended_at` is kept by a trigger, so every writer (the back
 * office, the demo seed) obeys it: set when a mark is 1 and it was unset,
 * never changed or cleared after. The back office compares the row before
 * and after its mark (libs/persistence/src/SchoolRecords.ts
 * `markAttendance`) to know whether its mark was the first "attended";
 * concurrent marks of one student serialize on the row lock, so exactly one
 * of them sees it unset.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE attendance ADD COLUMN first_attended_at timestamptz`,
  `UPDATE attendance SET first_attended_at = marked_at WHERE visit_status = 1`,
  `CREATE FUNCTION attendance_first_attended() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'UPDATE' THEN
       NEW.first_attended_at := OLD.first_attended_at;
     END IF;
     IF NEW.first_attended_at IS NULL AND NEW.visit_status = 1 THEN
       NEW.first_attended_at := NEW.marked_at;
     END IF;
     RETURN NEW;
   END $$`,
  `CREATE TRIGGER attendance_first_attended BEFORE INSERT OR UPDATE ON attendance
     FOR EACH ROW EXECUTE FUNCTION attendance_first_attended()`,
  `ALTER TABLE attendance ADD CONSTRAINT attendance_first_attended_check
     CHECK (visit_status <> 1 OR first_attended_at IS NOT NULL)`
]
