/**
 * Offboarding (docs/back-office.md "Staff"): `employees.disabled`. A disabled
 * employee's sessions end when they are disabled and they cannot sign in
 * until enabled again; sign-in (libs/persistence/src/Sessions.ts) and the
 * session lookup of every call read it. Ending an employee's sessions (on
 * disabling, on `DELETE /employees/{id}/sessions`, on a password change)
 * finds them by `(school_id, employee_id)`, which had no index of its own.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE employees ADD COLUMN disabled boolean NOT NULL DEFAULT false`,
  `CREATE INDEX sessions_employee ON sessions (school_id, employee_id)`
]
