/**
 * Supported PostgreSQL versions (docs/operations.md "PostgreSQL versions"):
 * 15 through 18. The check is a pure function of `server_version_num`
 * (property-tested here over both sides of 15), the run's own server passes
 * it (and is the version TEST_POSTGRES_VERSION asked for), and every process
 * refuses an older server with one line and exit 1: `npm run migrate`, the
 * API, the dispatcher, the CLI and `npm start`, against the run's server
 * seen through a proxy that makes it answer `SHOW server_version_num` with
 * 140010 (PostgreSQL 14.10), as a 14 server would.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import {
  checkConnection,
  OLDEST_SUPPORTED_MAJOR,
  serverVersion,
  unsupportedVersion,
  versionName
} from "@school/runtime/DatabaseConnection"
import { freePort } from "@school/runtime/Ports"
import { Effect, Option, Schema } from "effect"
import * as Net from "node:net"
import { entryPoints, lines, run } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { requestedVersion } from "../support/TestPostgres.ts"

const REFUSAL_14 =
  `PostgreSQL 14.10 is not supported: the oldest supported version is 15 (docs/operations.md "PostgreSQL versions")`

const versionNums = (minimum: number, maximum: number) => Schema.Int.check(Schema.isBetween({ minimum, maximum }))

describe("the version check (pure)", () => {
  it("names versions as PostgreSQL does", () => {
    assert.deepStrictEqual([180001, 150018, 140010, 100023, 90624, 150000].map(versionName), [
      "18.1",
      "15.18",
      "14.10",
      "10.23",
      "9.6.24",
      "15.0"
    ])
  })

  it("14.10 is refused with the one line naming it and the oldest supported", () => {
    assert.strictEqual(unsupportedVersion(140010), REFUSAL_14)
    assert.strictEqual(OLDEST_SUPPORTED_MAJOR, 15)
  })

  it.prop("every version from 15.0 on passes", [versionNums(150000, 999999)], ([num]) => {
    assert.isUndefined(unsupportedVersion(num))
  })

  it.prop("every version before 15 is refused, naming itself and 15", [versionNums(80000, 149999)], ([num]) => {
    assert.strictEqual(
      unsupportedVersion(num),
      `PostgreSQL ${versionName(num)} is not supported: the oldest supported version is 15 (docs/operations.md "PostgreSQL versions")`
    )
  })
})

/**
 * A TCP proxy on 127.0.0.1 to `target` that passes everything through but
 * the server's data rows, in which `from` (the real `server_version_num`)
 * becomes `to` (as long). SSL and GSS encryption requests are answered with
 * one byte before the messages start.
 */
const versionProxy = (target: URL, from: string, to: string) => {
  const [fromBytes, toBytes] = [Buffer.from(from), Buffer.from(to)]
  const [host, port] = [target.hostname, Number(target.port)]
  const sockets = new Set<Net.Socket>()
  const connection = (client: Net.Socket) => {
    const upstream = Net.connect({ host, port })
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on("error", () => {
        client.destroy()
        upstream.destroy()
      })
      socket.on("close", () => {
        sockets.delete(socket)
        client.destroy()
        upstream.destroy()
      })
    }
    let singleBytes = 0
    let started = false
    client.on("data", (chunk: Buffer) => {
      // SSLRequest (80877103) and GSSENCRequest (80877104): 8 bytes, answered with 'N' or 'S'.
      if (!started && chunk.length >= 8 && chunk.readInt32BE(0) === 8 && [80877103, 80877104].includes(chunk.readInt32BE(4))) {
        singleBytes++
      } else {
        started = true
      }
      upstream.write(chunk)
    })
    let pending = Buffer.alloc(0)
    upstream.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      const out: Array<Buffer> = []
      while (true) {
        if (singleBytes > 0 && pending.length >= 1) {
          out.push(pending.subarray(0, 1))
          pending = pending.subarray(1)
          singleBytes--
          continue
        }
        if (singleBytes > 0 || pending.length < 5) break
        const size = 1 + pending.readInt32BE(1)
        if (pending.length < size) break
        const message = Buffer.from(pending.subarray(0, size))
        pending = pending.subarray(size)
        // 'D': a DataRow.
        if (message[0] === 0x44) {
          const at = message.indexOf(fromBytes)
          if (at >= 0) toBytes.copy(message, at)
        }
        out.push(message)
      }
      if (out.length > 0) client.write(Buffer.concat(out))
    })
  }
  return Effect.acquireRelease(
    Effect.callback<Net.Server>((resume) => {
      const server = Net.createServer(connection)
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map((server) => {
    const address = server.address()
    return address !== null && typeof address === "object" ? address.port : 0
  }))
}

layer(TestDatabase.layer, { excludeTestServices: true })("against a real server", (it) => {
  it.effect("the run's server passes the check, and is the version TEST_POSTGRES_VERSION asks for", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      yield* checkConnection(database.url)
      const version = yield* Effect.orDie(serverVersion)
      assert.isAtLeast(version, 150000)
      assert.isUndefined(unsupportedVersion(version))
      const requested = yield* Effect.orDie(requestedVersion)
      if (Option.isSome(requested)) assert.strictEqual(Math.floor(version / 10_000), Number(requested.value))
    }))

  /** The file's database through `versionProxy`, its version answered as `to`. */
  const throughProxy = (to: (actual: number) => string) =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const actual = yield* Effect.orDie(serverVersion)
      const port = yield* versionProxy(new URL(database.url), String(actual), to(actual))
      const url = new URL(database.url)
      url.host = `127.0.0.1:${port}`
      return url.toString()
    })
  const as14 = throughProxy(() => "140010")

  it.effect("through the proxy with the version unchanged, npm run migrate passes", () =>
    Effect.gen(function*() {
      const url = yield* throughProxy(String)
      const finished = yield* run(entryPoints.migrate, [], { DATABASE_URL: url })
      assert.strictEqual(finished.code, 0, finished.stderr)
      assert.include(finished.stderr, "up to date")
    }).pipe(Effect.scoped), 60_000)

  it.effect.each([
    ["npm run migrate", entryPoints.migrate, [], {}],
    ["the dispatcher", entryPoints.dispatcher, [], { DISPATCHER_PORT: "0" }],
    ["the API", entryPoints.api, [], { HOST: "127.0.0.1" }],
    ["the CLI", entryPoints.cli, ["schools", "set-plan", "--school", "1", "--plan", "pro"], {}],
    ["npm start", entryPoints.start, [], { DISPATCHER_PORT: "0" }]
  ] as const)("%s refuses PostgreSQL 14 with one line and exit 1", ([, script, args, env]) =>
    Effect.gen(function*() {
      const url = yield* as14
      const port = yield* freePort
      const finished = yield* run(script, args, {
        ...env,
        DATABASE_URL: url,
        PORT: String(port),
        // A real key: without one the API would also warn about the development key.
        WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString("base64")
      })
      assert.strictEqual(finished.code, 1, finished.stderr)
      assert.strictEqual(finished.stdout, "")
      assert.deepStrictEqual(lines(finished.stderr), [`error: ${REFUSAL_14}`])
    }).pipe(Effect.scoped), 60_000)
})
