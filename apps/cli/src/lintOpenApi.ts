/**
 * `npm run lint:openapi`: both OpenAPI documents (public `/api/public/v1/openapi.json`, back office
 * `/api/crm/v1/openapi.json`), as the server sends them (`OpenApi.fromApi` of each contract), written
 * to a temporary directory and linted by two linters: `@redocly/cli lint` (its `recommended` rules,
 * `redocly.yaml`) and `@stoplight/spectral-cli` (`spectral:oas`, `.spectral.yaml`). It fails on any
 * error or warning either reports; a rule is switched off only in those files, with its reason
 * written beside it. CI runs it after the typecheck (`.ci/run`), and test/api/openapi-lint.test.ts
 * runs it under `npm test`.
 *
 * Like panelContract.ts it is a development tool: both linters are devDependencies, and nothing
 * that runs in production imports this module.
 */
import * as HttpApi from "effect/http-api/HttpApi"
import type * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as OpenApi from "effect/http-api/OpenApi"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { PublicApi } from "@school/domain/api/PublicApi"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))

/** The documents, by the file name they are linted under. */
const documents = (): ReadonlyArray<readonly [file: string, document: unknown]> => {
  const of = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>) =>
    OpenApi.fromApi(api)
  return [["public-v1.openapi.json", of(PublicApi)], ["backoffice-v1.openapi.json", of(BackOfficeApi)]]
}

/** One linter's run: its command line, exit status and output. */
export interface LintRun {
  readonly command: string
  readonly status: number
  readonly output: string
}

const run = (bin: string, args: ReadonlyArray<string>): LintRun => {
  const result = spawnSync(join(REPO_ROOT, "node_modules", ".bin", bin), args, {
    cwd: REPO_ROOT,
    encoding: "utf8",
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" }
  })
  return {
    command: [bin, ...args].join(" "),
    status: result.status ?? 1,
    output: `${result.stdout}${result.stderr}${result.error === undefined ? "" : String(result.error)}`
  }
}

/**
 * Writes both documents and lints them: one run per linter over both files. Redocly's exit status
 * is 1 only on errors, so redocly.yaml extends `recommended-strict` (every recommended rule an
 * error); spectral fails on a warning with `--fail-severity=warn`.
 */
export const lintOpenApi = (): ReadonlyArray<LintRun> => {
  const directory = mkdtempSync(join(tmpdir(), "openapi-lint-"))
  try {
    const files = documents().map(([file, document]) => {
      const path = join(directory, file)
      writeFileSync(path, JSON.stringify(document, null, 2))
      return path
    })
    return [
      run("redocly", ["lint", "--config", join(REPO_ROOT, "redocly.yaml"), "--format", "stylish", ...files]),
      run("spectral", [
        "lint",
        "--ruleset",
        join(REPO_ROOT, ".spectral.yaml"),
        "--fail-severity",
        "warn",
        "--format",
        "text",
        ...files
      ])
    ]
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const runs = lintOpenApi()
  for (const { command, output, status } of runs) {
    process.stdout.write(`$ ${command}\n${output.trim()}\n${status === 0 ? "ok" : `failed (exit ${status})`}\n\n`)
  }
  process.exitCode = runs.every(({ status }) => status === 0) ? 0 : 1
}
