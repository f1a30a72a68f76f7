/**
 * A process that starts a throwaway embedded PostgreSQL in the directory it
 * is given, prints its URL on stdout and waits: for the test of what happens
 * when the process that started a server is killed outright (the watchdog of
 * libs/local-postgres stops the server and removes its directory). The
 * binaries are those TEST_POSTGRES_VERSION picks (`TestPostgres.ts`).
 *
 *   node embeddedServer.ts <data directory>
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { embedded } from "@school/local-postgres/EmbeddedPostgres"
import { Effect } from "effect"
import { embeddedBinaries } from "./TestPostgres.ts"

const dataDir = process.argv[2] ?? ""

NodeRuntime.runMain(
  Effect.gen(function*() {
    const database = yield* embedded({ dataDir, persistent: false, binaries: yield* embeddedBinaries })
    process.stdout.write(`${database.url}\n`)
    return yield* Effect.never
  }).pipe(Effect.scoped)
)
