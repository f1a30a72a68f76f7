/**
 * The back office's rows for domain refusals that several of its handlers
 * share (libs/domain/src/DomainErrors.ts → libs/domain/src/BackOfficeErrors.ts;
 * docs/back-office.md "Answers and errors"): a body that names what is not the school's is 422
 * VALIDATION_FAILED, every bad field at once, with the fields in the order
 * of the request's.
 */
import * as Effect from "effect/Effect"
import * as Errors from "@school/domain/BackOfficeErrors"
import type * as DomainErrors from "@school/domain/DomainErrors"
import { funnelNotFound } from "../RefusalMessages.ts"

/** 422 VALIDATION_FAILED with these fields' messages: `Invalid request body: <field>, <field>`. */
export const invalidBody = (fields: Record<string, Array<string>>): Errors.ValidationFailed =>
  new Errors.ValidationFailed({ message: `Invalid request body: ${Object.keys(fields).join(", ")}`, fields })

const entityNames: Record<DomainErrors.ReferencedEntity, string> = {
  filial: "Filial",
  subject: "Subject",
  program: "Program",
  level: "Level",
  employee: "Employee",
  group: "Group",
  student: "Student",
  funnel: "Funnel"
}

const referenceMessage = ({ entity, id }: DomainErrors.MissingReference): string =>
  entity === "funnel" ? funnelNotFound(id) : `${entityNames[entity]} ${id} does not exist in this school.`

/** `ReferencesNotFound` as 422 VALIDATION_FAILED on each field whose reference is not the school's. */
export const referencesNotFound = (error: DomainErrors.ReferencesNotFound): Effect.Effect<never, Errors.ValidationFailed> =>
  Effect.fail(invalidBody(Object.fromEntries(error.references.map((reference) => [reference.field, [referenceMessage(reference)]]))))
