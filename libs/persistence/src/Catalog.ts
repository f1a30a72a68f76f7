/**
 * The school's catalog as the public API reads it: groups (with free places),
 * lessons in a window, filials, subjects, programs, levels.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Schema } from "effect"
import { type Ids, Models, Pagination } from "@school/domain"
import type { LessonWindow } from "@school/domain/LessonWindow"
import * as SqlClient from "effect/sql/SqlClient"
import type { Statement } from "effect/sql"
import { listReader } from "./Paging.ts"
import { named } from "./Spans.ts"

export class Catalog extends Context.Service<Catalog, {
  groups(schoolId: Ids.SchoolId, page: Pagination.ListRequest): Effect.Effect<Pagination.ListResult<Models.Group>>
  lessons(schoolId: Ids.SchoolId, window: LessonWindow, page: Pagination.ListRequest): Effect.Effect<Pagination.ListResult<Models.Lesson>>
  filials(schoolId: Ids.SchoolId, page: Pagination.ListRequest): Effect.Effect<Pagination.ListResult<typeof Models.Filial.Type>>
  subjects(schoolId: Ids.SchoolId, page: Pagination.ListRequest): Effect.Effect<Pagination.ListResult<typeof Models.Subject.Type>>
  programs(schoolId: Ids.SchoolId, page: Pagination.ListRequest): Effect.Effect<Pagination.ListResult<typeof Models.Program.Type>>
  levels(schoolId: Ids.SchoolId, page: Pagination.ListRequest): Effect.Effect<Pagination.ListResult<typeof Models.Level.Type>>
}>()("school/persistence/Catalog") {
  static readonly layer = Layer.effect(
    Catalog,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      /** A whole-table list of one school, ordered by id. */
      const simple = <S extends Schema.Constraint>(
        row: S,
        table: string,
        columns: Statement.Fragment
      ) => {
        const read = listReader(sql, row)
        return (schoolId: Ids.SchoolId, page: Pagination.ListRequest) =>
          read(
            page,
            () => sql`SELECT count(*)::int AS total FROM ${sql(table)} WHERE school_id = ${schoolId}`,
            ({ after, limit, offset }) =>
              sql`SELECT ${columns} FROM ${sql(table)} WHERE school_id = ${schoolId} AND ${after}
                  ORDER BY id LIMIT ${limit} OFFSET ${offset}`
          )
      }

      const readLessons = listReader(sql, Models.Lesson)
      const lessons = (schoolId: Ids.SchoolId, window: LessonWindow, page: Pagination.ListRequest) => {
        const filter = sql`school_id = ${schoolId}
          AND starts_at >= ${window.startsFrom}::timestamptz AND starts_at < ${window.startsBefore}::timestamptz`
        return readLessons(
          page,
          () => sql`SELECT count(*)::int AS total FROM lessons WHERE ${filter}`,
          ({ after, limit, offset }) =>
            sql`SELECT id, group_id, filial_id, teacher_id, api_ts(starts_at) AS starts_at,
                       api_ts(ends_at) AS ends_at, topic
                FROM lessons WHERE ${filter} AND ${after}
                ORDER BY id LIMIT ${limit} OFFSET ${offset}`
        )
      }

      return Catalog.of({
        groups: named(
          "Catalog.groups",
          simple(
            Models.Group,
            "groups",
            sql`id, name, filial_id, subject_id, program_id, level_id, teacher_id, capacity, enrolled_count,
                capacity - enrolled_count AS free_places`
          )
        ),
        lessons: named("Catalog.lessons", lessons),
        filials: named("Catalog.filials", simple(Models.Filial, "filials", sql`id, name, address`)),
        subjects: named("Catalog.subjects", simple(Models.Subject, "subjects", sql`id, name`)),
        programs: named("Catalog.programs", simple(Models.Program, "programs", sql`id, name, subject_id`)),
        levels: named("Catalog.levels", simple(Models.Level, "levels", sql`id, name, program_id`))
      })
    })
  )
}
