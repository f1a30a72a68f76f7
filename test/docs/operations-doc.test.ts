/**
 * docs/operations.md holds what it says against the code and the schema:
 * - "Settings": the table names exactly the settings the processes read
 *   (the lists each process checks at start: apps/api/src/ApiSettings.ts,
 *   apps/dispatcher/src/DispatcherSettings.ts, apps/cli/src/CliSettings.ts),
 *   plus the test-only TEST_DATABASE_URL and what the processes are started
 *   with for the C library (libs/runtime/src/NodeFlags.ts PROCESS_ENV).
 * - "Past one database": the Citus block distributes every table of the
 *   migrated schema exactly once, each after the tables its foreign keys
 *   reference; every primary key and unique constraint holds the table's
 *   distribution column (Citus refuses one that does not); every foreign key
 *   joins tables of one colocation group on their distribution columns,
 *   except the ones the section says to drop.
 * - "What to watch": every alert expression parses with Prometheus's own
 *   PromQL grammar, and every series it names is one that a scrape of the
 *   real API and dispatcher processes shows.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { parser as promql } from "@prometheus-io/lezer-promql"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import parseMetrics from "parse-prometheus-text-format"
import { parse as parseYaml } from "yaml"
import { freePort } from "@school/runtime/Ports"
import { ApiSettings } from "@school/api/ApiSettings"
import { CliSettings } from "@school/cli/CliSettings"
import { DispatcherSettings } from "@school/dispatcher/DispatcherSettings"
import { PROCESS_ENV } from "@school/runtime/NodeFlags"
import { startApi, startDispatcher } from "../support/Processes.ts"
import { TestDatabase } from "../support/TestDatabase.ts"

const DOC = readFileSync(fileURLToPath(new URL("../../docs/operations.md", import.meta.url)), "utf8")

/** The text of one `## ` section of the doc, up to the next one. */
const section = (title: string): string => {
  const start = DOC.indexOf(`\n## ${title}\n`)
  assert.isAtLeast(start, 0, `docs/operations.md has no section "${title}"`)
  const next = DOC.indexOf("\n## ", start + 1)
  return DOC.slice(start, next === -1 ? undefined : next)
}

/** The fenced blocks of one kind in a text. */
const blocks = (text: string, kind: string): ReadonlyArray<string> =>
  [...text.matchAll(new RegExp("^```" + kind + "\\n([\\s\\S]*?)^```$", "gmu"))].map((match) => match[1] ?? "")

/** Settings read by tests only, documented in the same table. */
const TEST_ONLY = ["TEST_DATABASE_URL"]
/** Read by glibc at process start, not by the processes' code; documented in the same table. */
const C_LIBRARY = Object.keys(PROCESS_ENV)

describe("docs/operations.md \"Settings\"", () => {
  it.effect("the table names every setting the processes read, and nothing else", () =>
    Effect.gen(function*() {
      const asked = new Set([...ApiSettings, ...DispatcherSettings, ...CliSettings].map((setting) => setting.name))
      const table = section("Settings")
      const documented = new Set(
        [...table.matchAll(/^\| `([A-Z_]+)`(?: \/ `([A-Z_]+)`)? \|/gmu)].flatMap((m) => [m[1], m[2]].filter((n) => n !== undefined))
      )
      assert.isAbove(asked.size, 10)
      assert.deepStrictEqual([...documented].sort(), [...asked, ...TEST_ONLY, ...C_LIBRARY].sort())
    }))
})

/** The foreign keys docs/operations.md "Past one database: distributing by `school_id` (Citus)" says to drop: they join two colocation groups. */
const DROPPED = [
  "api_key_prefixes_school_id_prefix_fkey",
  "login_emails_school_id_employee_id_fkey",
  "session_tokens_school_id_token_hash_fkey"
]

const Constraint = Schema.Struct({
  name: Schema.String,
  kind: Schema.String,
  table: Schema.String,
  columns: Schema.Array(Schema.String),
  referenced: Schema.NullOr(Schema.String),
  referencedColumns: Schema.NullOr(Schema.Array(Schema.String))
})

