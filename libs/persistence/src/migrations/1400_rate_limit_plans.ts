/**
 * The limiter's functions never scan their tables (docs/decisions.md "The
 * rate limiter", plans).
 *
 * `rate_limit_take` and `rate_limit_relayout` read and write one key's rows
 * by primary key. PL/pgSQL keeps each statement's plan for the connection's
 * life, until an ANALYZE of the table invalidates it. `rate_limits` and
 * `rate_limit_slots` are UNLOGGED: a fresh database, and every database after
 * a crash of PostgreSQL, starts them empty, and a connection that first calls
 * the function then plans sequential scans, the cheapest way to read a page
 * or two. The plans stay while the tables grow by two rows a key until
 * autovacuum analyzes them (a minute or more): measured on 3 600 keys, one
 * such connection spent 5.6 ms of PostgreSQL CPU on a batch of nine requests
 * where a connection opened after the growth spent 1.2 ms. With sequential
 * scans off inside both functions, every plan they make is by index,
 * whatever the statistics say when it is made (1.2 ms in both cases).
 */
export const statements: ReadonlyArray<string> = [
  `ALTER FUNCTION rate_limit_take(integer, integer, integer, int8, int8) SET enable_seqscan = off`,
  `ALTER FUNCTION rate_limit_relayout(integer, integer, integer, int8, int8) SET enable_seqscan = off`
]
