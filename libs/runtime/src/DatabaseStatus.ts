/**
 * Owns what a serving process knows of its database (docs/operations.md
 * "Process endpoints" and "Database away"), shared by the API and the
 * dispatcher: whether the database answers and has every migration the code
 * expects (`Ready`), does not answer (`Away`), answers no to the connection
 * (`Refused`: the login, the database name, too many clients, starting up;
 * PostgreSQL's SQLSTATEs 28P01, 28000, 3D000, 53300, 57P03), lacks
 * migrations (`Behind`, with their names), or answers the check with another
 * error (`Failing`). Each state has one line, logged once when the state
 * begins (ERROR; INFO for the return), never per request and without a stack
 * trace, and one answer of `/health/ready`.
 *
 * What the migrations are and which a database lacks is
 * libs/persistence/src/Migrations.ts's (`missingMigrations`), given to
 * `probe` by each process.
 */
import type * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Ref from "effect/Ref"
import type * as SqlClient from "effect/sql/SqlClient"
import { SqlError } from "effect/sql/SqlError"

/** Why the database refused the connection. */
export type Refusal = "login" | "database" | "clients" | "starting"

export type State =
  /** Not checked yet (the process is starting). */
  | { readonly _tag: "Unknown" }
  | { readonly _tag: "Ready" }
  | { readonly _tag: "Away"; readonly detail: string }
  | { readonly _tag: "Refused"; readonly refusal: Refusal; readonly detail: string }
  | { readonly _tag: "Behind"; readonly missing: ReadonlyArray<string> }
  | { readonly _tag: "Failing"; readonly detail: string }

export const UNKNOWN: State = { _tag: "Unknown" }
export const READY: State = { _tag: "Ready" }

/** How often a process checks its database again while it is not ready. */
export const RECHECK_EVERY = Duration.seconds(2)

/** How long a check waits for the database's answer. */
const CHECK_TIMEOUT = Duration.seconds(2)

// ---------------------------------------------------------------------------
// Classification

/** The SQLSTATEs of a server that answers the connection with no, and why. */
const REFUSALS: ReadonlyMap<string, Refusal> = new Map([
  ["28P01", "login"], // invalid_password
  ["28000", "login"], // invalid_authorization_specification: no such role, no pg_hba.conf entry
  ["3D000", "database"], // invalid_catalog_name: no such database
  ["53300", "clients"], // too_many_connections
  ["57P03", "starting"] // cannot_connect_now: starting up, shutting down, in recovery
])

/** The SQLSTATE PostgreSQL gave a failed statement or connection, if any. */
export const sqlStateOf = (error: SqlError): string | undefined => {
  const cause = error.reason.cause
  return Predicate.hasProperty(cause, "code") && typeof cause.code === "string" ? cause.code : undefined
}

/** The innermost message: the server's own words ("password authentication failed for user …") or the socket's. */
const detailOf = (error: unknown): string => {
  let current = error
  while (current instanceof Error && current.cause instanceof Error) current = current.cause
  return current instanceof Error ? current.message : String(current)
}

/** The database's no to a connection, with the server's words; undefined for any other failure. */
export const refusalOf = (error: SqlError): { readonly refusal: Refusal; readonly detail: string } | undefined => {
  const state = sqlStateOf(error)
  const refusal = state === undefined ? undefined : REFUSALS.get(state)
  return refusal === undefined ? undefined : { refusal, detail: detailOf(error) }
}

/** The first SqlError a request's failure carries (as its error or as a defect). */
export const sqlErrorIn = (cause: Cause.Cause<unknown>): SqlError | undefined => {
  for (const reason of cause.reasons) {
    const error = reason._tag === "Fail" ? reason.error : reason._tag === "Die" ? reason.defect : undefined
    if (error instanceof SqlError) return error
  }
  return undefined
}

/** The state a failed check finds: refused, away (no connection, no answer in time), or failing. */
export const stateOf = (error: SqlError): State => {
  const refused = refusalOf(error)
  if (refused !== undefined) return { _tag: "Refused", ...refused }
  switch (error.reason._tag) {
    case "ConnectionError":
    case "StatementTimeoutError":
      return { _tag: "Away", detail: detailOf(error) }
    default:
      return { _tag: "Failing", detail: detailOf(error) }
  }
}

