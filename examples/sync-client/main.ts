/**
 * Keeps a local copy of a school's students
 * (docs/integrators.md "Keeping a copy in sync"):
 *
 * 1. The first run is a full copy, without `updated_since`: students with
 *    the legacy placeholder as their last-modified time never appear in an
 *    incremental selection.
 * 2. Every run records its start time BEFORE it asks for the first page and,
 *    only when the run has finished, stores it as the checkpoint; the next
 *    run asks `updated_since=<that time - SKEW_MARGIN_SECONDS>`. A change made
 *    while a run was paging is therefore picked up by the next run, at the
 *    latest. The time is this machine's clock, so the margin (default 60 s)
 *    covers the skew between it and the service's clock; a record changed
 *    inside the margin is fetched twice, which an upsert makes harmless.
 * 3. Pages are a cursor walk (`starting_after`, the last id of the page
 *    before): each page costs the service the same wherever it is in the
 *    list, and ids are never reused, so a student created during the walk
 *    is met on a later page and no page shifts. A 429 is waited out
 *    (`Retry-After`, doubling on repeats) and the SAME page (the same
 *    cursor) is asked again; skipping it would leave a gap.
 * 4. A run that fails stores nothing: the checkpoint stays, the next run
 *    repeats the work.
 *
 * It uses plain `fetch` (examples/fetch-client.ts), not @school/client, so
 * it runs as it is in any Node 24 project and shows the protocol itself.
 *
 * Run: `npm run example:sync` from the project's root (the project's Node 24).
 * Env: API_URL, API_KEY (read scope is enough), STATE_DIR (default
 * .sync-state: students.json, the copy; checkpoint.json, the last run),
 * PER_PAGE (default 100), SKEW_MARGIN_SECONDS (default 60), MAX_ATTEMPTS
 * (per request, default 8). One JSON line per step on stdout. Exit 0 when
 * the copy is up to date.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { type Api, baseUrlOf, pages } from "../fetch-client.ts"

interface Checkpoint {
  /** The start time of the last finished run (this machine's clock, ISO 8601 UTC). */
  readonly started_at: string
  readonly mode: "full" | "incremental"
}

const log = (fields: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(fields)}\n`)

const readJson = async <A>(path: string): Promise<A | undefined> => {
  try {
    return JSON.parse(await readFile(path, "utf8")) as A
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw error
  }
}

/** Written beside, then renamed: a crash never leaves half a file. */
const writeJson = async (path: string, value: unknown) => {
  await writeFile(`${path}.tmp`, JSON.stringify(value))
  await rename(`${path}.tmp`, path)
}

const main = async () => {
  const apiUrl = process.env["API_URL"]
  const apiKey = process.env["API_KEY"]
  if (apiUrl === undefined || apiKey === undefined) {
    console.error("set API_URL and API_KEY")
    process.exit(2)
  }
  const stateDir = process.env["STATE_DIR"] ?? ".sync-state"
  const perPage = Number(process.env["PER_PAGE"] ?? "100")
  const marginMs = Number(process.env["SKEW_MARGIN_SECONDS"] ?? "60") * 1000
  const api: Api = {
    baseUrl: baseUrlOf(apiUrl),
    apiKey,
    maxAttempts: Number(process.env["MAX_ATTEMPTS"] ?? "8"),
    onRetry: (info) => log({ step: "retry", status: info.status ?? null, retry_after: info.retryAfterSeconds ?? null, pause_ms: info.pauseMs, path: info.path })
  }
  await mkdir(stateDir, { recursive: true })
  const copyFile = join(stateDir, "students.json")
  const checkpointFile = join(stateDir, "checkpoint.json")
  const checkpoint = await readJson<Checkpoint>(checkpointFile)
  const copy = new Map<number, unknown>(
    Object.entries((await readJson<Record<string, unknown>>(copyFile)) ?? {}).map(([id, student]) => [Number(id), student])
  )

  // The start time, taken before the first page (docs/integrators.md "Keeping a copy in sync").
  const startedAt = new Date().toISOString()
  const mode = checkpoint === undefined ? "full" : "incremental"
  const query: Record<string, string> = {}
  if (checkpoint !== undefined) query["updated_since"] = new Date(Date.parse(checkpoint.started_at) - marginMs).toISOString()
  log({ step: "start", mode, started_at: startedAt, updated_since: query["updated_since"] ?? null })

  let fetched = 0
  for await (const page of pages<{ readonly id: number }>(api, "/students", query, perPage)) {
    for (const student of page.data) copy.set(student.id, student)
    fetched += page.data.length
    log({ step: "page", page: page.page, count: page.data.length, starting_after: page.meta.starting_after, has_more: page.meta.has_more })
  }

  await writeJson(copyFile, Object.fromEntries(copy))
  await writeJson(checkpointFile, { started_at: startedAt, mode } satisfies Checkpoint)
  log({ step: "done", mode, fetched, students: copy.size, started_at: startedAt })
}

await main().catch((error: unknown) => {
  log({ step: "failed", error: String(error) })
  process.exit(1)
})
