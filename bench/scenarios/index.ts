/**
 * Every scenario, in the order a run measures them. A new scenario is a file
 * beside this one exporting a `Scenario`, added to `scenarios` (the default
 * run, which must stay within its 5 minutes: bench/README.md "Adding a
 * scenario") or to `fullOnly` (measured by `--full`, or when named).
 */
import type { Scenario } from "../lib/Scenario.ts"
import { authFailureFlood } from "./auth-failure-flood.ts"
import { dispatcher } from "./dispatcher.ts"
import { journalScale } from "./journal-scale.ts"
import { ladder } from "./ladder.ts"
import { middleware } from "./middleware.ts"
import { rateLimitCost, rateLimitFlood } from "./rate-limit.ts"
import { scale } from "./scale.ts"
import { studentCard } from "./student-card.ts"
import { studentsList } from "./students-list.ts"
import { sustainedDispatch } from "./sustained-dispatch.ts"
import { leadWrites } from "./writes.ts"

/** The default run (`npm run bench`): the scenarios of this round's goals, within 300 s on two cores. */
export const scenarios: ReadonlyArray<Scenario> = [
  studentsList,
  middleware,
  studentCard,
  authFailureFlood,
  dispatcher
]

/**
 * Measured by `npm run bench -- --full` (after the default run's, in this
 * order) or when named; never in the default run, which they would take past
 * its 5 minutes. `journal-scale` comes last: it leaves the most data behind.
 */
export const fullOnly: ReadonlyArray<Scenario> = [
  scale,
  rateLimitCost,
  rateLimitFlood,
  leadWrites,
  sustainedDispatch,
  ladder,
  journalScale
]
