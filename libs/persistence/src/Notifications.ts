/**
 * PostgreSQL's notifications as Effect Streams, so no app touches the
 * driver (docs/development.md "libs/persistence"). Each stream starts
 * with its `LISTEN`, which holds one connection for as long as the scope
 * that started it.
 *
 * `rateLimitInvalidations`: the triggers of migration 0200 notify
 * `rate_limit_invalidate` with the school's id whenever a change can shrink
 * a budget a process has computed (a plan change; a key revoked, expired or
 * deleted); the API's rate limiter drops that school's local blocks.
 */
import { PgClient } from "@effect/sql-pg"
import type { Scope } from "effect"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { SqlError } from "effect/sql"
import { Ids } from "@school/domain"

const RATE_LIMIT_INVALIDATE = "rate_limit_invalidate"

/** The payload: the school's id as text. */
const decodeSchoolId = Schema.decodeUnknownEffect(Schema.NumberFromString.pipe(Schema.decodeTo(Ids.SchoolId)))

export class Notifications extends Context.Service<Notifications, {
  /**
   * Succeeds once PostgreSQL has confirmed the `LISTEN`, with the ids of the
   * schools notified from then on. Never succeeds where the client cannot
   * listen (a `SqlClient` that is not a `PgClient`): nothing is ever heard.
   */
  readonly rateLimitInvalidations: Effect.Effect<Stream.Stream<Ids.SchoolId, SqlError.SqlError>, SqlError.SqlError, Scope.Scope>
}>()("school/persistence/Notifications") {
  static readonly layer = Layer.effect(
    Notifications,
    Effect.gen(function*() {
      const pg = yield* Effect.serviceOption(PgClient.PgClient)
      const listen = (channel: string) =>
        Option.match(pg, {
          onNone: () => Effect.never,
          onSome: (client) => Effect.map(client.listen(channel), Stream.fromQueue)
        })
      return Notifications.of({
        rateLimitInvalidations: Effect.map(
          listen(RATE_LIMIT_INVALIDATE),
          // A payload that is not a school id is a bug of the trigger: a defect, not a skipped invalidation.
          Stream.mapEffect((notification) => Effect.orDie(decodeSchoolId(notification.payload)))
        )
      })
    })
  )
}