layer(TestDatabase.layer, { excludeTestServices: true })("docs/operations.md \"Past one database: distributing by `school_id` (Citus)\"", (it) => {
  it.effect("the Citus calls distribute every table once, in foreign-key order, on keys Citus accepts", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const citus = section("Past one database: distributing by `school_id` (Citus)")
      const calls = blocks(citus, "sql").join("\n")
      const distributed = [...calls.matchAll(
        /create_distributed_table\('(\w+)',\s*'(\w+)'(?:,\s*colocate_with => '(\w+)')?\)/gu
      )].map((m) => ({ table: m[1] ?? "", column: m[2] ?? "", colocateWith: m[3] }))
      const tables = (yield* sql<{ name: string }>`
        SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> 'effect_sql_migrations'`).map((r) => r.name)
      assert.deepStrictEqual(distributed.map((d) => d.table).sort(), [...tables].sort(), "every table exactly once")

      const position = new Map(distributed.map((d, i) => [d.table, i]))
      const columnOf = new Map(distributed.map((d) => [d.table, d.column]))
      // A table's colocation group: the table it names in colocate_with, or itself.
      const groupOf = new Map(distributed.map((d) => [d.table, d.colocateWith ?? d.table]))
      const constraints = yield* sql`
        SELECT con.conname AS name, con.contype::text AS kind, rel.relname AS "table",
               (SELECT array_agg(a.attname ORDER BY k.i) FROM unnest(con.conkey) WITH ORDINALITY k(n, i)
                  JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n) AS columns,
               ref.relname AS referenced,
               (SELECT array_agg(a.attname ORDER BY k.i) FROM unnest(con.confkey) WITH ORDINALITY k(n, i)
                  JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n) AS "referencedColumns"
        FROM pg_constraint con
        JOIN pg_class rel ON rel.oid = con.conrelid
        JOIN pg_namespace n ON n.oid = rel.relnamespace
        LEFT JOIN pg_class ref ON ref.oid = con.confrelid
        WHERE n.nspname = 'public' AND con.contype IN ('p', 'u', 'f') AND rel.relname <> 'effect_sql_migrations'`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Constraint)))
      )
      const uniqueIndexes = yield* sql<{ name: string; table: string; columns: ReadonlyArray<string> }>`
        SELECT i.relname AS name, t.relname AS "table",
               array_agg(a.attname) AS columns
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY (x.indkey)
        WHERE n.nspname = 'public' AND x.indisunique AND t.relname <> 'effect_sql_migrations'
        GROUP BY i.relname, t.relname`
      for (const unique of [...constraints.filter((c) => c.kind !== "f"), ...uniqueIndexes]) {
        assert.include(unique.columns, columnOf.get(unique.table), `${unique.name} holds ${unique.table}'s distribution column`)
      }
      const foreignKeys = constraints.filter((c) => c.kind === "f")
      assert.includeMembers(foreignKeys.map((f) => f.name), DROPPED, "the foreign keys to drop exist")
      for (const key of foreignKeys) {
        const referenced = key.referenced ?? ""
        if (referenced !== key.table) {
          assert.isBelow(position.get(referenced) ?? Infinity, position.get(key.table) ?? -1, `${key.name}: ${referenced} first`)
        }
        if (DROPPED.includes(key.name)) {
          assert.notStrictEqual(groupOf.get(key.table), groupOf.get(referenced), `${key.name} crosses groups`)
          assert.include(citus, `\`${key.table} → ${referenced}\``, `the section says to drop ${key.name}`)
          continue
        }
        assert.strictEqual(groupOf.get(key.table), groupOf.get(referenced), `${key.name} stays in one colocation group`)
        const at = key.columns.indexOf(columnOf.get(key.table) ?? "")
        assert.isAtLeast(at, 0, `${key.name} holds ${key.table}'s distribution column`)
        assert.strictEqual(key.referencedColumns?.[at], columnOf.get(referenced), `${key.name} joins the distribution columns`)
      }
    }))
})

