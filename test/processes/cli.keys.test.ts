/**
 * The operator CLI's key commands (docs/operations.md "Operator CLI";
 * docs/back-office.md "API keys"), run as real processes against this file's database, with the API
 * serving the same database so an issued or revoked key is tried on the
 * public API: `keys create` prints the whole key once (`--json`: exactly
 * `{ id, key, scope, prefix }`), only on Extended or Pro (the back office's
 * rule), `keys revoke` makes the key answer `revoked_key` and keeps the first
 * revocation's time; refusals are one line and exit 1, bad arguments one
 * line and exit 2, with nothing on stdout.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKey } from "@school/domain"
import type { Plan } from "@school/domain/Plans"
import { createSchool } from "@school/persistence/Schools"
import { hashPassword } from "@school/runtime/Passwords"
import { errorOf, V1 } from "../support/Clients.ts"
import { entryPoints, lines, run } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const Created = Schema.Struct({
  id: Schema.Int,
  key: Schema.String.check(Schema.isPattern(/^svc_[a-z0-9]{8}_[A-Za-z0-9]{32}$/u)),
  scope: Schema.Literals(["read", "write"]),
  prefix: Schema.String
})
const decodeCreated = Schema.decodeUnknownSync(Schema.fromJsonString(Created))
const Revoked = Schema.Struct({ id: Schema.Int, school_id: Schema.Int, prefix: Schema.String, revoked_at: Schema.String })
const decodeRevoked = Schema.decodeUnknownSync(Schema.fromJsonString(Revoked))

const cli = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const database = yield* TestDatabase
    return yield* run(entryPoints.cli, args, { DATABASE_URL: database.url })
  })

let schools = 0
const school = (plan: Plan | null) =>
  hashPassword("correct horse battery").pipe(
    Effect.flatMap((passwordHash) =>
      createSchool({
        name: "Keys School",
        plan,
        owner: { name: "Olga", email: `owner${++schools}-${process.pid}@keys.example`, passwordHash }
      })
    ),
    Effect.map((created) => String(created.school_id)),
    Effect.orDie
  )

const publicGet = (key: string) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    return yield* Effect.orDie(server.raw.get(`${V1}/students?per_page=1`, key))
  })

const keyRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys`
  return rows[0]?.n
}).pipe(Effect.orDie)

const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

layer(Env, { excludeTestServices: true, timeout: 120_000 })("cli keys", (it) => {
  it.effect("keys create --json on Extended and Pro: exactly { id, key, scope, prefix }; stored hashed; works on the public API at once", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (const plan of ["extended", "pro"] as const) {
        const schoolId = yield* school(plan)
        const result = yield* cli(["keys", "create", "--school", schoolId, "--scope", "read", "--json"])
        assert.strictEqual(result.code, 0, result.stderr)
        const created = decodeCreated(result.stdout)
        assert.deepStrictEqual(Object.keys(JSON.parse(result.stdout)).sort(), ["id", "key", "prefix", "scope"])
        assert.strictEqual(created.scope, "read")
        const parsed = Option.getOrThrow(ApiKey.parseApiKey(created.key))
        assert.strictEqual(parsed.prefix, created.prefix)

        const [row] = yield* sql<{ name: string; scope: string; expires_at: Date | null; secret_hash: Uint8Array }>`
          SELECT name, scope, expires_at, secret_hash FROM api_keys WHERE school_id = ${Number(schoolId)} AND id = ${created.id}`
        assert.isDefined(row)
        assert.deepStrictEqual([row.name, row.scope, row.expires_at], ["operator", "read", null])
        assert.deepStrictEqual(Buffer.from(row.secret_hash), Buffer.from(ApiKey.hashSecret(parsed.secret)))
        assert.strictEqual((yield* publicGet(created.key)).status, 200)
      }
    }))

  it.effect("--name and --expires-at (any offset, stored as its instant); without --json the key is printed for a person", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const schoolId = yield* school("pro")
      const result = yield* cli([
        "keys",
        "create",
        "--school",
        schoolId,
        "--scope",
        "write",
        "--name",
        "  CRM sync  ",
        "--expires-at",
        "2099-06-01T12:00:00+03:00",
        "--json"
      ])
      assert.strictEqual(result.code, 0, result.stderr)
      const created = decodeCreated(result.stdout)
      assert.strictEqual(created.scope, "write")
      const [row] = yield* sql<{ name: string; expires: string }>`
        SELECT name, to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') AS expires
        FROM api_keys WHERE school_id = ${Number(schoolId)} AND id = ${created.id}`
      assert.deepStrictEqual(row, { name: "CRM sync", expires: "2099-06-01T09:00:00" })

      const human = yield* cli(["keys", "create", "--school", schoolId, "--scope", "read"])
      assert.strictEqual(human.code, 0, human.stderr)
      const [first] = lines(human.stdout)
      assert.match(first ?? "", /^svc_[a-z0-9]{8}_[A-Za-z0-9]{32}$/u)
      assert.strictEqual((yield* publicGet(first ?? "")).status, 200)
      assert.match(human.stdout, /shown only now/u)
    }))

  it.effect("refused below Extended and with no plan: exit 1, one line naming the plan needed, nothing on stdout, no key", () =>
    Effect.gen(function*() {
      const before = yield* keyRows
      for (const plan of ["basic", "economy", "standard", null] as const) {
        const schoolId = yield* school(plan)
        const result = yield* cli(["keys", "create", "--school", schoolId, "--scope", "read", "--json"])
        assert.strictEqual(result.code, 1, result.stderr)
        assert.strictEqual(result.stdout, "")
        assert.strictEqual(lines(result.stderr).length, 1, result.stderr)
        assert.match(result.stderr, /Extended/u)
        assert.include(result.stderr, `school ${schoolId}`)
        assert.include(result.stderr, plan ?? "no plan")
      }
      assert.strictEqual(yield* keyRows, before)
    }))

  it.effect("keys revoke --json: the key answers revoked_key; a second revocation keeps the first time", () =>
    Effect.gen(function*() {
      const schoolId = yield* school("extended")
      const created = decodeCreated((yield* cli(["keys", "create", "--school", schoolId, "--scope", "write", "--json"])).stdout)
      assert.strictEqual((yield* publicGet(created.key)).status, 200)

      const result = yield* cli(["keys", "revoke", "--school", schoolId, "--key-id", String(created.id), "--json"])
      assert.strictEqual(result.code, 0, result.stderr)
      const revoked = decodeRevoked(result.stdout)
      assert.deepStrictEqual(Object.keys(JSON.parse(result.stdout)).sort(), ["id", "prefix", "revoked_at", "school_id"])
      assert.deepStrictEqual({ ...revoked, revoked_at: "" }, {
        id: created.id,
        school_id: Number(schoolId),
        prefix: created.prefix,
        revoked_at: ""
      })
      assert.match(revoked.revoked_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u)
      const reply = yield* publicGet(created.key)
      assert.strictEqual(reply.status, 401, reply.text)
      assert.deepStrictEqual(errorOf(reply).fields, { reason: "revoked_key" })

      const again = yield* cli(["keys", "revoke", "--school", schoolId, "--key-id", String(created.id)])
      assert.strictEqual(again.code, 0, again.stderr)
      assert.include(again.stdout, revoked.revoked_at)
    }))

  it.effect("refusals (unknown school, unknown or another school's key) exit 1; bad arguments exit 2; one line, nothing on stdout", () =>
    Effect.gen(function*() {
      const a = yield* school("pro")
      const b = yield* school("pro")
      const theirs = decodeCreated((yield* cli(["keys", "create", "--school", b, "--scope", "read", "--json"])).stdout)
      const before = yield* keyRows
      const refusals = yield* Effect.all({
        createNoSchool: cli(["keys", "create", "--school", "999999", "--scope", "read", "--json"]),
        revokeNoSchool: cli(["keys", "revoke", "--school", "999999", "--key-id", String(theirs.id), "--json"]),
        revokeNoKey: cli(["keys", "revoke", "--school", a, "--key-id", "999999", "--json"]),
        revokeTheirs: cli(["keys", "revoke", "--school", a, "--key-id", String(theirs.id), "--json"])
      }, { concurrency: "unbounded" })
      for (const [name, result] of Object.entries(refusals)) {
        assert.strictEqual(result.code, 1, `${name}: ${result.stderr}`)
        assert.strictEqual(result.stdout, "", name)
        assert.strictEqual(lines(result.stderr).length, 1, `${name}: ${result.stderr}`)
      }
      assert.match(refusals.createNoSchool.stderr, /999999/u)
      assert.match(refusals.revokeNoSchool.stderr, /no school with id 999999/u)
      assert.match(refusals.revokeNoKey.stderr, /no API key with id 999999/u)
      assert.match(refusals.revokeTheirs.stderr, new RegExp(`no API key with id ${theirs.id}`, "u"))
      assert.strictEqual((yield* publicGet(theirs.key)).status, 200)

      const bad = yield* Effect.all({
        scope: cli(["keys", "create", "--school", a, "--scope", "admin", "--json"]),
        noScope: cli(["keys", "create", "--school", a, "--json"]),
        noSchool: cli(["keys", "create", "--scope", "read"]),
        school: cli(["keys", "create", "--school", "0", "--scope", "read"]),
        name: cli(["keys", "create", "--school", a, "--scope", "read", "--name", "   "]),
        malformed: cli(["keys", "create", "--school", a, "--scope", "read", "--expires-at", "next week", "--json"]),
        noOffset: cli(["keys", "create", "--school", a, "--scope", "read", "--expires-at", "2099-01-01T00:00:00"]),
        past: cli(["keys", "create", "--school", a, "--scope", "read", "--expires-at", "2020-01-01T00:00:00Z", "--json"]),
        keyId: cli(["keys", "revoke", "--school", a, "--key-id", "abc"]),
        noKeyId: cli(["keys", "revoke", "--school", a])
      }, { concurrency: "unbounded" })
      for (const [name, result] of Object.entries(bad)) {
        assert.strictEqual(result.code, 2, `${name}: ${result.stderr}`)
        assert.strictEqual(result.stdout, "", name)
        assert.strictEqual(lines(result.stderr).length, 1, `${name}: ${result.stderr}`)
      }
      assert.match(bad.scope.stderr, /--scope.*admin|admin.*scope/u)
      assert.match(bad.past.stderr, /--expires-at.*future/u)
      assert.match(bad.malformed.stderr, /--expires-at/u)
      assert.strictEqual(yield* keyRows, before)
    }))
})
