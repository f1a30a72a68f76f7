/**
 * The public API's writes: POST /leads on the 10 000-student school,
 * two targets on one API process:
 *
 * - `fresh`: a new Idempotency-Key on every request, so every request claims
 *   the key, creates a lead and its lead.created outbox row, and stores the
 *   response, all in one transaction (the full write path);
 * - `replay`: Idempotency-Keys whose first execution is already stored, so
 *   every request is answered from the stored bytes (`Idempotent-Replayed:
 *   true`) without running the operation.
 *
 * Printed: throughput, p50/p99 and round trips per request of each. The
 * goals are the statement budgets of the design, as pg_stat_statements
 * counts them (it does not count BEGIN and COMMIT): a fresh write is the
 * authenticating statement (with the rate limit), the claim, the operation
 * (lead and event in one statement) and the stored response, 4, plus BEGIN
 * and COMMIT; a replay is the authenticating statement and the claim that
 * finds the stored response, 2. The bench's PostgreSQL runs without fsync,
 * so the WAL flush of a write's commit does not show here.
 */
import { Effect } from "effect"
import { ApiKey } from "@school/domain"
import { randomBytes } from "node:crypto"
import { benchError } from "../lib/Processes.ts"
import { figuresOf, httpTarget, ratio, type Scenario, type ScenarioContext, times } from "../lib/Scenario.ts"

const PATH = "/api/public/v1/leads"
const BODY = JSON.stringify({ phone: "+7 (999) 123-45-67", name: "Bench lead", source: "bench" })
/** Write keys, taken in turn: each stays far under its budget (pro: 600 per 60 s) at any realistic rate. */
const WRITE_KEYS = 2048
/** Stored responses the replay target cycles through. */
const REPLAY_KEYS = 256

/** Write-scope API keys for the school, in one statement. */
const issueWriteKeys = (context: ScenarioContext, schoolId: number, count: number) =>
  Effect.gen(function*() {
    const keys = Array.from({ length: count }, () => ApiKey.generateApiKey((n) => randomBytes(n)))
    const prefixes = keys.map((key) => key.prefix).join(",")
    const hashes = keys.map((key) => Buffer.from(ApiKey.hashSecret(key.secret)).toString("hex")).join(",")
    yield* context.db.sql`
      WITH k AS (
        INSERT INTO api_keys (school_id, name, prefix, secret_hash, scope)
        SELECT ${schoolId}, 'bench write ' || prefix, prefix, decode(hash, 'hex'), 'write'
        FROM unnest(string_to_array(${prefixes}, ','), string_to_array(${hashes}, ',')) AS t(prefix, hash)
        RETURNING school_id, prefix
      )
      INSERT INTO api_key_prefixes (prefix, school_id) SELECT prefix, school_id FROM k`.pipe(
      Effect.mapError((error) => benchError(`issuing write keys failed: ${String(error)}`))
    )
    return keys.map(ApiKey.formatApiKey)
  })

/** The main funnel every school has (docs/operations.md "schools create"); the data sets are loaded without one. */
const ensureMainFunnel = (context: ScenarioContext, schoolId: number) =>
  context.db.sql`
    WITH f AS (
      INSERT INTO funnels (school_id, name, is_main)
      SELECT ${schoolId}, 'Main funnel', true
      WHERE NOT EXISTS (SELECT 1 FROM funnels WHERE school_id = ${schoolId} AND is_main)
      RETURNING school_id, id
    )
    INSERT INTO pipeline_statuses (school_id, funnel_id, name, priority)
    SELECT f.school_id, f.id, s.name, s.priority
    FROM f, (VALUES ('Incoming', 10), ('In progress', 20), ('Won', 30), ('Lost', 40)) AS s (name, priority)`.pipe(
    Effect.mapError((error) => benchError(`creating the main funnel failed: ${String(error)}`))
  )

/** One POST; the scenario's own preflight (the harness's expects 200, a write answers 201). */
const post = (baseUrl: string, apiKey: string, idempotencyKey: string) =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(baseUrl + PATH, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", "idempotency-key": idempotencyKey },
        body: BODY
      })
      return { status: response.status, body: await response.text() }
    },
    catch: (error) => benchError(`POST ${PATH} did not answer: ${String(error)}`)
  })

export const leadWrites: Scenario = {
  id: "lead-writes",
  title: "POST /leads: fresh Idempotency-Key vs replayed",
  datasets: ["10k"],
  sameBody: false,
  setup: (context) =>
    Effect.gen(function*() {
      const data = context.dataset("10k")
      const { connections } = context.settings
      yield* ensureMainFunnel(context, data.schoolId)
      const keys = yield* issueWriteKeys(context, data.schoolId, WRITE_KEYS)
      const api = yield* context.start.api()

      // Keys unique to this process and run, so no request of `fresh` ever replays.
      const run = randomBytes(6).toString("hex")
      let fresh = 0
      const replayKeys = Array.from({ length: REPLAY_KEYS }, (_, i) => `bench-replay-${run}-${i}`)
      for (const [i, key] of replayKeys.entries()) {
        const first = yield* post(api.baseUrl, keys[i % keys.length]!, key)
        if (first.status !== 201) {
          return yield* benchError(`POST ${PATH} answered ${first.status}, not 201: ${first.body.slice(0, 300)}`)
        }
      }
      const replayed = yield* post(api.baseUrl, keys[0]!, replayKeys[0]!)
      if (replayed.status !== 201) return yield* benchError(`a replay answered ${replayed.status}: ${replayed.body}`)

      const base = { paths: [PATH], keys, method: "POST" as const, body: BODY }
      const freshTarget = httpTarget({
        id: "fresh",
        label: "POST /leads, fresh key",
        server: api,
        load: { ...base, headers: () => ({ "idempotency-key": `bench-fresh-${run}-${fresh++}` }) },
        connections,
        api: true
      })
      const replayTarget = httpTarget({
        id: "replay",
        label: "POST /leads, replayed",
        server: api,
        load: { ...base, headers: (i) => ({ "idempotency-key": replayKeys[i % replayKeys.length]! }) },
        connections
      })
      // Checked above with the right status; the harness's preflight expects 200.
      return [{ ...freshTarget, probe: undefined }, { ...replayTarget, probe: undefined }]
    }),
  ratios: [["replay", "fresh"]],
  goals: (figures) => {
    const fresh = figuresOf(figures, "fresh")
    const replay = figuresOf(figures, "replay")
    return [
      {
        goal: "a fresh write: ≤ 4 statements (auth+limit, claim, operation, stored response) + BEGIN/COMMIT",
        measured: `${fresh.roundTrips ?? "n/a"} per request, ${Math.round(fresh.rps)} req/s, p50 ${fresh.p50} ms, p99 ${fresh.p99} ms`,
        pass: fresh.roundTrips !== undefined && fresh.roundTrips <= 4
      },
      {
        goal: "a replay: ≤ 2 statements (auth+limit, the claim finding the stored response)",
        measured: `${replay.roundTrips ?? "n/a"} per request, ${Math.round(replay.rps)} req/s, p50 ${replay.p50} ms, p99 ${replay.p99} ms`,
        pass: replay.roundTrips !== undefined && replay.roundTrips <= 2
      },
      {
        goal: "a replay is cheaper than a fresh write",
        measured: `${times(ratio(replay.rps, fresh.rps))} the throughput`,
        pass: replay.rps > fresh.rps
      }
    ]
  }
}
