/**
 * How a dispatcher shares its slots between schools (docs/decisions.md
 * "Fair delivery"): the rule the claim statement applies in SQL
 * (libs/persistence/src/DeliveryQueue.ts `claim`) and the dispatcher applies
 * when a slot frees (apps/dispatcher/src/Slots.ts), written once here as a
 * pure function so the property tests can hold it to its promises.
 *
 * The rule is water-filling with a rotation:
 *
 * - Inside a school, its subscriptions take turns: the k-th candidate of
 *   each subscription comes before the (k+1)-th of any, and among the k-th
 *   the one due first goes first. Inside a subscription candidates go by due
 *   time, so a retry due at T goes before a first attempt created after T.
 *   A subscription gets at most its `room` (the per-subscription cap less
 *   what it already has in flight).
 * - Between schools, the j-th candidate of a school that already `holds` h
 *   has the level h + j; lower levels go first, so a slot goes to the school
 *   that holds the fewest. A school takes nothing past `share`. Among
 *   schools at the same level the order rotates: it starts after the school
 *   served last (`after`), so no school is passed over twice in a row for
 *   the same level.
 * - `share` is the capacity divided between the schools that are active
 *   (`shareOf`): every school with due work or a slot held, plus those seen
 *   active lately; a school alone may take everything but the `reserve`,
 *   a few slots kept for a school that arrives, so it never waits for a
 *   hanging receiver's time-out.
 *
 * The result is max-min fair: while a school with due work gets nothing, no
 * school is given a slot at a level above the one that school would have
 * had.
 */

/** A due delivery, as the rule sees it. */
export interface Candidate {
  readonly id: number
  /** Epoch milliseconds it fell due. */
  readonly dueAt: number
}

export interface SubscriptionBacklog {
  readonly id: number
  /** How many more it may have in flight (per-subscription cap less its live leases); Infinity: no cap. */
  readonly room: number
  /** Its due deliveries, due first first. */
  readonly due: ReadonlyArray<Candidate>
}

export interface SchoolBacklog {
  readonly id: number
  /** Deliveries of the school this dispatcher holds already (claimed, or in flight). */
  readonly holds: number
  readonly subscriptions: ReadonlyArray<SubscriptionBacklog>
}

export interface Round {
  /** How many deliveries this round may take. */
  readonly room: number
  /** The most one school may hold after this round. */
  readonly share: number
  /** The school served last in the previous round (0: none): the rotation starts after it. */
  readonly after: number
  readonly schools: ReadonlyArray<SchoolBacklog>
}

export interface Pick {
  readonly school: number
  readonly subscription: number
  readonly id: number
  /** The school's level of this pick: what it holds with it. */
  readonly level: number
}

/**
 * Slots kept for a school that arrives while another holds everything else:
 * one in eight of the capacity, at least one; none when there is a single
 * slot (docs/decisions.md "Fair delivery").
 */
export const reserveOf = (capacity: number): number => capacity < 2 ? 0 : Math.max(1, Math.ceil(capacity / 8))

/**
 * The most one school may hold when `active` schools share `capacity`:
 * an even part, rounded up, and never the `reserve` (by default the
 * capacity's own, `reserveOf`); at least one.
 */
export const shareOf = (capacity: number, active: number, reserve: number = reserveOf(capacity)): number =>
  Math.max(1, Math.min(capacity - reserve, Math.ceil(capacity / Math.max(1, active))))

/** A school's candidates in its own order (subscriptions take turns), within each subscription's room. */
export const schoolOrder = (school: SchoolBacklog): ReadonlyArray<{ readonly subscription: number; readonly candidate: Candidate }> => {
  const ranked: Array<{ readonly subscription: number; readonly candidate: Candidate; readonly turn: number }> = []
  for (const subscription of school.subscriptions) {
    const take = Math.max(0, Math.min(subscription.room, subscription.due.length))
    for (let turn = 0; turn < take; turn++) {
      const candidate = subscription.due[turn]
      if (candidate !== undefined) ranked.push({ subscription: subscription.id, candidate, turn })
    }
  }
  ranked.sort((a, b) => a.turn - b.turn || a.candidate.dueAt - b.candidate.dueAt || a.candidate.id - b.candidate.id)
  return ranked
}

/** Where `school` stands in the rotation that starts after `after`. */
const rotation = (school: number, after: number): readonly [number, number] => [school <= after ? 1 : 0, school]

/** The deliveries one round takes, in the order they are taken. */
export const allocate = (round: Round): ReadonlyArray<Pick> => {
  const offers: Array<Pick & { readonly dueAt: number }> = []
  for (const school of round.schools) {
    const order = schoolOrder(school)
    for (let j = 0; j < order.length; j++) {
      const level = school.holds + j + 1
      if (level > round.share) break
      const entry = order[j]
      if (entry === undefined) break
      offers.push({ school: school.id, subscription: entry.subscription, id: entry.candidate.id, level, dueAt: entry.candidate.dueAt })
    }
  }
  offers.sort((a, b) => {
    if (a.level !== b.level) return a.level - b.level
    const [ra, sa] = rotation(a.school, round.after)
    const [rb, sb] = rotation(b.school, round.after)
    return ra - rb || sa - sb
  })
  return offers.slice(0, Math.max(0, round.room)).map(({ id, level, school, subscription }) => ({ school, subscription, id, level }))
}
