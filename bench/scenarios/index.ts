/**
 * Every scenario, in the order a default run measures them. A new scenario is
 * a file beside this one exporting a `Scenario`, added to this list
 * (bench/README.md "Adding a scenario").
 */
import type { Scenario } from "../lib/Scenario.ts"
import { authFailureFlood } from "./auth-failure-flood.ts"
import { dispatcher } from "./dispatcher.ts"
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