// ---------------------------------------------------------------------------
// Words

const at = (where: string | undefined) => where === undefined ? "" : ` (${where})`

/** What to do about a refusal, if the operator can do something. */
const advice: Record<Refusal, string> = {
  login: "; check the user and password in DATABASE_URL",
  database: "; check the database name in DATABASE_URL",
  clients: "; it has as many connections as it allows (max_connections, or the database's or the role's CONNECTION LIMIT)",
  starting: ""
}

/**
 * The one line of a state that is not ready (logged at ERROR), e.g.
 * `the database refused the login: password authentication failed for user
 * "school" (db.internal:5432/school); check the user and password in
 * DATABASE_URL`.
 */
export const describe = (state: State, where?: string): string => {
  switch (state._tag) {
    case "Unknown":
      return "the database was not checked yet"
    case "Ready":
      return `the database answers and has every migration${at(where)}`
    case "Away":
      return `the database does not answer: ${state.detail}${at(where)}`
    case "Refused":
      return `the database refused the ${state.refusal === "login" ? "login" : "connection"}: ${state.detail}${at(where)}${
        advice[state.refusal]
      }`
    case "Behind":
      return `the database lacks ${state.missing.length} migration${state.missing.length === 1 ? "" : "s"} this version needs: ${
        state.missing.join(", ")
      }${at(where)}; run npm run migrate`
    case "Failing":
      return `the database answers the readiness check with an error: ${state.detail}${at(where)}`
  }
}

/** The `/health/ready` answer of a database that is away (the body the processes have always sent). */
export const NOT_READY = { error: { code: "not_ready", message: "The database does not answer." } } as const

const REFUSED_MESSAGES: Record<Refusal, string> = {
  login: "The database refused the login.",
  database: "The database refused the connection: no such database.",
  clients: "The database refused the connection: too many clients.",
  starting: "The database refused the connection: it does not accept connections now."
}

/**
 * The body of `/health/ready` (503) for a state that is not ready: `not_ready`
 * (not checked yet, away, failing), `database_refused`, or
 * `migrations_missing` with the missing names. Never the server's own words,
 * which may name a user: those are in the log line.
 */
export const readinessBody = (state: State): unknown => {
  switch (state._tag) {
    case "Unknown":
      return { error: { code: "not_ready", message: "The process is starting." } }
    case "Ready":
    case "Away":
      return NOT_READY
    case "Refused":
      return { error: { code: "database_refused", message: REFUSED_MESSAGES[state.refusal] } }
    case "Behind":
      return {
        error: {
          code: "migrations_missing",
          message: `The database lacks ${state.missing.length} migration${state.missing.length === 1 ? "" : "s"}: run npm run migrate.`,
          missing: state.missing
        }
      }
    case "Failing":
      return { error: { code: "not_ready", message: "The database answers the readiness check with an error." } }
  }
}

// ---------------------------------------------------------------------------
// The process's status

export interface DatabaseStatusShape {
  /** The state last found. */
  readonly current: Effect.Effect<State>
  /** The same, for a Node callback. */
  readonly currentUnsafe: () => State
  /** A check found `state`: logs it if it begins a new state. */
  readonly report: (state: State) => Effect.Effect<void>
  /**
   * A request or a step failed because of `state` (a refusal): as `report`,
   * and a check that finds the database ready within RECHECK_EVERY of it
   * does not end the state (a pooled connection may answer while new ones
   * are refused).
   */
  readonly failed: (state: State) => Effect.Effect<void>
}

/** Two states are the same state when they differ at most in the server's or the socket's words. */
const sameState = (a: State, b: State): boolean => {
  if (a._tag !== b._tag) return false
  if (a._tag === "Refused" && b._tag === "Refused") return a.refusal === b.refusal
  if (a._tag === "Behind" && b._tag === "Behind") return a.missing.join() === b.missing.join()
  return true
}

/**
 * A process's status, not checked yet. `where` (host:port/database, never
 * the password) and `label` ("dispatcher: ") go into its lines.
 */
