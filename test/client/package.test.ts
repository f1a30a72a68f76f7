/**
 * `@school/client` as a package, outside this repository (docs/integrators.md
 * "Client kit and examples"): `npm pack` of libs/client (its `prepack`
 * builds `dist/index.js`), the tarball installed into a fresh project in a
 * temporary directory (npm's cache, `--prefer-offline`; `effect` comes as
 * the peer dependency), then, in that project:
 *
 * - a plain `.mjs` sync with Node (the Node of the tests): `makeClient` with
 *   the base URL as integrators write it (`…/api/public/v1/`), every student
 *   and every enrollment through `all()`, and a refused write read by
 *   `error.code`; then the Effect face (`make`) with the project's own
 *   `effect`: a 404 as an `ApiError` with its code on the instance, and
 *   `Effect.catchTag`;
 * - its types: a TypeScript file type-checked against the package's
 *   `types/index.d.ts` and effect's own types (`skipLibCheck` off), both
 *   faces, one wrong call of each expected to fail.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Fixtures from "../support/Fixtures.ts"
import { TestDatabase } from "../support/TestDatabase.ts"
import { TestServer } from "../support/TestServer.ts"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const Env = TestServer.layer().pipe(Layer.provideMerge(TestDatabase.layer))

/** Runs a command; its exit code and output (never fails). npm's own settings of a test run are left out. */
const exec = (file: string, args: ReadonlyArray<string>, cwd: string, env: Readonly<Record<string, string>> = {}) =>
  Effect.callback<{ code: number; stdout: string; stderr: string }>((resume) => {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("npm_")))
    execFile(file, [...args], { cwd, env: { ...inherited, ...env }, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resume(Effect.succeed({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })))
  })

const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "school-client-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

const SYNC = `
import { Effect } from "effect"
import { ApiError, make, makeClient } from "@school/client"

const client = makeClient({ baseUrl: process.env.API_URL, apiKey: process.env.API_KEY, retry: { baseDelay: "50 millis" } })
const students = []
for await (const student of client.students.all({ per_page: 3 })) students.push(student.id)
const enrollments = []
for await (const enrollment of client.enrollments.all()) enrollments.push(enrollment.student_id)
let refused
try {
  await client.leads.create({ phone: "+7 900 000-00-01" })
} catch (error) {
  refused = { isApiError: error instanceof ApiError, code: error.code, status: error.status, name: error.name }
}
// The Effect face: the same ApiError, its code, message and fields on the instance.
const api = await Effect.runPromise(make({ baseUrl: process.env.API_URL, apiKey: process.env.API_KEY, retry: { baseDelay: "50 millis" } }))
const missing = await Effect.runPromise(Effect.flip(api.students.get({ params: { id: 2000000000 } })))
const effect = {
  isApiError: missing instanceof ApiError, name: missing.name, tag: missing._tag, code: missing.code, status: missing.status,
  hasMessage: missing.message.length > 0, fields: missing.fields ?? null
}
const caught = await Effect.runPromise(api.students.get({ params: { id: 2000000000 } }).pipe(
  Effect.map(() => "found"),
  Effect.catchTag("NotFound", (error) => Effect.succeed(error.code))
))
console.log(JSON.stringify({ students, enrollments, refused, effect, caught }))
`

const TYPED = `
import { Effect } from "effect"
import { make, makeClient, write, type AnyApiError, type ApiError, type CallError, type ErrorFields, type Student } from "@school/client"

const client = makeClient({ baseUrl: "http://127.0.0.1:3000/api/public/v1", apiKey: "svc_x" })
export const names = async (): Promise<Array<string>> => {
  const out: Array<string> = []
  for await (const student of client.students.all({ updated_since: "2026-01-01T00:00:00Z" })) out.push(student.fio)
  return out
}
export const first = async (): Promise<Student | undefined> => (await client.students.list({ per_page: 1 })).data[0]
export const codeOf = (error: ApiError): string => error.code
// @ts-expect-error: per_page is a number
export const wrong = () => client.groups.list({ per_page: "100" })

// The Effect face, typed: its errors narrowed by catchTag, each with its code.
export const cards = (ids: ReadonlyArray<number>): Effect.Effect<Array<string>, CallError> =>
  Effect.gen(function*() {
    const api = yield* make({ baseUrl: "http://127.0.0.1:3000", apiKey: "svc_x" })
    const out: Array<string> = []
    for (const id of ids) {
      const card = yield* api.students.get({ params: { id } }).pipe(
        Effect.map((card): string => card.data.fio),
        Effect.catchTag("NotFound", (error: ApiError<"NotFound">) => Effect.succeed(\`\${error.code}: \${error.message}\`))
      )
      out.push(card)
    }
    const lead = yield* write((key) => api.leads.create({ headers: { "idempotency-key": key }, payload: { phone: "+7 900 000-00-01" } }))
    out.push(lead.data.name)
    return out
  })
export const fieldsOf = (error: AnyApiError): ErrorFields | undefined => error._tag === "ValidationFailed" ? error.fields : undefined
// @ts-expect-error: the query of a list is its own shape
export const wrongQuery = make({ baseUrl: "", apiKey: "" }).pipe(Effect.flatMap((api) => api.groups.list({ query: { per_page: "1" } })))
`

