/**
 * The claim statement applies the fair share (libs/persistence/src/
 * DeliveryQueue.ts `claim` against libs/domain/src/FairShare.ts;
 * docs/decisions.md "Fair delivery"): for random backlogs across schools and
 * subscriptions, live leases that shrink a subscription's room, what the
 * dispatcher holds per school, the rotation pointer and the room, the
 * deliveries one real claim takes are exactly those `allocate` picks with
 * `shareOf` over the schools that have due work. Due times are distinct, so
 * the order is fully determined.
 */
import { assert, layer } from "@effect/vitest"
import * as FairShare from "@school/domain/FairShare"
import { DeliveryQueue } from "@school/persistence/DeliveryQueue"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { TestDatabase } from "../support/TestDatabase.ts"
import * as T from "./support.ts"

const Env = DeliveryQueue.layer.pipe(Layer.provideMerge(TestDatabase.layer))
const SCHOOLS = 4
const SUBSCRIPTIONS = 3
const PER_SUBSCRIPTION = 3

const Small = (max: number) => Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: max }))
const SubscriptionState = Schema.Struct({ leased: Small(PER_SUBSCRIPTION + 1), due: Small(6) })
const SchoolState = Schema.Struct({
  holds: Small(6),
  subscriptions: Schema.Array(SubscriptionState).check(Schema.isMinLength(SUBSCRIPTIONS), Schema.isMaxLength(SUBSCRIPTIONS))
})
const State = Schema.Array(SchoolState).check(Schema.isMinLength(SCHOOLS), Schema.isMaxLength(SCHOOLS))

interface School {
  readonly id: number
  readonly subscriptions: ReadonlyArray<number>
}

/** The schools and subscriptions every run reuses (made by the first run). */
let made: ReadonlyArray<School> | undefined
const schoolsOnce = Effect.gen(function*() {
  if (made !== undefined) return made
  const schools: Array<School> = []
  for (let s = 0; s < SCHOOLS; s++) {
    const { schoolId } = yield* T.school(`Fair school ${s}`)
    const subscriptions: Array<number> = []
    for (let k = 0; k < SUBSCRIPTIONS; k++) {
      subscriptions.push((yield* T.subscription(schoolId, `http://127.0.0.1:9/${s}/${k}`, ["lead.created"])).id)
    }
    schools.push({ id: schoolId, subscriptions })
  }
  made = schools
  return schools
})

layer(Env, { excludeTestServices: true })("the claim's fair share", (it) => {
  it.effect.prop(
    "one claim takes exactly what FairShare.allocate picks",
    { state: State, room: Small(30), after: Small(SCHOOLS) },
    ({ after: afterIndex, room, state }) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const queue = yield* DeliveryQueue
        const schools = yield* schoolsOnce
        const ids = schools.map((school) => school.id)
        yield* sql`DELETE FROM webhook_deliveries WHERE school_id IN ${sql.in(ids)}`
        yield* sql`DELETE FROM outbox_events WHERE school_id IN ${sql.in(ids)}`
        const backlog: Array<FairShare.SchoolBacklog> = []
        let tick = 0
        for (let s = 0; s < SCHOOLS; s++) {
          const school = schools[s]
          const wanted = state[s]
          if (school === undefined || wanted === undefined) continue
          const subscriptions: Array<FairShare.SubscriptionBacklog> = []
          for (let k = 0; k < SUBSCRIPTIONS; k++) {
            const subscription = school.subscriptions[k] ?? 0
            const { due, leased } = wanted.subscriptions[k] ?? { due: 0, leased: 0 }
            const candidates: Array<FairShare.Candidate> = []
            // Leased deliveries (another dispatcher's attempts in flight), then due ones, each due at a distinct time.
            for (let i = 0; i < leased + due; i++) {
              const [event] = yield* sql<{ id: string }>`
                INSERT INTO outbox_events (school_id, event, payload, fanned_out_at)
                VALUES (${school.id}, 'lead.created', '{}'::json, now()) RETURNING id::text AS id`
              const dueAt = ++tick
              const [row] = yield* sql<{ id: number }>`
                INSERT INTO webhook_deliveries (school_id, subscription_id, event_id, event, next_attempt_at, lease_until)
                VALUES (${school.id}, ${subscription}, ${event?.id ?? "0"}::int8, 'lead.created',
                        now() - interval '1 hour' + ${dueAt} * interval '1 second',
                        ${i < leased ? sql`now() + interval '1 minute'` : sql`NULL`})
                RETURNING id::float8 AS id`
              if (i >= leased) candidates.push({ id: row?.id ?? 0, dueAt })
            }
            subscriptions.push({ id: subscription, room: Math.max(0, PER_SUBSCRIPTION - leased), due: candidates })
          }
          backlog.push({ id: school.id, holds: wanted.holds, subscriptions })
        }
        const active = backlog.filter((school) => school.subscriptions.some((sub) => sub.room > 0 && sub.due.length > 0)).length
        const capacity = 16
        const after = afterIndex === 0 ? 0 : (ids[afterIndex - 1] ?? 0)
        const expected = FairShare.allocate({
          room,
          share: FairShare.shareOf(capacity, active),
          after,
          schools: backlog
        })
        const claimed = yield* queue.claim({
          limit: room,
          perSubscription: PER_SUBSCRIPTION,
          leaseMs: 60_000,
          capacity,
          reserve: FairShare.reserveOf(capacity),
          active: [],
          holding: backlog.filter((school) => school.holds > 0).map((school) => ({ school: school.id, holds: school.holds })),
          after
        })
        assert.deepStrictEqual(
          claimed.map((row) => row.id).sort((a, b) => a - b),
          expected.map((pick) => pick.id).sort((a, b) => a - b),
          JSON.stringify({ room, after, state })
        )
        const levels = new Map(expected.map((pick) => [pick.id, pick.level]))
        for (const row of claimed) assert.strictEqual(row.level, levels.get(row.id))
      }).pipe(Effect.orDie),
    { timeout: 120_000, arbitrary: { runs: 25 } }
  )
})