export const make = (options: { readonly where?: string | undefined; readonly label?: string | undefined } = {}): DatabaseStatusShape => {
  const label = options.label ?? ""
  const state = Ref.makeUnsafe<State>(UNKNOWN)
  const lastFailure = Ref.makeUnsafe(0)
  const every = Duration.format(RECHECK_EVERY)
  const enter = (next: State) =>
    Effect.flatMap(Ref.getAndSet(state, next), (previous) => {
      if (sameState(previous, next)) return Effect.void
      if (next._tag === "Ready") {
        if (previous._tag === "Unknown") return Effect.void
        const line = previous._tag === "Behind"
          ? `the database has every migration this version needs${at(options.where)}; ready`
          : `the database answers again${at(options.where)}; ready`
        return Effect.logInfo(`${label}${line}`)
      }
      if (next._tag === "Unknown") return Effect.void
      return Effect.logError(`${label}${describe(next, options.where)}; checking again every ${every}`)
    })
  return {
    current: Ref.get(state),
    currentUnsafe: () => Ref.getUnsafe(state),
    report: (next) =>
      Effect.flatMap(Ref.get(lastFailure), (failedAt) =>
        next._tag === "Ready" && Date.now() - failedAt < Duration.toMillis(RECHECK_EVERY) ? Effect.void : enter(next)),
    failed: (next) => Effect.andThen(Ref.set(lastFailure, Date.now()), enter(next))
  }
}

/**
 * The process's status. Each process's main provides its own (`make` with
 * its database's address); without one, a status of its own for whatever
 * runs the routes (the tests' servers).
 */
export const DatabaseStatus = Context.Reference<DatabaseStatusShape>("@school/runtime/DatabaseStatus", {
  defaultValue: () => make()
})

// ---------------------------------------------------------------------------
// Checks

/**
 * One check of the database: `missing` (the migrations it lacks, one round
 * trip) within 2 s. Never fails: a failure is the state it shows. Makes no
 * span (docs/operations.md "Traces": a probe makes none).
 */
export const probe = (
  missing: Effect.Effect<ReadonlyArray<string>, SqlError, SqlClient.SqlClient>
): Effect.Effect<State, never, SqlClient.SqlClient> =>
  missing.pipe(
    Effect.map((names): State => names.length === 0 ? READY : { _tag: "Behind", missing: names }),
    Effect.catch((error) => Effect.succeed(stateOf(error))),
    Effect.timeoutOrElse({
      duration: CHECK_TIMEOUT,
      orElse: () => Effect.succeed<State>({ _tag: "Away", detail: `no answer within ${Duration.format(CHECK_TIMEOUT)}` })
    }),
    Effect.catchDefect((defect) => Effect.succeed<State>({ _tag: "Failing", detail: detailOf(defect) })),
    Effect.withTracerEnabled(false)
  )

/** Checks (and reports) every RECHECK_EVERY until the state found is one `accept` takes; that state. */
export const waitFor = <R>(
  status: DatabaseStatusShape,
  check: Effect.Effect<State, never, R>,
  accept: (state: State) => boolean
): Effect.Effect<State, never, R> =>
  Effect.gen(function*() {
    while (true) {
      const state = yield* check
      yield* status.report(state)
      if (accept(state)) return state
      yield* Effect.sleep(RECHECK_EVERY)
    }
  })

/** Whether the database answered the check (ready, or answering but behind on migrations). */
export const answers = (state: State): boolean => state._tag === "Ready" || state._tag === "Behind"

export const isReady = (state: State): boolean => state._tag === "Ready"

/**
 * For the process's lifetime: every RECHECK_EVERY, checks again while the
 * state is not ready, so a database that comes back, lets the process in,
 * or is migrated (`npm run migrate`) makes it ready without a restart.
 */
export const watch = <R>(status: DatabaseStatusShape, check: Effect.Effect<State, never, R>): Effect.Effect<never, never, R> =>
  Effect.forever(
    Effect.gen(function*() {
      if (!isReady(yield* status.current)) yield* status.report(yield* check)
      yield* Effect.sleep(RECHECK_EVERY)
    })
  )