layer(Env, { excludeTestServices: true, timeout: 240_000 })("@school/client packed and installed outside the repository", (it) => {
  it.effect("npm pack, npm install from the tarball, a sync with Node and a type check against its .d.ts", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* TestServer
      const { schoolId, filialId } = yield* Fixtures.school("pro", "Packed client")
      const ids = yield* Fixtures.students(schoolId, filialId, 7, "Student")
      const groupId = yield* Fixtures.group(schoolId, filialId, "Packed group", 10)
      for (const id of ids.slice(0, 2)) yield* Fixtures.enroll(schoolId, id, groupId)
      const key = yield* Fixtures.key(schoolId)

      const packs = yield* tempDir
      const packed = yield* exec("npm", ["pack", "--pack-destination", packs, "--silent"], join(ROOT, "libs/client"))
      assert.strictEqual(packed.code, 0, packed.stdout + packed.stderr)
      const [tarball] = yield* Effect.promise(() => readdir(packs))
      assert.match(tarball ?? "", /^school-client-.*\.tgz$/)
      const listed = yield* exec("tar", ["-tzf", join(packs, tarball ?? "")], packs)
      assert.deepStrictEqual(
        lines(listed.stdout).sort(),
        ["package/dist/index.js", "package/package.json", "package/types/index.d.ts"],
        "JavaScript, types and the manifest: no TypeScript source"
      )

      const project = yield* tempDir
      yield* Effect.promise(() => writeFile(join(project, "package.json"), JSON.stringify({ name: "integrator", private: true, type: "module" })))
      const installed = yield* exec("npm", ["install", join(packs, tarball ?? ""), "--prefer-offline", "--no-audit", "--no-fund"], project)
      assert.strictEqual(installed.code, 0, installed.stdout + installed.stderr)

      yield* Effect.promise(() => writeFile(join(project, "sync.mjs"), SYNC))
      const sync = yield* exec(process.execPath, ["sync.mjs"], project, { API_URL: `${server.baseUrl}/api/public/v1/`, API_KEY: key })
      assert.strictEqual(sync.code, 0, sync.stdout + sync.stderr)
      const result = JSON.parse(sync.stdout) as { students: Array<number>; enrollments: Array<number>; refused: unknown; effect: unknown; caught: unknown }
      assert.deepStrictEqual(result.students, [...ids].sort((a, b) => a - b))
      assert.deepStrictEqual([...result.enrollments].sort((a, b) => a - b), [...ids.slice(0, 2)].sort((a, b) => a - b))
      assert.deepStrictEqual(result.refused, { isApiError: true, code: "insufficient_scope", status: 403, name: "ApiError" })
      assert.deepStrictEqual(result.effect, {
        isApiError: true, name: "ApiError", tag: "NotFound", code: "not_found", status: 404, hasMessage: true, fields: null
      })
      assert.strictEqual(result.caught, "not_found")

      yield* Effect.promise(() => writeFile(join(project, "typed.ts"), TYPED))
      const tsc = join(ROOT, "node_modules/typescript/bin/tsc")
      yield* Effect.promise(() =>
        writeFile(join(project, "tsconfig.json"), JSON.stringify({
          compilerOptions: {
            // effect's own types name the web's classes (URL, FormData, ReadableStream…): an Effect project has
            // them from the DOM library (or @types/node).
            strict: true, exactOptionalPropertyTypes: true, target: "es2024", lib: ["es2024", "dom"], module: "nodenext",
            moduleResolution: "nodenext", types: [], skipLibCheck: false, noEmit: true
          },
          files: ["typed.ts"]
        })))
      const checked = yield* exec(process.execPath, [tsc, "-p", "tsconfig.json"], project)
      assert.strictEqual(checked.code, 0, checked.stdout + checked.stderr)
    })))
})

const lines = (text: string) => text.split("\n").filter((line) => line.trim() !== "")
