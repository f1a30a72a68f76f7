/**
 * The back office's sign-in throttle per client address (docs/decisions.md
 * "Back-office sessions"): failed sign-ins are counted per (e-mail, address),
 * and each address has one row of its own, the state of its budget across
 * e-mails. The old rows, counted per e-mail only, are dropped with their
 * table: they are at most a minute of waiting. Both tables and ended sessions
 * are purged in small batches, found by these indexes.
 */
export const statements: ReadonlyArray<string> = [
  `DROP TABLE login_failures`,

  `CREATE TABLE login_failures (
     email text NOT NULL,
     address text NOT NULL,
     failures integer NOT NULL,
     last_failed_at timestamptz NOT NULL,
     PRIMARY KEY (email, address)
   )`,

  `CREATE INDEX login_failures_last_failed_at ON login_failures (last_failed_at)`,

  // The address's next failure in its leaky bucket (LoginThrottle.AddressState); past: idle.
  `CREATE TABLE login_addresses (
     address text PRIMARY KEY,
     next_failure_at timestamptz NOT NULL
   )`,

  `CREATE INDEX login_addresses_next_failure_at ON login_addresses (next_failure_at)`,

  `CREATE INDEX sessions_expires_at ON sessions (expires_at)`,

  `CREATE INDEX sessions_revoked_at ON sessions (revoked_at) WHERE revoked_at IS NOT NULL`,

  `CREATE INDEX sessions_employee_live ON sessions (school_id, employee_id, created_at) WHERE revoked_at IS NULL`
]
