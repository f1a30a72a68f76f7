/**
 * The `bare-loop` anchor of the `dispatcher` scenario: the floor of webhook delivery on this machine. It claims with
 * the dispatcher's own claim statement (libs/persistence/src/DeliveryQueue.ts
 * `claim`, same driver, same pool size, same batch and caps), signs and
 * POSTs each stored body with the dispatcher's receiver client
 * (libs/runtime/src/Receiver.ts `postAttempt`: same sockets bound, same
 * time-out, the delivery's opaque id as `webhook-id`), keeping
 * DISPATCHER_CONCURRENCY attempts in flight, and marks the deliveries
 * `delivered` in batches. Nothing else: no fan-out (the harness loads
 * deliveries with their bodies), no journal, no retry plan, no LISTEN (it
 * polls every 5 ms when the claim finds nothing).
 *
 * Says `{ ready: true }` over the Node IPC channel once connected; env:
 * DATABASE_URL, BENCH_CONCURRENCY, BENCH_PER_SUBSCRIPTION, BENCH_LEASE_MS.
 */
import { Duration, Effect, Layer, ManagedRuntime, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as FairShare from "@school/domain/FairShare"
import * as WebhookSecret from "@school/domain/WebhookSecret"
import { type Claimed, DeliveryQueue } from "@school/persistence/DeliveryQueue"
import * as Sql from "@school/persistence/Sql"
import * as Receiver from "../../libs/runtime/src/Receiver.ts"

const concurrency = Number(process.env["BENCH_CONCURRENCY"] ?? 32)
const perSubscription = Number(process.env["BENCH_PER_SUBSCRIPTION"] ?? 4)
const leaseMs = Number(process.env["BENCH_LEASE_MS"] ?? 15_000)
/** The dispatcher's claim batch. */
const CLAIM_BATCH = 100

const runtime = ManagedRuntime.make(
  DeliveryQueue.layer.pipe(
    Layer.provideMerge(
      // The dispatcher's pool size.
      Sql.layer({ url: process.env["DATABASE_URL"] ?? "", maxConnections: 6, applicationName: "school-bench-bare-loop" })
    ),
    // The dispatcher's client, with its default time-out; closing the runtime closes its sockets.
    Layer.merge(Receiver.Receiver.layer({ concurrency, timeout: Duration.seconds(10), allowInsecureUrls: true }))
  )
)

const keys = WebhookSecret.keyRing(Option.none())

const claim = (limit: number) =>
  runtime.runPromise(Effect.gen(function*() {
    const queue = yield* DeliveryQueue
    // The dispatcher's claim round as the dispatcher makes it with nothing held (apps/dispatcher/src/Claimer.ts).
    return yield* queue.claim({
      limit,
      perSubscription,
      leaseMs,
      capacity: concurrency * 2,
      reserve: FairShare.reserveOf(concurrency),
      active: [],
      holding: [],
      after: 0
    })
  }))

const markDelivered = (done: ReadonlyArray<Claimed>) =>
  runtime.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
      UPDATE webhook_deliveries d
      SET status = 'delivered', attempts = 1, lease_until = NULL, finished_at = now(), last_attempt_at = now()
      FROM unnest(${done.map((c) => c.school_id)}::int[], ${done.map((c) => c.id)}::int8[]) AS r(school_id, id)
      WHERE d.school_id = r.school_id AND d.id = r.id`
  }))

let inFlight = 0
let wakeClaimer: (() => void) | undefined
const toMark: Array<Claimed> = []
let marking = false

const wake = () => {
  const resume = wakeClaimer
  wakeClaimer = undefined
  resume?.()
}

const mark = () => {
  if (marking || toMark.length === 0) return
  marking = true
  const batch = toMark.splice(0, toMark.length)
  markDelivered(batch).then(
    () => {
      marking = false
      mark()
    },
    (error: unknown) => {
      console.error(error)
      toMark.push(...batch)
      marking = false
      setTimeout(mark, 10)
    }
  )
}

const send = async (delivery: Claimed) => {
  const secret = WebhookSecret.decrypt(keys, delivery.secret_ciphertext)
  if (Result.isFailure(secret)) throw new Error(secret.failure)
  const outcome = await runtime.runPromise(Receiver.postAttempt({
    url: delivery.url,
    secret: secret.success,
    deliveryId: delivery.public_id,
    event: delivery.event,
    body: delivery.body,
    at: new Date()
  }))
  if (outcome.ok) {
    toMark.push(delivery)
    mark()
  }
}

const loop = async () => {
  for (;;) {
    const free = concurrency - inFlight
    if (free <= 0) {
      await new Promise<void>((resolve) => {
        wakeClaimer = resolve
      })
      continue
    }
    // The harness cancels statements left running between rounds (57014): try again.
    const claimed = await claim(Math.min(free, CLAIM_BATCH)).catch((error: unknown) => {
      console.error(error)
      return []
    })
    for (const delivery of claimed) {
      inFlight++
      send(delivery).then(
        () => {
          inFlight--
          wake()
        },
        (error: unknown) => {
          console.error(error)
          process.exit(1)
        }
      )
    }
    if (claimed.length === 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5)
        wakeClaimer = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  }
}

const shutdown = () => {
  void runtime.dispose().then(() => process.exit(0))
}
process.once("SIGTERM", shutdown)
process.once("SIGINT", shutdown)

claim(0).then(() => {
  process.send?.({ ready: true })
  return loop()
}).catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
