/**
 * Every scenario, in the order a default run measures them. A new scenario is
 * a file beside this one exporting a `Scenario`, added to this list
 * (bench/README.md "Adding a scenario"), or to `namedOnly` when it would take
 * the default run past its 5 minutes.
 */
import type { Scenario } from "../lib/Scenario.ts"
import { authFailureFlood } from "./auth-failure-flood.ts"
import { dispatcher } from "./dispatcher.ts"
import { ladder } from "./ladder.ts"
import { middleware } from "./middleware.ts"
import { rateLimitCost, rateLimitFlood } from "./rate-limit.ts"
import { scale } from "./scale.ts"
import { studentCard } from "./student-card.ts"
import { studentsList } from "./students-list.ts"
import { leadWrites } from "./writes.ts"

export const scenarios: ReadonlyArray<Scenario> = [
  studentsList,
  middleware,
  studentCard,
  scale,
  rateLimitCost,
  rateLimitFlood,
  authFailureFlood,
  leadWrites,
  dispatcher
]

/** Scenarios a run measures only when they are named (`npm run bench -- ladder`), never in the default run. */
export const namedOnly: ReadonlyArray<Scenario> = [ladder]
