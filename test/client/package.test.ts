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
 *   `error.code`;
 * - its types: a TypeScript file type-checked against the package's
 *   `types/index.d.ts` alone (`skipLibCheck` off), one wrong call expected
 *   to fail.
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
import { ApiError, makeClient } from "@school/client"

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
console.log(JSON.stringify({ students, enrollments, refused }))
`

const TYPED = `
import { makeClient, type ApiError, type Student } from "@school/client"

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
      const result = JSON.parse(sync.stdout) as { students: Array<number>; enrollments: Array<number>; refused: unknown }
      assert.deepStrictEqual(result.students, [...ids].sort((a, b) => a - b))
      assert.deepStrictEqual([...result.enrollments].sort((a, b) => a - b), [...ids.slice(0, 2)].sort((a, b) => a - b))
      assert.deepStrictEqual(result.refused, { isApiError: true, code: "insufficient_scope", status: 403, name: "ApiError" })

      yield* Effect.promise(() => writeFile(join(project, "typed.ts"), TYPED))
      const tsc = join(ROOT, "node_modules/typescript/bin/tsc")
      yield* Effect.promise(() =>
        writeFile(join(project, "tsconfig.json"), JSON.stringify({
          compilerOptions: {
            strict: true, exactOptionalPropertyTypes: true, target: "es2024", lib: ["es2024"], module: "nodenext",
            moduleResolution: "nodenext", types: [], skipLibCheck: false, noEmit: true
          },
          files: ["typed.ts"]
        })))
      const checked = yield* exec(process.execPath, [tsc, "-p", "tsconfig.json"], project)
      assert.strictEqual(checked.code, 0, checked.stdout + checked.stderr)
    })))
})

const lines = (text: string) => text.split("\n").filter((line) => line.trim() !== "")
