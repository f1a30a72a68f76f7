/**
 * The `graphile-worker` anchor of the `dispatcher` scenario: the general job queue a team would otherwise pick for
 * webhooks, written the way its documentation suggests: a task list with one
 * task, `run` with a concurrency equal to DISPATCHER_CONCURRENCY, one job per
 * delivery (the harness adds them in bulk with `addJobs`). The task sends the
 * same POST the dispatcher sends: the same body bytes (carried in the job),
 * the same signature headers and HTTP client as the dispatcher
 * (libs/runtime/src/Receiver.ts `postAttempt`, with its bounded keep-alive
 * sockets; the job's numeric delivery id as an opaque `msg_` id, `opaqueId`;
 * the secret decrypted per job as the dispatcher does it). A
 * non-2xx answer throws, so graphile-worker retries it with its own backoff.
 *
 * The subscriptions' secrets are read once at start (a task that looked the
 * subscription up per job would pay a round trip the dispatcher does not:
 * its claim returns the secret with the delivery). Logging: warnings and
 * errors only (graphile-worker's default logs a line per completed job).
 *
 * Says `{ ready: true }` over the Node IPC channel once running; env:
 * DATABASE_URL, BENCH_CONCURRENCY.
 */
import { Logger, run } from "graphile-worker"
import { Duration, ManagedRuntime, Option, Result } from "effect"
import pg from "pg"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import * as Receiver from "../../libs/runtime/src/Receiver.ts"

const connectionString = process.env["DATABASE_URL"] ?? ""
const concurrency = Number(process.env["BENCH_CONCURRENCY"] ?? 32)

/** A job's payload: one delivery. */
export interface DeliverPayload {
  readonly deliveryId: number
  readonly subscriptionId: number
  readonly url: string
  readonly event: string
  readonly body: string
}

const isPayload = (value: unknown): value is DeliverPayload =>
  typeof value === "object" && value !== null &&
  "deliveryId" in value && typeof value.deliveryId === "number" &&
  "subscriptionId" in value && typeof value.subscriptionId === "number" &&
  "url" in value && typeof value.url === "string" &&
  "event" in value && typeof value.event === "string" &&
  "body" in value && typeof value.body === "string"

const keys = WebhookSecret.keyRing(Option.none())
/** The dispatcher's client, with its default time-out. */
const receiver = ManagedRuntime.make(
  Receiver.Receiver.layer({ concurrency, timeout: Duration.seconds(10), allowInsecureUrls: true })
)

/** A job's numeric delivery id as the opaque id receivers see: `msg_` and 32 hex digits. */
export const opaqueId = (deliveryId: number): string => `msg_${deliveryId.toString(16).padStart(32, "0")}`

const loadSecrets = async (): Promise<ReadonlyMap<number, Uint8Array>> => {
  const client = new pg.Client({ connectionString })
  await client.connect()
  try {
    const rows = await client.query<{ id: number; secret_ciphertext: Buffer }>(
      "SELECT id, secret_ciphertext FROM webhook_subscriptions"
    )
    return new Map(rows.rows.map((row) => [row.id, new Uint8Array(row.secret_ciphertext)]))
  } finally {
    await client.end()
  }
}

const quietLogger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") console.error(`[${level}] ${message}`)
})

const main = async () => {
  const secrets = await loadSecrets()
  const runner = await run({
    connectionString,
    concurrency,
    // Its advice at start: a pool smaller than the concurrency "may lead to non-optimal performance".
    maxPoolSize: concurrency,
    logger: quietLogger,
    taskList: {
      deliver: async (payload) => {
        if (!isPayload(payload)) throw new Error("deliver: not a delivery payload")
        const ciphertext = secrets.get(payload.subscriptionId)
        if (ciphertext === undefined) throw new Error(`deliver: no subscription ${payload.subscriptionId}`)
        const secret = WebhookSecret.decrypt(keys, ciphertext)
        if (Result.isFailure(secret)) throw new Error(`deliver: ${secret.failure}`)
        const outcome = await receiver.runPromise(Receiver.postAttempt({
          url: payload.url,
          secret: secret.success,
          deliveryId: opaqueId(payload.deliveryId),
          event: payload.event,
          body: payload.body,
          at: new Date()
        }))
        if (!outcome.ok) throw new Error(`deliver: ${outcome.error ?? outcome.responseCode}`)
      }
    }
  })
  process.send?.({ ready: true })
  await runner.promise
  await receiver.dispose()
}

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
