/**
 * Handlers of the back office's staff and API keys
 * (libs/domain/src/api/backoffice/Staff.ts; docs/back-office.md
 * "Staff", "API keys"): full access (checked before decoding by the
 * shared `RoleCheck`), then one repository call per request. Who may change
 * or end the sessions of whom is the repository's check (`mayChangeEmployee`),
 * its refusals mapped here: 404 NOT_FOUND, 403 FORBIDDEN. A key is issued
 * through `issueApiKeyOnPlan`, the plan rule the operator CLI applies too.
 * `StaffRepositories` names the persistence services they need; Server.ts
 * provides them with the rest.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { expiryProblem } from "@school/domain/ApiKey"
import * as Errors from "@school/domain/BackOfficeErrors"
import { BackOfficeApi } from "@school/domain/api/BackOfficeApi"
import { CurrentEmployee } from "@school/domain/api/BackOfficeMiddleware"
import type { EmployeeChangeRefused } from "@school/domain/DomainErrors"
import * as Pagination from "@school/domain/Pagination"
import { ApiKeys } from "@school/persistence/ApiKeys"
import { Employees } from "@school/persistence/Employees"
import { issueApiKeyOnPlan } from "@school/persistence/Schools"
import { keysNeedPlanMessage } from "@school/domain/Plans"
import { hashPassword } from "@school/runtime/Passwords"
import * as SqlClient from "effect/sql/SqlClient"
import { RateLimiter } from "../../RateLimiter.ts"

/** docs/back-office.md "Staff": an employee not of the caller's school is 404; one the caller may not change, 403. */
const employeeRefusal = (refused: EmployeeChangeRefused): Effect.Effect<never, Errors.NotFound | Errors.Forbidden> => {
  const reason = refused.reason
  switch (reason._tag) {
    case "EmployeeNotFound":
      return Effect.fail(new Errors.NotFound({ message: `Employee ${reason.employeeId} does not exist.` }))
    case "EmployeeChangeForbidden":
      return Effect.fail(
        new Errors.Forbidden({
          message: reason.targetRole === "owner"
            ? "Nobody may change the owner."
            : `The ${reason.actorRole} role may not change this ${reason.targetRole}.`
        })
      )
  }
}

export const StaffRepositories = Layer.mergeAll(Employees.layer, ApiKeys.layer)

const EmployeesGroupLive = HttpApiBuilder.group(
  BackOfficeApi,
  "employees",
  Effect.fnUntraced(function*(handlers) {
    const employees = yield* Employees
    return handlers
      .handle("create", Effect.fn("BackOfficeApi.employees.create")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        // The password is stored hashed (libs/runtime/src/Passwords.ts).
        const { password, ...employee } = payload
        const passwordHash = yield* hashPassword(password)
        const created = yield* employees.create(schoolId, { ...employee, passwordHash }).pipe(
          Effect.catchTag("EmailTaken", (taken) =>
            Effect.fail(
              new Errors.Conflict({
                message: `The login e-mail ${taken.email} is already taken.`,
                fields: { email: ["This e-mail is already someone's login e-mail"] }
              })
            ))
        )
        return created
      }))
      .handle("list", Effect.fn("BackOfficeApi.employees.list")(function*({ query }) {
        const { schoolId } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const result = yield* employees.list(schoolId, page)
        return { data: result.items, meta: Pagination.meta(page, result.total) }
      }))
      .handle("update", Effect.fn("BackOfficeApi.employees.update")(function*({ params, payload }) {
        const { employee, schoolId } = yield* CurrentEmployee
        // Disabling ends the employee's sessions in the same commit; every call
        // looks its session up in the database (apps/api/src/BackOfficeAuth.ts).
        return yield* employees.update(schoolId, employee, params.id, payload)
      }, Effect.catchTag("EmployeeChangeRefused", employeeRefusal)))
      .handle("endSessions", Effect.fn("BackOfficeApi.employees.endSessions")(function*({ params }) {
        const { employee, schoolId } = yield* CurrentEmployee
        const ended = yield* employees.endSessions(schoolId, employee, params.id)
        return { ended }
      }, Effect.catchTag("EmployeeChangeRefused", employeeRefusal)))
  })
)

const ApiKeysGroupLive = HttpApiBuilder.group(
  BackOfficeApi,
  "apiKeys",
  Effect.fnUntraced(function*(handlers) {
    const keys = yield* ApiKeys
    const limiter = yield* RateLimiter
    const sql = yield* SqlClient.SqlClient
    return handlers
      .handle("create", Effect.fn("BackOfficeApi.apiKeys.create")(function*({ payload }) {
        const { schoolId } = yield* CurrentEmployee
        const expiresAt = payload.expires_at ?? null
        if (expiresAt !== null) {
          const problem = expiryProblem(expiresAt, yield* Clock.currentTimeMillis)
          if (problem !== undefined) {
            return yield* new Errors.ValidationFailed({
              message: "Invalid request body: expires_at",
              fields: { expires_at: [problem] }
            })
          }
        }
        const issued = yield* issueApiKeyOnPlan(schoolId, { name: payload.name, scope: payload.scope, expiresAt }).pipe(
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.catchTags({
            PlanTooLow: (refused) => Effect.fail(new Errors.TariffTooLow({ message: keysNeedPlanMessage(refused.plan) })),
            // The caller's own school exists as long as their session does.
            SchoolNotFound: Effect.die
          })
        )
        return issued
      }))
      .handle("list", Effect.fn("BackOfficeApi.apiKeys.list")(function*({ query }) {
        const { schoolId } = yield* CurrentEmployee
        const page = Pagination.pageRequest(query)
        const result = yield* keys.list(schoolId, page)
        return { data: result.items, meta: Pagination.meta(page, result.total) }
      }))
      .handle("revoke", Effect.fn("BackOfficeApi.apiKeys.revoke")(function*({ params }) {
        const { schoolId } = yield* CurrentEmployee
        const revoked = yield* keys.revoke(schoolId, params.id)
        if (Option.isNone(revoked)) {
          return yield* new Errors.NotFound({ message: `API key ${params.id} does not exist.` })
        }
        // Committed: this process forgets its local blocks now; the others on the NOTIFY.
        yield* limiter.forgetSchool(schoolId)
        return revoked.value
      }))
  })
)

export const StaffHandlersNoDeps = Layer.mergeAll(EmployeesGroupLive, ApiKeysGroupLive)
