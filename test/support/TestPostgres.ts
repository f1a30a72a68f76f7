/**
 * The one PostgreSQL server of a test run (docs/operations.md "Commands":
 * npm test): `TEST_DATABASE_URL` if set, else a testcontainers PostgreSQL if
 * a Docker engine answers, else the embedded PostgreSQL of
 * @school/local-postgres in a temporary directory. Started and stopped by
 * `globalSetup.ts`; each test file gets its own database on it from
 * `TestDatabase.ts`. testcontainers is a devDependency: only the tests
 * import it.
 */
import { fromUrl } from "@school/local-postgres/Database"
import type { DatabaseStartError } from "@school/runtime/DatabaseConnection"
import { embeddedTemporary } from "@school/local-postgres/EmbeddedPostgres"
import { Config, type Duration, Effect, Option, type Scope } from "effect"

/** The run's server and where it came from. */
export interface TestServer {
  /** Superuser connection string of its maintenance database (may CREATE DATABASE). */
  readonly url: string
  readonly origin: "url" | "embedded" | "testcontainers"
}

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
export const testcontainers = (image = "postgres:17-alpine"): Effect.Effect<TestServer, Error, Scope.Scope> =>
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

/** The server the tests run against (see the module comment). */
export const forTests: Effect.Effect<TestServer, DatabaseStartError, Scope.Scope> = Effect.gen(function*() {
  const given = yield* Config.option(Config.NonEmptyString("TEST_DATABASE_URL")).pipe(
    Effect.orElseSucceed(() => Option.none<string>())
  )
  if (Option.isSome(given)) return fromUrl(given.value)
  if (yield* dockerAvailable()) {
    const container = yield* testcontainers().pipe(
      Effect.tapError((error) => Effect.logWarning(`${error.message}; falling back to the embedded PostgreSQL`)),
      Effect.option
    )
    if (Option.isSome(container)) return container.value
  }
  return yield* embeddedTemporary({ maxConnections: 500 })
})
