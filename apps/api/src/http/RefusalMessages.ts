/**
 * The words both APIs say for the same domain refusal
 * (libs/domain/src/DomainErrors.ts): the public API's handlers put them in
 * its rows (libs/domain/src/PublicErrors.ts), the back office's in its own
 * (libs/domain/src/BackOfficeErrors.ts), so one refusal reads the same in
 * both: the back office enrolls and creates leads by the public API's rules
 * (docs/back-office.md "Students and payments", "Leads, funnels and tasks").
 */
import type * as DomainErrors from "@school/domain/DomainErrors"
import { MAIN_FUNNEL } from "@school/domain/Leads"

export const studentNotFound = ({ studentId }: DomainErrors.StudentNotFound): string =>
  `Student ${studentId} not found in this school.`

export const groupNotFound = ({ groupId }: DomainErrors.GroupNotFound): string =>
  `Group ${groupId} not found in this school.`

export const groupFull = ({ groupId }: DomainErrors.GroupFull): string => `Group ${groupId} has no free places.`

export const alreadyEnrolled = ({ groupId, studentId }: DomainErrors.AlreadyEnrolled): string =>
  `Student ${studentId} is already enrolled in group ${groupId}.`

/** A lead's funnel that is not the school's; 0 (the main funnel): the school has none with statuses. */
export const funnelNotFound = (funnelId: number): string =>
  funnelId === MAIN_FUNNEL
    ? "The school has no main funnel with statuses."
    : `Funnel ${funnelId} does not exist in this school.`