/** Series Prometheus makes itself, not exported by a process. */
const SYNTHETIC = new Set(["up"])
/** A histogram's series: its family's name plus one of these. */
const HISTOGRAM_SUFFIXES = ["_bucket", "_sum", "_count"]

/** Every selector of a PromQL expression: the series it names and the labels it matches on. */
const selectorsOf = (expr: string): ReadonlyArray<{ readonly name: string; readonly labels: ReadonlyArray<string> }> => {
  const tree = promql.parse(expr)
  const found: Array<{ name: string; labels: Array<string> }> = []
  const errors: Array<string> = []
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(`at ${node.from}: ${expr.slice(node.from, node.to + 10)}`)
      if (node.name !== "VectorSelector") return
      const selector = node.node
      const name = selector.getChild("Identifier")
      const matchers = selector.getChild("LabelMatchers")
      found.push({
        name: name === null ? "" : expr.slice(name.from, name.to),
        labels: matchers === null
          ? []
          : matchers.getChildren("UnquotedLabelMatcher").flatMap((m) => {
            const label = m.getChild("LabelName")
            return label === null ? [] : [expr.slice(label.from, label.to)]
          })
      })
    }
  })
  assert.deepStrictEqual(errors, [], `PromQL does not parse: ${expr}`)
  return found
}

const Rules = Schema.Struct({
  groups: Schema.Array(Schema.Struct({
    name: Schema.String,
    rules: Schema.Array(Schema.Struct({
      alert: Schema.String,
      expr: Schema.String,
      for: Schema.String,
      annotations: Schema.Struct({ summary: Schema.String })
    }))
  }))
})

layer(TestDatabase.layer, { excludeTestServices: true })("docs/operations.md \"What to watch\"", (it) => {
  it.effect("every alert parses as PromQL and names only series, and labels, the processes export", () =>
    Effect.gen(function*() {
      const database = yield* TestDatabase
      const [block, ...more] = blocks(section("What to watch"), "yaml")
      assert.isDefined(block, "the section has its rule file")
      assert.strictEqual(more.length, 0)
      const rules = Schema.decodeUnknownSync(Rules)(parseYaml(block!)).groups.flatMap((group) => group.rules)
      assert.isAtLeast(rules.length, 6)

      const apiPort = yield* Effect.orDie(freePort)
      const exported = yield* Effect.scoped(Effect.gen(function*() {
        yield* startApi(database.url, apiPort)
        const dispatcher = yield* startDispatcher(database.url)
        // A request of each kind the rules look at, so their series have samples with labels.
        yield* Effect.promise(() => fetch(`http://127.0.0.1:${apiPort}/api/public/v1/students`))
        const texts = yield* Effect.promise(() =>
          Promise.all([`http://127.0.0.1:${apiPort}/metrics`, `http://127.0.0.1:${dispatcher.port}/metrics`].map(async (url) => {
            const response = await fetch(url)
            assert.strictEqual(response.status, 200, url)
            return response.text()
          }))
        )
        return texts.flatMap((text) => parseMetrics(text))
      }))
      const byName = new Map(exported.map((family) => [family.name, family]))
      const familyOf = (series: string) =>
        byName.get(series) ??
          byName.get(HISTOGRAM_SUFFIXES.reduce((name, suffix) => name.endsWith(suffix) ? name.slice(0, -suffix.length) : name, series))

      for (const rule of rules) {
        const selectors = selectorsOf(rule.expr)
        assert.isAbove(selectors.length, 0, `${rule.alert} selects something`)
        for (const selector of selectors) {
          if (SYNTHETIC.has(selector.name)) continue
          const family = familyOf(selector.name)
          assert.isDefined(family, `${rule.alert}: ${selector.name} is exported`)
          const labels = new Set(family!.metrics.flatMap((sample) => Object.keys(sample.labels ?? {})))
          for (const label of selector.labels) {
            if (label === "le") continue
            assert.isTrue(labels.has(label), `${rule.alert}: ${selector.name} has the label ${label}`)
          }
        }
      }
    }))
})
