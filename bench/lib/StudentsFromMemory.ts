/**
 * The students repository of the benchmark's servers whose list route must do
 * no database work (servers/full-middleware.ts, the ladder's `handler` rung):
 * the real repository for everything but the list, which answers the first
 * page of BENCH_SCHOOL_ID's students, read once at start.
 */
import { Effect, Layer } from "effect"
import * as Ids from "@school/domain/Ids"
import { Students } from "@school/persistence/Students"

export const StudentsFromMemory = Layer.effect(
  Students,
  Effect.gen(function*() {
    const real = yield* Students
    const schoolId = Ids.SchoolId.make(Number(process.env["BENCH_SCHOOL_ID"]))
    const page = yield* real.list(schoolId, { page: { page: 1, perPage: 20 } })
    return Students.of({ list: () => Effect.succeed(page), get: real.get })
  })
).pipe(Layer.provide(Students.layer))
