/**
 * The operator CLI's school commands (docs/operations.md "Operator CLI"), run as real
 * processes against this file's database.
 */
import { assert, layer } from "@effect/vitest"
import { verifyPassword } from "@school/runtime/Passwords"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { entryPoints, lines, run } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const Created = Schema.Struct({ school_id: Schema.Int, owner_id: Schema.Int, main_funnel_id: Schema.Int })
const decodeCreated = Schema.decodeUnknownSync(Schema.fromJsonString(Created))

const cli = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const database = yield* TestDatabase
    return yield* run(entryPoints.cli, args, { DATABASE_URL: database.url })
  })

const createArgs = (email: string, plan: string, extra: ReadonlyArray<string> = []) => [
  "schools",
  "create",
  "--name",
  "Lingua School",
  "--plan",
  plan,
  "--owner-email",
  email,
  "--owner-password",
  "correct horse battery",
  ...extra
]

layer(TestDatabase.layer, { excludeTestServices: true })("cli schools", (it) => {
  it.effect("schools create --json: one JSON document; school, owner, login and main funnel stored", () =>
    Effect.gen(function*() {
      const result = yield* cli(createArgs("Owner@Lingua.example", "standard", ["--owner-name", "Olga Owner", "--json"]))
      assert.strictEqual(result.code, 0, result.stderr)
      // stdout is exactly one JSON document with exactly these keys
      const created = decodeCreated(result.stdout)
      assert.deepStrictEqual(Object.keys(JSON.parse(result.stdout)).sort(), ["main_funnel_id", "owner_id", "school_id"])

      const sql = yield* SqlClient.SqlClient
      const [school] = yield* sql<{ name: string; plan: string | null }>`
        SELECT name, plan FROM schools WHERE id = ${created.school_id}`
      assert.deepStrictEqual(school, { name: "Lingua School", plan: "standard" })

      const [owner] = yield* sql<{ name: string; email: string; role: string; password_hash: string }>`
        SELECT name, email, role, password_hash FROM employees
        WHERE school_id = ${created.school_id} AND id = ${created.owner_id}`
      assert.isDefined(owner)
      assert.strictEqual(owner.name, "Olga Owner")
      assert.strictEqual(owner.email, "owner@lingua.example")
      assert.strictEqual(owner.role, "owner")
      assert.match(owner.password_hash, /^scrypt\$\d+\$\d+\$\d+\$[\w-]+\$[\w-]+$/)
      assert.isTrue(yield* verifyPassword("correct horse battery", owner.password_hash))
      assert.isFalse(yield* verifyPassword("wrong", owner.password_hash))

      const login = yield* sql<{ school_id: number; employee_id: number }>`
        SELECT school_id, employee_id FROM login_emails WHERE email = 'owner@lingua.example'`
      assert.deepStrictEqual(login, [{ school_id: created.school_id, employee_id: created.owner_id }])

      const funnels = yield* sql<{ id: number; is_main: boolean }>`
        SELECT id, is_main FROM funnels WHERE school_id = ${created.school_id}`
      assert.deepStrictEqual(funnels, [{ id: created.main_funnel_id, is_main: true }])
      const statuses = yield* sql<{ name: string; priority: number }>`
        SELECT name, priority FROM pipeline_statuses
        WHERE school_id = ${created.school_id} AND funnel_id = ${created.main_funnel_id}
        ORDER BY priority`
      assert.deepStrictEqual(statuses, [
        { name: "Incoming", priority: 10 },
        { name: "In progress", priority: 20 },
        { name: "Won", priority: 30 },
        { name: "Lost", priority: 40 }
      ])
    }))

  it.effect("plan none is no plan; set-plan changes it, none clears it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const result = yield* cli(createArgs("plans@lingua.example", "none", ["--json"]))
      assert.strictEqual(result.code, 0, result.stderr)
      const { school_id } = decodeCreated(result.stdout)
      const plan = sql<{ plan: string | null }>`SELECT plan FROM schools WHERE id = ${school_id}`
      assert.deepStrictEqual(yield* plan, [{ plan: null }])

      const extended = yield* cli(["schools", "set-plan", "--school", String(school_id), "--plan", "extended", "--json"])
      assert.strictEqual(extended.code, 0, extended.stderr)
      assert.deepStrictEqual(JSON.parse(extended.stdout), { school_id, plan: "extended" })
      assert.deepStrictEqual(yield* plan, [{ plan: "extended" }])

      const cleared = yield* cli(["schools", "set-plan", "--school", String(school_id), "--plan", "none"])
      assert.strictEqual(cleared.code, 0, cleared.stderr)
      assert.deepStrictEqual(yield* plan, [{ plan: null }])
    }))

  it.effect("refusals and bad arguments: one line on stderr, nothing on stdout, non-zero exit", () =>
    Effect.gen(function*() {
      const first = yield* cli(createArgs("taken@lingua.example", "basic", ["--json"]))
      assert.strictEqual(first.code, 0, first.stderr)
      const cases = yield* Effect.all({
        taken: cli(createArgs("TAKEN@lingua.example", "basic", ["--json"])),
        noSchool: cli(["schools", "set-plan", "--school", "999999", "--plan", "pro", "--json"]),
        badPlan: cli(createArgs("x@lingua.example", "gold", ["--json"])),
        badEmail: cli(createArgs("not-an-email", "basic")),
        shortPassword: cli([...createArgs("short@lingua.example", "basic").slice(0, -1), "nine char"]),
        missing: cli(["schools", "create", "--plan", "basic", "--json"]),
        unknown: cli(["schools", "rename"])
      }, { concurrency: "unbounded" })
      for (const [name, result] of Object.entries(cases)) {
        assert.notStrictEqual(result.code, 0, name)
        assert.strictEqual(result.stdout, "", name)
        assert.strictEqual(lines(result.stderr).length, 1, `${name}: ${result.stderr}`)
      }
      assert.match(cases.taken.stderr, /taken@lingua\.example.*taken/)
      assert.match(cases.noSchool.stderr, /999999/)
      assert.match(cases.badPlan.stderr, /--plan.*gold/)
      assert.match(cases.badEmail.stderr, /--owner-email/)
      assert.match(cases.shortPassword.stderr, /--owner-password must be 10 to 1024 characters/)
      assert.strictEqual(cases.shortPassword.code, 2)
      assert.match(cases.missing.stderr, /--name/)
      assert.match(cases.unknown.stderr, /rename/)

      const sql = yield* SqlClient.SqlClient
      const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM employees WHERE email = 'taken@lingua.example'`
      assert.strictEqual(count?.n, 1)
    }))
})
